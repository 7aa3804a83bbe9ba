#!/usr/bin/env bash
# Makes this machine ready to build, test and demo radiald, and builds it. Idempotent: every step
# checks first and does nothing when already done.
#
#   scripts/setup.sh [--preset NAME] [--with-gvisor]
#
#   --preset NAME   a configure preset in CMakePresets.json, default "default"
#   --with-gvisor   also install gVisor (Debian's runsc) and register it with the engine as the
#                   runtime "runsc" (/etc/docker/daemon.json, merged; a running dockerd is sent
#                   SIGHUP, never restarted), for [run.docker] ociRuntime = "runsc"
#
# Steps: install the missing Debian packages, [--with-gvisor: register runsc with the engine,]
# start a Docker Engine if none answers, configure and build with CMake, build the local test
# image. Needs root for the first steps when there is something to install, write or start.
set -euo pipefail

usage() {
    echo "usage: scripts/setup.sh [--preset NAME] [--with-gvisor]"
}

preset=default
with_gvisor=0
while (($# > 0)); do
    case "$1" in
        --preset)
            [[ $# -ge 2 ]] || { usage >&2; exit 2; }
            preset="$2"
            shift 2
            ;;
        --preset=*)
            preset="${1#--preset=}"
            shift
            ;;
        --with-gvisor)
            with_gvisor=1
            shift
            ;;
        -h | --help)
            usage
            exit 0
            ;;
        *)
            echo "setup: unknown argument '$1'" >&2
            usage >&2
            exit 2
            ;;
    esac
done

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

# Debian 12 package names.
packages=(
    build-essential cmake ninja-build pkg-config
    libboost-dev libboost-filesystem-dev nlohmann-json3-dev libfmt-dev libtomlplusplus-dev
    libcli11-dev prometheus-cpp-dev libsqlite3-dev libgtest-dev libgmock-dev libbenchmark-dev libelf-dev
    busybox-static bubblewrap docker.io curl clang-format ccache lld libcap2-bin
    systemd # systemd-analyze: the packaged unit's security rating is a test
    lintian # the packages as shipped must pass it (packaging/test-installed.sh)
    libssl-dev openssl socat # TLS engines: the client, and the tests' certificates and endpoint
    zsh mksh python3 # the redaction tests run every shell's xtrace and Python's quoting for real
    stress-ng # scripts/test.sh runs the unit tests once beside `stress-ng --cpu 4` (a loaded machine)
)
# --with-gvisor: gVisor's runsc, and jq to merge the engine's daemon.json.
gvisor_packages=(runsc jq)
# How the engine runs runsc (docs/design.md §13.9): no network stack of gVisor's own (boxes get
# `none` networking anyway, docs/design.md §13.1), the ptrace platform, which needs no /dev/kvm, and
# --host-uds=open, without which a box cannot connect to its turn socket (a host unix socket).
gvisor_runtime_name=runsc
gvisor_runtime_json='{"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none", "--platform=ptrace", "--host-uds=open"]}'
daemon_json=/etc/docker/daemon.json
# dockerd must run exactly this way: containers get only `none` or `host` networking, and no
# bridge or iptables rules are made on the host.
dockerd_cmd=(dockerd --bridge=none --iptables=false --ip6tables=false)
dockerd_wait_s=60
# A dockerd that was killed with boxes on it (a machine snapshot, an OOM kill) removes their stale
# network sandboxes before it answers, ~0.2 s each: hundreds take minutes. It is waited for while
# its log keeps growing (no longer than dockerd_wait_s without a new line), up to this in all.
dockerd_start_cap_s=600
dockerd_start_attempts=3
dockerd_log=/var/log/radial-dockerd.log
dockerd_pidfile=/var/run/docker.pid
dockerd_exec_root=/var/run/docker

step() {
    echo "setup: $*"
}

die() {
    echo "setup: $*" >&2
    exit 1
}

