#!/usr/bin/env bash
# What a session saves (docs/design.md §13.12), each ratio from alternating pairs in one run
# (which side goes first alternates, so drift in the machine's load hits both):
#
#   1. `radiald turn --session ID -- true` (an exec in a live session's box)
#      / a raw hardened `docker run ... true`                                       goal <= 0.3
#   2. 20 turns of `true` in one session (its create included)
#      / 20 one-shot `radiald turn -- true`                                          goal >= 3x faster
#   3. `radiald session create` / one one-shot `radiald turn -- true`                goal <= 1.05
#
# Prints each pair, then the medians with their quartiles. Not a test: a measurement. Needs a
# Docker Engine, the image and a built radiald.
#
#   benchmarks/docker/session_ratios.sh [RADIALD] [IMAGE] [PAIRS]
set -euo pipefail
here="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"
# shellcheck source=../lib.sh
source "${here}/../lib.sh"
radiald="$(realpath "${1:-build/bin/radiald}")"
image="${2:-radial/busybox:latest}"
pairs="${3:-5}"

work="$(mktemp -d /tmp/radial-session-bench.XXXXXX)"
config="${work}/radiald.toml"
printf '[run]\nstateDir = "%s/state"\n[run.docker]\npull = "never"\n' "${work}" >"${config}"
# Every session made is noted here (timed steps run in subshells) and removed at the end.
created="${work}/created"
cleanup() {
    local s
    while read -r s; do
        "${radiald}" session rm --config "${config}" "${s}" >/dev/null 2>&1 || true
    done <"${created}"
    rm -rf "${work}"
}
trap cleanup EXIT

create() { # prints a new session's id, and notes it
    local id
    id="$("${radiald}" session create --config "${config}" --image "${image}" 2>/dev/null)"
    [[ -n "${id}" ]] || { echo "session_ratios: session create failed" >&2; exit 1; }
    echo "${id}" >>"${created}"
    echo "${id}"
}
one_shot() { "${radiald}" turn --config "${config}" --image "${image}" -- true; }
in_session() { "${radiald}" turn --config "${config}" --session "$1" -- true; }
twenty_one_shot() { for _ in $(seq 1 20); do one_shot >/dev/null 2>&1; done; }
twenty_in_session() {
    local s
    s="$(create)"
    for _ in $(seq 1 20); do in_session "${s}" >/dev/null 2>&1; done
    "${radiald}" session rm --config "${config}" "${s}" >/dev/null 2>&1
}
raw_true() { docker run "${hardened[@]}" "${image}" true; }
# pair A B: seconds of each, in alternating order ($i decides)
pair() {
    local a b
    if ((i % 2 == 0)); then b="$(time_it "$2")"; a="$(time_it "$1")"; else a="$(time_it "$1")"; b="$(time_it "$2")"; fi
    echo "${a} ${b}"
}

touch "${created}"
live="$(create)"
one_shot >/dev/null 2>&1 # warm-up: the image and the plugin's first engine contact
in_session "${live}" >/dev/null 2>&1
exec_ratios=() many_ratios=() create_ratios=()
exec_on() { in_session "${live}"; }
create_only() { create >/dev/null; }
for i in $(seq 1 "${pairs}"); do
    read -r e r <<<"$(pair exec_on raw_true)"
    read -r m o <<<"$(pair twenty_in_session twenty_one_shot)"
    read -r c t <<<"$(pair create_only one_shot)"
    exec_ratios+=("$(ratio "${e}" "${r}")") many_ratios+=("$(ratio "${o}" "${m}")")
    create_ratios+=("$(ratio "${c}" "${t}")")
    echo "pair ${i}: exec ${e} s / docker run ${r} s; 20 in a session ${m} s / 20 one-shot ${o} s;" \
        "create ${c} s / one-shot ${t} s"
done
summary() { # summary NAME GOAL VALUES...
    local name="$1" goal="$2"
    shift 2
    echo "  ${name}: median $(printf '%s\n' "$@" | median)" \
        "(quartiles $(printf '%s\n' "$@" | quantile 0.25)-$(printf '%s\n' "$@" | quantile 0.75)); goal ${goal}"
}
echo "sessions, ${pairs} pairs:"
summary "exec in a session / hardened docker run" "<= 0.3" "${exec_ratios[@]}"
summary "20 one-shot turns / 20 turns of one session (speed-up)" ">= 3" "${many_ratios[@]}"
summary "session create / one-shot turn" "<= 1.05" "${create_ratios[@]}"
