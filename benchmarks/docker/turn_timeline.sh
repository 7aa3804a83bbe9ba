#!/usr/bin/env bash
# Where a single turn's time goes, radiald against docker itself (docs/design.md §13.1): RUNS
# alternating `radiald turn -- true` and hardened `docker run ... true` (the same box as
# engine_api_overhead.sh), each split at the engine's own container events (create, start, die,
# destroy, stamped by dockerd in nanoseconds) into
#
#   exec->create    the client's start and everything before the box exists, the create included
#   create->start   the engine starting the box (runc)
#   start->die      the workload and its init
#   die->destroy    the box's removal: radiald's wait and DELETE, docker's auto-remove
#   destroy->exit   what the client does after the box is gone, and its exit
#
# and prints the median of each, per side. Not a test: a measurement. Needs a Docker Engine, the
# image and a built radiald.
#
#   benchmarks/docker/turn_timeline.sh [RADIALD] [IMAGE] [RUNS]
set -euo pipefail
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
radiald="$(realpath "${1:-build/bin/radiald}")"
image="${2:-radial/busybox:latest}"
runs="${3:-20}"

work="$(mktemp -d /tmp/radial-turn-timeline.XXXXXX)"
events_pid=""
cleanup() {
    [ -n "${events_pid}" ] && kill "${events_pid}" 2>/dev/null
    rm -rf "${work}"
}
trap cleanup EXIT
printf '[run]\nstateDir = "%s"\n[run.docker]\npull = "never"\n' "${work}/state" >"${work}/radiald.toml"
run_id="$(head -c 4 /dev/urandom | od -An -tx1 | tr -d ' \n')" # names this run's boxes
ns() { date +%s%N; }

# One unmeasured run each: the first pays for cold caches.
"${radiald}" turn --config "${work}/radiald.toml" --image "${image}" -- true >/dev/null 2>&1
docker run "${hardened[@]}" "${image}" true

docker events --filter type=container --format '{{.TimeNano}} {{.Action}} {{.Actor.Attributes.name}}' \
    >"${work}/events" &
events_pid=$!
sleep 1 # the subscription is in place before the first box
# Each side's box name ends in "-<side>-<run_id>-<i>": a radiald turn id is part of its box's name.
radiald_side() {
    local t0
    t0="$(ns)"
    "${radiald}" turn --config "${work}/radiald.toml" --turn-id "tl-radiald-${run_id}-$1" \
        --image "${image}" -- true >/dev/null 2>&1
    echo "${t0} exec -radiald-${run_id}-$1" >>"${work}/client"
    echo "$(ns) exit -radiald-${run_id}-$1" >>"${work}/client"
}
docker_side() {
    local t0
    t0="$(ns)"
    docker run --name "radial-bench-tl-docker-${run_id}-$1" "${hardened[@]}" "${image}" true
    echo "${t0} exec -docker-${run_id}-$1" >>"${work}/client"
    echo "$(ns) exit -docker-${run_id}-$1" >>"${work}/client"
}
for i in $(seq 1 "${runs}"); do
    if ((i % 2)); then radiald_side "${i}"; docker_side "${i}"; else docker_side "${i}"; radiald_side "${i}"; fi
done
sleep 1 # the last destroy event is delivered
if kill "${events_pid}"; then wait "${events_pid}" 2>/dev/null || true; fi
events_pid=""

# "<side> <i> <5 phases in ms>" per run, from the events and the client's stamps.
cat "${work}/events" "${work}/client" | awk -v id="${run_id}" '
    match($3, "-(radiald|docker)-" id "-[0-9]+$") {
        split(substr($3, RSTART + 1), k, "-"); key = k[1] " " k[3]; t[key, $2] = $1; keys[key] = 1
    }
    END {
        for (key in keys) {
            if (!((key, "destroy") in t) || !((key, "exit") in t)) continue
            printf "%s %.1f %.1f %.1f %.1f %.1f %.1f\n", key,
                (t[key, "create"] - t[key, "exec"]) / 1e6, (t[key, "start"] - t[key, "create"]) / 1e6,
                (t[key, "die"] - t[key, "start"]) / 1e6, (t[key, "destroy"] - t[key, "die"]) / 1e6,
                (t[key, "exit"] - t[key, "destroy"]) / 1e6, (t[key, "exit"] - t[key, "exec"]) / 1e6
        }
    }' >"${work}/phases"

printf '%-8s %5s %14s %14s %11s %13s %14s %9s\n' side runs exec-\>create create-\>start start-\>die \
    die-\>destroy destroy-\>exit total
for side in radiald docker; do
    n="$(grep -c "^${side} " "${work}/phases" || true)"
    row=()
    for col in 3 4 5 6 7 8; do row+=("$(grep "^${side} " "${work}/phases" | cut -d' ' -f"${col}" | median)"); done
    printf '%-8s %5s %14s %14s %11s %13s %14s %9s\n' "${side}" "${n}" "${row[@]}"
done
echo "(medians in ms of each phase; a total is the median of the totals, not the sum of the medians)"
