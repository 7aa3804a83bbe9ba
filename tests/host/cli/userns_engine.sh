#!/usr/bin/env bash
# A Docker Engine of its own with user-namespace remapping (dockerd --userns-remap=default), for
# the tests of boxes that are root only in their own namespace (docs/design.md §8.8). It runs in
# this network namespace beside the machine's engine, with its own --data-root, --exec-root,
# --pidfile, unix socket and an empty config file under DIR; the machine's engine, its containers
# and /etc/docker/daemon.json are never touched. Networking as the machine's: --bridge=none
# --iptables=false --ip6tables=false. dockerd makes the `dockremap` user and its /etc/subuid and
# /etc/subgid ranges the first time (on this machine kind: 100000-165535).
#
#   userns_engine.sh start DIR IMAGE   DIR must be a fresh, empty directory. Starts the engine,
#                                      loads IMAGE from the machine's engine (`docker save | load`,
#                                      so it has the same id) and writes DIR/engine.sock (its
#                                      address, unix://...). On failure it stops what it started.
#   userns_engine.sh stop DIR          Stops the engine (SIGTERM, SIGKILL after 30 s, and its
#                                      containerd), unmounts what is left under DIR, removes DIR.
#                                      Safe to repeat.
set -euo pipefail
action=${1:?start or stop}
dir=${2:?directory}
wait_s=60

log() { echo "userns_engine: $*" >&2; }
engine() { timeout 60 docker -H "unix://${dir}/docker.sock" "$@"; }

stop_engine() { # by the pids it wrote, never by name
    local pid="" cpid="" i
    pid=$(cat "${dir}/docker.pid" 2>/dev/null || cat "${dir}/launched.pid" 2>/dev/null || true)
    cpid=$(cat "${dir}/exec/containerd/containerd.pid" 2>/dev/null || true)
    if [[ -n "${pid}" ]] && kill -0 "${pid}" 2>/dev/null; then
        kill -TERM "${pid}" 2>/dev/null || true
        for ((i = 0; i < 300; i++)); do
            kill -0 "${pid}" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "${pid}" 2>/dev/null; then
            log "engine (pid ${pid}) still running 30 s after SIGTERM; SIGKILL"
            kill -KILL "${pid}" 2>/dev/null || true
        fi
    fi
    # A dockerd that was killed leaves its containerd behind.
    if [[ -n "${cpid}" ]] && kill -0 "${cpid}" 2>/dev/null &&
        [[ "$(readlink "/proc/${cpid}/exe" 2>/dev/null)" == */containerd ]]; then
        kill -TERM "${cpid}" 2>/dev/null || true
    fi
}

case "${action}" in
start)
    image=${3:?image}
    [[ -d "${dir}" && -z "$(ls -A "${dir}")" ]] || { log "${dir} is not a fresh empty directory"; exit 2; }
    trap '"$0" stop "${dir}" || true' ERR
    # The remapped root must be able to walk down to its data root.
    chmod 0711 "${dir}"
    echo '{}' >"${dir}/daemon.json"
    setsid dockerd --bridge=none --iptables=false --ip6tables=false --userns-remap=default \
        --config-file "${dir}/daemon.json" \
        --data-root "${dir}/data" --exec-root "${dir}/exec" \
        --pidfile "${dir}/docker.pid" -H "unix://${dir}/docker.sock" \
        >"${dir}/dockerd.log" 2>&1 </dev/null &
    echo $! >"${dir}/launched.pid"
    start=${SECONDS}
    until engine info >/dev/null 2>&1; do
        if ! kill -0 "$(cat "${dir}/launched.pid")" 2>/dev/null || ((SECONDS - start > wait_s)); then
            log "the engine did not answer; last lines of its log:"
            tail -n 20 "${dir}/dockerd.log" >&2 || true
            false
        fi
        sleep 0.2
    done
    docker save "${image}" | engine load >/dev/null
    echo "unix://${dir}/docker.sock" >"${dir}/engine.sock"
    log "engine at unix://${dir}/docker.sock, root dir $(engine info --format '{{.DockerRootDir}}')"
    ;;
stop)
    [[ -d "${dir}" ]] || exit 0
    stop_engine
    awk -v d="${dir}/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r |
        while read -r m; do umount -l "${m}" 2>/dev/null || true; done
    if awk -v d="${dir}/" 'index($5, d) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
        log "mounts under ${dir} are left; not removing it"
        exit 1
    fi
    rm -rf "${dir}"
    ;;
*)
    echo "usage: $0 start DIR IMAGE | stop DIR" >&2
    exit 2
    ;;
esac
