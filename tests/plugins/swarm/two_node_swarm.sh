#!/usr/bin/env bash
# A two-node swarm of its own for one test: two extra Docker Engines (a manager and a worker) in
# this network namespace, each with its own --data-root, --exec-root, --pidfile and unix socket
# under DIR, and an empty config file (not /etc/docker/daemon.json). The machine's own engine, its
# containers and its swarm state are never touched. The swarm listens only on loopback addresses
# picked at random from 127.0.0.0/8 (so two runs do not clash), with a data-path (VXLAN) port of
# its own; networking stays `--bridge=none --iptables=false --ip6tables=false`.
#
#   two_node_swarm.sh start DIR IMAGE  DIR must be a fresh, empty directory. Starts both engines,
#                                      makes a swarm, joins the worker, loads IMAGE (from the
#                                      machine's engine, `docker save | load`, so it has the same
#                                      id) into both. Writes DIR/manager.sock, DIR/worker.sock (the
#                                      engines' addresses, unix://...) and DIR/worker.id (the
#                                      worker's swarm node id). On failure it stops what it started.
#   two_node_swarm.sh stop DIR         Leaves the swarm on both, stops both engines (SIGTERM, then
#                                      SIGKILL after 30 s, and their containerd), unmounts what
#                                      is left mounted under DIR and removes DIR. Safe to repeat.
set -euo pipefail
action=${1:?start or stop}
dir=${2:?directory}
wait_s=60

log() { echo "two_node_swarm: $*" >&2; }
engine() { # engine NAME ARGS...: the docker CLI against engine NAME (m or w) of DIR
    local name=$1
    shift
    timeout 60 docker -H "unix://${dir}/${name}/docker.sock" "$@"
}

start_engine() { # start_engine NAME
    local name=$1
    mkdir -p "${dir}/${name}"
    echo '{}' >"${dir}/${name}/daemon.json"
    setsid dockerd --bridge=none --iptables=false --ip6tables=false \
        --config-file "${dir}/${name}/daemon.json" \
        --data-root "${dir}/${name}/data" --exec-root "${dir}/${name}/exec" \
        --pidfile "${dir}/${name}/docker.pid" -H "unix://${dir}/${name}/docker.sock" \
        >"${dir}/${name}/dockerd.log" 2>&1 </dev/null &
    echo $! >"${dir}/${name}/launched.pid"
}

await_engine() { # await_engine NAME
    local name=$1 start=${SECONDS} pid
    pid=$(cat "${dir}/${name}/launched.pid")
    until engine "${name}" info >/dev/null 2>&1; do
        if ! kill -0 "${pid}" 2>/dev/null || ((SECONDS - start > wait_s)); then
            log "engine '${name}' (pid ${pid}) did not answer; last lines of its log:"
            tail -n 20 "${dir}/${name}/dockerd.log" >&2 || true
            return 1
        fi
        sleep 0.2
    done
}

stop_engine() { # stop_engine NAME: by the pids it wrote, never by name
    local name=$1 pid="" cpid="" i
    [[ -d "${dir}/${name}" ]] || return 0
    engine "${name}" swarm leave --force >/dev/null 2>&1 || true
    pid=$(cat "${dir}/${name}/docker.pid" 2>/dev/null || cat "${dir}/${name}/launched.pid" 2>/dev/null || true)
    cpid=$(cat "${dir}/${name}/exec/containerd/containerd.pid" 2>/dev/null || true)
    if [[ -n "${pid}" ]] && kill -0 "${pid}" 2>/dev/null; then
        kill -TERM "${pid}" 2>/dev/null || true
        for ((i = 0; i < 300; i++)); do
            kill -0 "${pid}" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "${pid}" 2>/dev/null; then
            log "engine '${name}' (pid ${pid}) still running 30 s after SIGTERM; SIGKILL"
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
    # 127.A.B.2 and 127.A.B.3: unlikely to be anyone else's, always loopback.
    a=$((RANDOM % 200 + 20)) b=$((RANDOM % 250 + 1))
    manager_addr="127.${a}.${b}.2" worker_addr="127.${a}.${b}.3"
    data_path_port=$((RANDOM % 20000 + 20000))
    start_engine m
    start_engine w
    await_engine m
    await_engine w
    engine m swarm init --advertise-addr "${manager_addr}" --listen-addr "${manager_addr}:2377" \
        --data-path-port "${data_path_port}" >/dev/null
    token=$(engine m swarm join-token -q worker)
    engine w swarm join --token "${token}" --advertise-addr "${worker_addr}" \
        --listen-addr "${worker_addr}:2377" "${manager_addr}:2377" >/dev/null
    for name in m w; do
        docker save "${image}" | engine "${name}" load >/dev/null
    done
    engine w info --format '{{.Swarm.NodeID}}' >"${dir}/worker.id"
    echo "unix://${dir}/m/docker.sock" >"${dir}/manager.sock"
    echo "unix://${dir}/w/docker.sock" >"${dir}/worker.sock"
    log "manager ${manager_addr}, worker ${worker_addr} (node $(cat "${dir}/worker.id")), data path port ${data_path_port}"
    ;;
stop)
    [[ -d "${dir}" ]] || exit 0
    # The worker first, so the manager does not wait for it.
    stop_engine w
    stop_engine m
    # What the engines left mounted under DIR (overlay layers, network namespaces), deepest first.
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
