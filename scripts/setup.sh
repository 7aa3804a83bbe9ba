#!/usr/bin/env bash
# Makes this machine ready to build, test and demo radiald, and builds it. Idempotent: every step
# checks first and does nothing when already done.
#
#   scripts/setup.sh [--preset NAME]      (NAME: a configure preset in CMakePresets.json, default "default")
#
# Steps: install the missing Debian packages, start a Docker Engine if none answers, configure and
# build with CMake, build the local test image. Needs root for the first two steps when there is
# something to install or start.
set -euo pipefail

usage() {
    echo "usage: scripts/setup.sh [--preset NAME]"
}

preset=default
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
    libcli11-dev libsqlite3-dev libgtest-dev libgmock-dev libbenchmark-dev libelf-dev
    busybox-static bubblewrap docker.io curl clang-format ccache libcap2-bin
    systemd # systemd-analyze: the packaged unit's security rating is a test
)
# dockerd must run exactly this way: containers get only `none` or `host` networking, and no
# bridge or iptables rules are made on the host.
dockerd_cmd=(dockerd --bridge=none --iptables=false --ip6tables=false)
dockerd_wait_s=60

step() {
    echo "setup: $*"
}

die() {
    echo "setup: $*" >&2
    exit 1
}

install_packages() {
    local missing=() p
    for p in "${packages[@]}"; do
        if ! dpkg-query -W -f='${Status}' "${p}" 2>/dev/null | grep -q 'ok installed'; then
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

start_docker() {
    if docker_answers; then
        step "[2/4] docker: an engine answers ($(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?'))"
        return
    fi
    ((EUID == 0)) || die "starting dockerd: no Docker Engine answers and not root; run as root (sudo scripts/setup.sh)"
    command -v dockerd >/dev/null 2>&1 || die "starting dockerd: dockerd not found; install Debian's docker.io"

    local log=/var/log/radial-dockerd.log
    if ! { : >>"${log}"; } 2>/dev/null; then
        log=/tmp/radial-dockerd.log
    fi
    # A pid file left by a dockerd that was killed makes a new one refuse to start.
    local pidfile=/var/run/docker.pid
    if [[ -f "${pidfile}" ]]; then
        local old
        old="$(cat "${pidfile}" 2>/dev/null || true)"
        if [[ -z "${old}" ]] || ! kill -0 "${old}" 2>/dev/null; then
            rm -f "${pidfile}"
        fi
    fi

    step "[2/4] docker: starting '${dockerd_cmd[*]}', log in ${log}"
    echo "=== $(date -u +%FT%TZ) setup.sh: ${dockerd_cmd[*]}" >>"${log}"
    setsid nohup "${dockerd_cmd[@]}" >>"${log}" 2>&1 </dev/null &
    local pid=$!

    local start=${SECONDS} waited=0
    until docker_answers; do
        waited=$((SECONDS - start))
        if ! kill -0 "${pid}" 2>/dev/null; then
            echo "setup: dockerd (pid ${pid}) exited; last lines of ${log}:" >&2
            tail -n 30 "${log}" >&2 || true
            die "starting dockerd: it exited before answering; see ${log}"
        fi
        if ((waited >= dockerd_wait_s)); then
            echo "setup: last lines of ${log}:" >&2
            tail -n 30 "${log}" >&2 || true
            die "starting dockerd: no answer to 'docker info' after ${dockerd_wait_s} s (pid ${pid} left running); see ${log}"
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

install_packages
start_docker
build
test_image
step "done (preset '${preset}')"
