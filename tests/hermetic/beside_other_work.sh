#!/usr/bin/env bash
# Runs ctest beside unrelated work of the kind a hermetic test must neither count nor touch: a
# plain `sleep 30` (restarted whenever it ends) and a running container named and labelled
# `radial-turn-x-<pid of this script>`, as another radiald's box would be (tests/README.md,
# "Hermetic tests"); a name of its own for each run, so that two runs at once do not remove each
# other's. The
# run fails when ctest fails, or when the suite killed or removed either of them. With
# `--cpu-hog N` it also runs beside `stress-ng --cpu N` (a machine loaded by someone else's work:
# the suite's budgets scale with the load factor it measures at its start, tests/README.md).
#
#   tests/hermetic/beside_other_work.sh [--runs N] [--image IMAGE] [--cpu-hog N] [--] CTEST_ARGS...
#
# e.g. tests/hermetic/beside_other_work.sh --runs 2 --cpu-hog 4 -- --preset default -L unit
# Needs a running Docker Engine and IMAGE (default radial/busybox:latest) present locally.
set -euo pipefail

runs=1
image=radial/busybox:latest
cpu_hog=0
while (($# > 0)); do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --image) image="$2"; shift 2 ;;
        --cpu-hog) cpu_hog="$2"; shift 2 ;;
        --) shift; break ;;
        -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
        *) break ;;
    esac
done

box="radial-turn-x-$$"
say() { echo "beside_other_work: $*"; }
if ! [[ "${cpu_hog}" =~ ^[0-9]+$ ]] || ((cpu_hog > 64)); then
    say "--cpu-hog: '${cpu_hog}' is not a number of CPU workers from 0 to 64" >&2
    exit 2
fi
if ((cpu_hog > 0)) && ! command -v stress-ng >/dev/null; then
    say "--cpu-hog needs stress-ng (apt-get install stress-ng; scripts/setup.sh installs it)" >&2
    exit 2
fi

# Another user's `sleep 30`: its own process group, so clean-up ends exactly it.
setsid bash -c 'while :; do sleep 30; done' </dev/null >/dev/null 2>&1 &
sleeper=$!
hog=""
created=0 # the box is removed only once this run made it: one of that name may be another's
cleanup() {
    kill -- "-${sleeper}" 2>/dev/null || true
    if [[ -n "${hog}" ]]; then kill -- "-${hog}" 2>/dev/null || true; fi
    if ((created)); then docker rm -f "${box}" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
# A signal ends the script through its EXIT trap too, so the box goes however the run ends.
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# Those earlier runs left (a run killed with SIGKILL, or a machine that went down) carry its mark,
# their run's pid: removed once that run is gone, so they do not pile up. One of a run still going,
# or anything without the mark, is not ours to touch.
mark=radial.test.beside-other-work
while read -r name pid; do
    if [[ "${pid}" =~ ^[0-9]+$ && "${pid}" != "$$" && ! -e "/proc/${pid}" ]]; then
        say "removing ${name}, left by an earlier run of this script"
        docker rm -f "${name}" >/dev/null
    fi
done < <(docker ps -a --filter "label=${mark}" --format "{{.Names}} {{.Label \"${mark}\"}}")
if docker inspect "${box}" >/dev/null 2>&1; then
    # An earlier run's that had this script's pid.
    if [[ "$(docker inspect -f "{{index .Config.Labels \"${mark}\"}}" "${box}")" == "$$" ]]; then
        say "removing ${box}, left by an earlier run of this script"
        docker rm -f "${box}" >/dev/null
    else
        say "a container named ${box} already exists and is not this script's; remove it first (docker rm -f ${box})" >&2
        exit 2
    fi
fi
docker run -d --pull never --name "${box}" --label "radial.label=${box}" --label "${mark}=$$" \
    --network none --user 65534:65534 "${image}" sleep 3600 >/dev/null
created=1
box_id=$(docker inspect -f '{{.Id}}' "${box}")
say "unrelated work: 'sleep 30' loop (pgid ${sleeper}), container ${box} (${box_id:0:12})"
if ((cpu_hog > 0)); then
    # Its own process group, so clean-up ends exactly it; started before ctest, so the suite's
    # load factor (measured at its start) sees it.
    setsid stress-ng --cpu "${cpu_hog}" --quiet </dev/null >/dev/null 2>&1 &
    hog=$!
    say "and a CPU hog: stress-ng --cpu ${cpu_hog} (pgid ${hog})"
fi

status=0
for ((i = 1; i <= runs; i++)); do
    say "run ${i}/${runs}: ctest $*"
    if ctest "$@"; then
        say "run ${i}/${runs}: passed"
    else
        say "run ${i}/${runs}: FAILED"
        status=1
    fi
done

if ! kill -0 "${sleeper}" 2>/dev/null; then
    say "the unrelated 'sleep 30' loop was killed by the suite" >&2
    status=1
fi
if [[ -n "${hog}" ]] && ! kill -0 "${hog}" 2>/dev/null; then
    say "the CPU hog (stress-ng) ended during the run: the run was not loaded throughout" >&2
    status=1
fi
if [[ "$(docker inspect -f '{{.Id}} {{.State.Running}}' "${box}" 2>/dev/null)" != "${box_id} true" ]]; then
    say "the unrelated container ${box} was stopped or removed by the suite" >&2
    status=1
fi
((status == 0)) && say "all ${runs} run(s) passed; the unrelated sleep and container are untouched"
exit "${status}"
