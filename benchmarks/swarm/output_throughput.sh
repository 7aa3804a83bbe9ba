#!/usr/bin/env bash
# How fast a swarm task's output reaches radiald's stdout (docs/design.md §13.11), against the
# same output through the docker runtime, from alternating pairs in one run (which side goes first
# alternates, so drift in the machine's load hits both):
#
#   64 MiB of 8-byte lines (`seq -w 0 8388607`, the conformance check's pattern) through
#   `radiald turn` on the swarm runtime / the same through the docker runtime
#
# Prints each pair's seconds and the swarm side's MB/s, then the medians (goal: swarm >= 10 MB/s).
# The whole turn is timed, box start and removal included, so the MB/s figure understates the
# output path alone. Not a test: a measurement. Needs a Docker Engine, the image and a built
# radiald; initialises a one-node swarm on 127.0.0.1 when the engine is in none, and leaves it
# afterwards only then (tests/plugins/swarm/swarm_fixture.sh).
#
#   benchmarks/swarm/output_throughput.sh [RADIALD] [IMAGE] [PAIRS]
set -euo pipefail
here="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"
# shellcheck source=../lib.sh
source "${here}/../lib.sh"
radiald="$(realpath "${1:-build/bin/radiald}")"
image="${2:-radial/busybox:latest}"
pairs="${3:-5}"
lines=8388608
bytes=$((lines * 8))

work="$(mktemp -d /tmp/radial-swarm-bench.XXXXXX)"
fixture="${here}/../../tests/plugins/swarm/swarm_fixture.sh"
cleanup() {
    "${fixture}" cleanup "${work}/swarm.state" >/dev/null || true
    rm -rf "${work}"
}
trap cleanup EXIT
"${fixture}" setup "${work}/swarm.state"

config() { # config FILE RUNTIME TABLE: a config of its own state directory
    printf '[run]\nstateDir = "%s"\ncontainerRuntime = "%s"\n%s\n' "${1}.state" "$2" "$3" >"$1"
}
config "${work}/swarm.toml" swarm $'[run.swarm]\npull = "never"\nhostNetwork = true'
config "${work}/docker.toml" docker $'[run.docker]\npull = "never"'

# turn CONFIG: the timed turn; fails the benchmark when the output did not all arrive.
turn() {
    local got
    got="$("${radiald}" turn --config "$1" --image "${image}" -- seq -w 0 $((lines - 1)) 2>/dev/null | wc -c)"
    if [[ "${got}" != "${bytes}" ]]; then
        echo "output_throughput: $1 delivered ${got} of ${bytes} bytes" >&2
        exit 1
    fi
}
timed_turn() { # prints the seconds a checked turn took
    local t0
    t0="$(now)"
    turn "$1"
    secs "${t0}" "$(now)"
}

turn "${work}/swarm.toml" # warm-up: the first service of a swarm pays for its set-up
swarm_times=() docker_times=() ratios=() rates=()
for i in $(seq 1 "${pairs}"); do
    if ((i % 2 == 0)); then
        d="$(timed_turn "${work}/docker.toml")"
        s="$(timed_turn "${work}/swarm.toml")"
    else
        s="$(timed_turn "${work}/swarm.toml")"
        d="$(timed_turn "${work}/docker.toml")"
    fi
    rate="$(awk -v b="${bytes}" -v s="${s}" 'BEGIN { printf "%.1f\n", b / s / 1e6 }')"
    swarm_times+=("${s}") docker_times+=("${d}") ratios+=("$(ratio "${s}" "${d}")") rates+=("${rate}")
    echo "pair ${i}: swarm ${s} s (${rate} MB/s), docker ${d} s, ratio ${ratios[-1]}"
done
echo "64 MiB of 8-byte lines through radiald turn, ${pairs} pairs:"
echo "  swarm  median $(printf '%s\n' "${swarm_times[@]}" | median) s," \
    "$(printf '%s\n' "${rates[@]}" | median) MB/s (goal >= 10)"
echo "  docker median $(printf '%s\n' "${docker_times[@]}" | median) s"
echo "  swarm / docker median ratio $(printf '%s\n' "${ratios[@]}" | median)" \
    "(quartiles $(printf '%s\n' "${ratios[@]}" | quantile 0.25)-$(printf '%s\n' "${ratios[@]}" | quantile 0.75))"
