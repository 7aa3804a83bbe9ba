#!/usr/bin/env bash
# What the warm pool saves (docs/design.md §13.14), measured through a real `radiald run`:
#
#   1. a warm one-shot turn of `true` (radiald submit, then radiald logs -f until it ended: the
#      whole way a client sees a daemon's turn) / a raw hardened `docker run ... true`,
#      in alternating pairs                                     goal: median <= 0.5; p90 reported
#   2. the hit rate at a steady 2 turns/s with a pool of 4      goal: >= 95 %
#   3. the pool's idle cost: memory and CPU per idle box (docker stats), reported
#
# Not a test: a measurement. Needs root, a Docker Engine, the image and a built radiald.
#
#   benchmarks/docker/pool_ratios.sh [RADIALD] [IMAGE] [PAIRS] [STEADY_TURNS]
set -euo pipefail
here="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"
# shellcheck source=../lib.sh
source "${here}/../lib.sh"
radiald="$(realpath "${1:-build/bin/radiald}")"
image="${2:-radial/busybox:latest}"
pairs="${3:-15}"
steady="${4:-60}"

work="$(mktemp -d /tmp/radial-pool-bench.XXXXXX)"
inst="poolbench$(head -c 4 /dev/urandom | od -An -tx1 | tr -d ' \n')"
config="${work}/radiald.toml"
mkdir -p "${work}/ws"
chown 1000:1000 "${work}/ws"
cat >"${config}" <<TOML
[run]
stateDir = "${work}/state"
instanceId = "${inst}"
maxConcurrentTurns = 4
sharedWorkspaces = true
[run.docker]
pull = "never"
[run.pool]
images = ["${image}"]
size = 4
refillConcurrency = 2
TOML
printf 'image = "%s"\nworkspace = "%s/ws"\nargv = ["true"]\n' "${image}" "${work}" >"${work}/true.toml"

daemon=""
cleanup() {
    [[ -n "${daemon}" ]] && kill -TERM "${daemon}" 2>/dev/null && wait "${daemon}" 2>/dev/null
    docker ps -a --filter "label=radial.label" --format '{{.Label "radial.label"}}' |
        grep -E "^radial-(pool|turn)-${inst}-" | xargs -r docker rm -f >/dev/null 2>&1 || true
    rm -rf "${work}"
}
trap cleanup EXIT
"${radiald}" run --config "${config}" 2>"${work}/daemon.log" &
daemon=$!

# metric NAME RESULT: a pool figure from `radiald status --json`
metric() {
    "${radiald}" status --config "${config}" --json 2>/dev/null | python3 -c '
import json, sys
m = (json.load(sys.stdin).get("metrics") or {}).get("metrics", {})
name, result = sys.argv[1], sys.argv[2]
print(int(sum(s["value"] for s in m.get(name, []) if not result or s["labels"].get("result") == result)))
' "$1" "$2"
}
wait_filled() { # until the pool has 4 idle boxes again (the snapshot is written on each change)
    for _ in $(seq 1 300); do
        [[ "$(metric radiald_pool_boxes_idle '')" == 4 ]] && return 0
        sleep 0.1
    done
    echo "pool_ratios: the pool did not fill; see ${work}/daemon.log" >&2
    exit 1
}
warm_true() {
    local id
    id="$("${radiald}" submit --config "${config}" "${work}/true.toml")"
    "${radiald}" logs -f --config "${config}" "${id}"
}
raw_true() { docker run "${hardened[@]}" -v "${work}/ws:/work" -w /work "${image}" true; }

wait_filled
warm_true >/dev/null 2>&1 # warm-up: the client's first contact with the state directory
raw_true >/dev/null 2>&1
ratios=()
for i in $(seq 1 "${pairs}"); do
    wait_filled
    if ((i % 2 == 0)); then r="$(time_it raw_true)"; w="$(time_it warm_true)"; else
        w="$(time_it warm_true)"; r="$(time_it raw_true)"; fi
    ratios+=("$(ratio "${w}" "${r}")")
    echo "pair ${i}: warm turn ${w} s / docker run ${r} s"
done
echo "warm turn / raw docker run: median $(printf '%s\n' "${ratios[@]}" | median)," \
    "p90 $(printf '%s\n' "${ratios[@]}" | quantile 0.9) (${pairs} pairs; goal: median <= 0.5)"

wait_filled
hits0="$(metric radiald_pool_claims_total hit)" misses0="$(metric radiald_pool_claims_total miss)"
for _ in $(seq 1 "${steady}"); do
    "${radiald}" submit --config "${config}" "${work}/true.toml" >/dev/null
    sleep 0.5
done
for _ in $(seq 1 600); do
    h="$(metric radiald_pool_claims_total hit)" m="$(metric radiald_pool_claims_total miss)"
    (((h - hits0) + (m - misses0) >= steady)) && break
    sleep 0.1
done
h=$((h - hits0)) m=$((m - misses0))
echo "steady 2 turns/s, ${steady} turns, pool of 4: ${h} hits, ${m} misses," \
    "hit rate $(awk -v h="${h}" -v m="${m}" 'BEGIN { printf "%.1f", 100 * h / (h + m) }') % (goal >= 95 %)"

wait_filled
sleep 5 # idle: what the boxes cost with nothing to do
echo "idle cost per box (docker stats):"
docker stats --no-stream --format '{{.Name}} {{.MemUsage}} {{.CPUPerc}}' |
    grep "^radial-pool-${inst}-" | sed 's/^/  /'