install_packages() {
    local missing=() p
    ((with_gvisor)) && packages+=("${gvisor_packages[@]}")
    for p in "${packages[@]}"; do
        if ! dpkg-query -W -f='${Status}' "${p}" 2>/dev/null | grep 'ok installed' >/dev/null; then
            missing+=("${p}")
        fi
    done
    if ((${#missing[@]} == 0)); then
        step "[1/4] packages: all ${#packages[@]} installed"
        return
    fi
    step "[1/4] packages: installing ${missing[*]}"
    ((EUID == 0)) || die "installing packages '${missing[*]}': not root; run as root (sudo scripts/setup.sh)"
    # Keep package scripts from starting services (docker.io would start dockerd with a bridge and
    # iptables rules); this script starts dockerd itself, the way it must run.
    local policy=/usr/sbin/policy-rc.d made_policy=0
    if [[ ! -e "${policy}" ]]; then
        printf '#!/bin/sh\nexit 101\n' >"${policy}"
        chmod 0755 "${policy}"
        made_policy=1
    fi
    local rc=0
    {
        DEBIAN_FRONTEND=noninteractive apt-get update -q &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
    } </dev/null || rc=$?
    ((made_policy)) && rm -f "${policy}"
    ((rc == 0)) || die "installing packages '${missing[*]}': apt-get exited ${rc}"
}

docker_answers() {
    timeout 10 docker info >/dev/null 2>&1
}

engine_lists_runsc() {
    timeout 10 docker info --format '{{json .Runtimes}}' 2>/dev/null |
        jq -e --arg n "${gvisor_runtime_name}" 'has($n)' >/dev/null 2>&1
}

# --with-gvisor: merges the runsc runtime into daemon.json (every other key kept), so a dockerd
# started later reads it, and makes a running dockerd reload it with SIGHUP: the engine re-reads
# `runtimes` on SIGHUP, and other work on it (containers, other engineers' tests) goes on
# undisturbed, which a restart would not allow.
configure_gvisor() {
    ((with_gvisor)) || return 0
    local current='{}' merged changed=0
    if [[ -s "${daemon_json}" ]]; then
        current="$(cat "${daemon_json}")" || die "gvisor: cannot read ${daemon_json}"
    fi
    merged="$(jq --arg n "${gvisor_runtime_name}" --argjson r "${gvisor_runtime_json}" \
        '.runtimes[$n] = $r' <<<"${current}")" ||
        die "gvisor: ${daemon_json} is not a JSON object; fix it, then run setup again"
    if [[ "$(jq -S . <<<"${current}")" == "$(jq -S . <<<"${merged}")" ]]; then
        step "[2/4] gvisor: ${daemon_json} already registers runtime '${gvisor_runtime_name}'"
    else
        ((EUID == 0)) || die "gvisor: writing ${daemon_json}: not root; run as root (sudo scripts/setup.sh --with-gvisor)"
        mkdir -p "$(dirname "${daemon_json}")"
        local tmp="${daemon_json}.radial-setup.$$"
        printf '%s\n' "${merged}" >"${tmp}" && mv -f "${tmp}" "${daemon_json}" ||
            { rm -f "${tmp}"; die "gvisor: cannot write ${daemon_json}"; }
        changed=1
        step "[2/4] gvisor: registered runtime '${gvisor_runtime_name}' in ${daemon_json}"
    fi
    docker_answers || return 0 # start_docker starts one, which reads daemon.json
    if ((!changed)) && engine_lists_runsc; then
        step "[2/4] gvisor: the running engine lists runtime '${gvisor_runtime_name}'"
        return 0
    fi
    local pid
    pid="$(cat "${dockerd_pidfile}" 2>/dev/null || true)"
    [[ -n "${pid}" ]] && kill -0 "${pid}" 2>/dev/null ||
        die "gvisor: the running engine does not list runtime '${gvisor_runtime_name}' and its pid is unknown (no ${dockerd_pidfile}); send its dockerd SIGHUP by hand"
    step "[2/4] gvisor: sending SIGHUP to dockerd (pid ${pid}) to reload ${daemon_json}"
    kill -HUP "${pid}"
    local start=${SECONDS}
    until engine_lists_runsc; do
        ((SECONDS - start < dockerd_wait_s)) ||
            die "gvisor: dockerd (pid ${pid}) still does not list runtime '${gvisor_runtime_name}' ${dockerd_wait_s} s after SIGHUP; see its log"
        sleep 1
    done
    step "[2/4] gvisor: the engine lists runtime '${gvisor_runtime_name}'"
}

start_docker() {
    if docker_answers; then
        step "[2/4] docker: an engine answers ($(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?'))"
        return
    fi
    ((EUID == 0)) || die "starting dockerd: no Docker Engine answers and not root; run as root (sudo scripts/setup.sh)"
    command -v dockerd >/dev/null 2>&1 || die "starting dockerd: dockerd not found; install Debian's docker.io"

    local log=${dockerd_log}
    if ! { : >>"${log}"; } 2>/dev/null; then
        log=/tmp/radial-dockerd.log
    fi
    # A pid file left by a dockerd that was killed makes a new one refuse to start.
    local pidfile=${dockerd_pidfile}
    if [[ -f "${pidfile}" ]]; then
        local old
        old="$(cat "${pidfile}" 2>/dev/null || true)"
        if [[ -z "${old}" ]] || ! kill -0 "${old}" 2>/dev/null; then
            rm -f "${pidfile}"
        fi
    fi

    forget_dead_gvisor_sandboxes

    # Its first start after a kill can fail on what the killed one left: its containerd was seen
    # SIGKILLed while deleting the dead boxes' shims, and dockerd gave up on it after 15 s. Every
    # start removes more of them, so it is started again, up to dockerd_start_attempts in all.
    local attempt
    for ((attempt = 1; attempt <= dockerd_start_attempts; attempt++)); do
        launch_dockerd "${log}" "${attempt}" && return
    done
    die "starting dockerd: it exited before answering ${dockerd_start_attempts} times; see ${log}"
}

# gVisor's state of a box that died with its engine (a machine restart) records its sandbox's pid,
# and the new engine's containerd deletes every dead box at start with `runsc delete --force`,
# which SIGKILLs that pid without asking whose it is now: seen killing containerd itself. A state
# whose sandbox pid is not a live runsc-sandbox (the first word of its command line; its comm is
# "exe", runsc running itself) is removed first; containerd's delete then finds nothing to kill. A
# live sandbox (an engine killed alone) keeps its state, and nothing is touched while a containerd
# of the engine still runs.
forget_dead_gvisor_sandboxes() {
    local state pid argv0 root=${dockerd_exec_root} configured containerd_pid
    if [[ -s "${daemon_json}" ]] && command -v jq >/dev/null 2>&1; then
        configured="$(jq -r '."exec-root" // empty' "${daemon_json}" 2>/dev/null || true)"
        [[ -n "${configured}" ]] && root=${configured}
    fi
    containerd_pid="$(cat "${root}/containerd/containerd.pid" 2>/dev/null || true)"
    if [[ "${containerd_pid}" =~ ^[0-9]+$ ]] && kill -0 "${containerd_pid}" 2>/dev/null; then
        return 0 # its engine's containerd lives: the state is in use, not left
    fi
    for state in "${root}"/runtime-*/moby/*_sandbox:*.state; do
        [[ -f "${state}" ]] || continue
        command -v jq >/dev/null 2>&1 ||
            die "starting dockerd: gVisor state ${state} is left from a killed engine, and jq (to read its pid) is missing; run setup with --with-gvisor, or remove that file"
        pid="$(jq -r '.sandbox.pid // empty' "${state}" 2>/dev/null || true)"
        argv0=""
        [[ "${pid}" =~ ^[0-9]+$ ]] &&
            argv0="$(tr '\0' '\n' <"/proc/${pid}/cmdline" 2>/dev/null | head -n 1 || true)"
        [[ "${argv0}" == runsc-sandbox ]] && continue
        step "[2/4] docker: removing gVisor state of a box that died with its engine (pid ${pid:-unknown} is no longer its sandbox): ${state}"
        rm -f "${state}" "${state%.state}.lock"
    done
}

# Starts dockerd once, logging to $1; returns 1 when it exits before answering, dies when it hangs.
launch_dockerd() {
    local log=$1 attempt=$2
    step "[2/4] docker: starting '${dockerd_cmd[*]}' (attempt ${attempt} of ${dockerd_start_attempts}), log in ${log}"
    echo "=== $(date -u +%FT%TZ) setup.sh: ${dockerd_cmd[*]}" >>"${log}"
    setsid nohup "${dockerd_cmd[@]}" >>"${log}" 2>&1 </dev/null &
    local pid=$!

    local start=${SECONDS} waited=0 log_size last_growth=${SECONDS} said_cleanup=0
    log_size=$(stat -c %s "${log}")
    until docker_answers; do
        waited=$((SECONDS - start))
        if ! kill -0 "${pid}" 2>/dev/null; then
            echo "setup: dockerd (pid ${pid}) exited before answering; last lines of ${log}:" >&2
            tail -n 30 "${log}" >&2 || true
            return 1
        fi
        local size
        size=$(stat -c %s "${log}")
        if ((size != log_size)); then
            log_size=${size}
            last_growth=${SECONDS}
        fi
        if ((!said_cleanup)) && tail -n 5 "${log}" | grep -q 'Removing stale sandbox'; then
            step "[2/4] docker: dockerd is removing network sandboxes left by a dockerd that was killed; waiting while it makes progress (up to ${dockerd_start_cap_s} s)"
            said_cleanup=1
        fi
        if ((SECONDS - last_growth >= dockerd_wait_s || waited >= dockerd_start_cap_s)); then
            echo "setup: last lines of ${log}:" >&2
            tail -n 30 "${log}" >&2 || true
            die "starting dockerd: no answer to 'docker info' after ${waited} s, the last $((SECONDS - last_growth)) s without a new line in its log (pid ${pid} left running); see ${log}"
        fi
        sleep 1
    done
    waited=$((SECONDS - start))
    step "[2/4] docker: dockerd (pid ${pid}) answers after ${waited} s"
}

build() {
    # ccache (CMakeLists.txt uses it when present) keyed on paths relative to this checkout, so
    # another checkout of the same sources — CI's fresh clone — reuses what was compiled here.
    export CCACHE_BASEDIR="${PWD}" CCACHE_NOHASHDIR=1
    step "[3/4] cmake: configure preset '${preset}'"
    cmake --preset "${preset}"
    step "[3/4] cmake: build preset '${preset}' (-j2)"
    cmake --build --preset "${preset}" -j2
}

test_image() {
    step "[4/4] test image: packaging/build-test-image.sh"
    packaging/build-test-image.sh
}

# Sourced (tests/scripts/setup_start_docker_test.sh), it only defines its functions.
[[ "${BASH_SOURCE[0]}" == "${0}" ]] || return 0
install_packages
configure_gvisor
start_docker
build
test_image
step "done (preset '${preset}')"
