#!/usr/bin/env bash
# What the docker runtime (Engine API, docs/design.md §13.1) costs against docker itself, from
# alternating pairs in one run (the radiald side and the docker side back to back, so drift in the
# machine's load hits both; which goes first alternates too), printing the median of the per-pair
# ratios:
#
#   1. `radiald turn -- true` / a raw hardened `docker run ... true`         (goal <= 1.05)
#   2. 128 MiB of output through `radiald turn` with 16 secrets registered /
#      the same raw hardened `docker run ... | cat`                           (goal <= 1.0)
#   3. the daemon running 40 `true` turns, 4 at once (submit, then time `radiald run` from its
#      start to the last terminal record) / `xargs -P4` of 40 raw hardened `docker run`s
#                                                                             (goal <= 1.0)
#   4. the daemon's peak RSS, radiald plus every descendant process, while 32 turns run at once
#      (`sleep 3` each, maxConcurrentTurns 32), sampled every 50 ms         (goal <= 64 MiB)
#
# The raw `docker run`s carry the same hardening as radiald's boxes (user, caps, no-new-privileges,
# caps on pids/memory/cpus, read-only rootfs, tmpfs /tmp, no network, no log driver), so only the
# host differs. radiald's figures include its fixed per-turn work (config, preflight, turn socket,
# journal). Not a test: a measurement. Needs a Docker Engine, the image and a built radiald.
#
#   benchmarks/docker/engine_api_overhead.sh [RADIALD] [IMAGE] [PAIRS]
set -euo pipefail
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
radiald="$(realpath "${1:-build/bin/radiald}")"
image="${2:-radial/busybox:latest}"
pairs="${3:-5}"
bytes=$((128 * 1024 * 1024))
big="yes 'INFO 2026-11-29T13:15:00Z worker-3 compiled src/module_42.cc in 183 ms (cache miss)' | head -c ${bytes}"

work="$(mktemp -d /tmp/radial-engine-bench.XXXXXX)"
daemon_pid=""
cleanup() {
    [ -n "${daemon_pid}" ] && kill "${daemon_pid}" 2>/dev/null && wait "${daemon_pid}" 2>/dev/null
    rm -rf "${work}"
}
trap cleanup EXIT
config() { # config FILE MAX_CONCURRENT: a config of its own state directory
    printf '[run]\nstateDir = "%s"\nmaxConcurrentTurns = %s\n[run.docker]\npull = "never"\n' \
        "${1}.state" "${2}" >"${1}"
}
config "${work}/turn.toml" 4
bench_secrets

raw_true() { docker run "${hardened[@]}" "${image}" true; }
raw_big() { docker run "${hardened[@]}" "${image}" sh -c "${big}" | cat; }
turn_true() { "${radiald}" turn --config "${work}/turn.toml" --image "${image}" -- true; }
turn_big() {
    "${radiald}" turn --config "${work}/turn.toml" --image "${image}" "${secret_flags[@]}" \
        -- sh -c "${big}"
}
raw_forty() { seq 40 | xargs -P4 -I{} docker run "${hardened[@]}" "${image}" true; }

# The daemon: N requests of `argv`, submitted first, then `radiald run` timed from its start to the
# last terminal record (the latest updatedAt of the N turns, which the journal stamps in
# milliseconds), so the polling that notices the end adds nothing; prints the seconds. With
# RSS_FILE, the peak summed RSS (KiB) of the daemon and its descendants is written there.
daemon_batch() { # daemon_batch N MAX_CONCURRENT ARGV_TOML [RSS_FILE]
    local n="$1" max="$2" argv="$3" rss_file="${4:-}" cfg t0 t1 peak=0
    cfg="${work}/daemon-$RANDOM.toml"
    config "${cfg}" "${max}"
    for _ in $(seq 1 "${n}"); do
        printf 'image = "%s"\nargv = %s\n' "${image}" "${argv}" >"${work}/req.toml"
        "${radiald}" submit --config "${cfg}" "${work}/req.toml" >/dev/null
    done
    t0="$(now)"
    "${radiald}" run --config "${cfg}" >/dev/null 2>&1 &
    daemon_pid=$!
    # The end is noticed without starting a process: a turn's request leaves the spool's queue only
    # once its terminal record is journaled, so an empty queue means all N are done. (Polling
    # `radiald status` here cost the machine more CPU than the daemon itself and slowed the
    # batch it was timing, which the docker side does not pay for.)
    local queue="${cfg}.state/spool/queue" pending
    shopt -s nullglob
    while :; do
        if [ -n "${rss_file}" ]; then
            local kib
            kib="$(tree_rss_kib "${daemon_pid}")"
            [ "${kib}" -gt "${peak}" ] && peak="${kib}"
            sleep 0.05
        else
            sleep 0.1
        fi
        pending=("${queue}"/*)
        [ "${#pending[@]}" = 0 ] && break
        kill -0 "${daemon_pid}" 2>/dev/null || { echo "radiald run ended early" >&2; exit 1; }
    done
    shopt -u nullglob
    t1="$("${radiald}" status --config "${cfg}" --json --limit "${n}" | jq -r '
        [.recent[].updatedAt | capture("^(?<s>[^.]+)\\.(?<ms>[0-9]+)Z$")
         | ((.s + "Z" | fromdateiso8601) + ("0." + .ms | tonumber))] | max')"
    if kill "${daemon_pid}"; then wait "${daemon_pid}" 2>/dev/null || true; fi
    daemon_pid=""
    [ -n "${rss_file}" ] && echo "${peak}" >"${rss_file}"
    secs "${t0}" "${t1}"
}
daemon_forty() { daemon_batch 40 4 '["true"]'; }
tree_rss_kib() { # the summed VmRSS of pid $1 and all its descendants
    local pids=("$1") all=() total=0 p
    while [ "${#pids[@]}" -gt 0 ]; do
        all+=("${pids[@]}")
        local next=()
        for p in "${pids[@]}"; do
            [ -r "/proc/${p}/task/${p}/children" ] &&
                read -r -a kids <"/proc/${p}/task/${p}/children" && next+=("${kids[@]}")
        done
        pids=("${next[@]}")
    done
    for p in "${all[@]}"; do
        total=$((total + $(awk '/^VmRSS:/ { print $2 }' "/proc/${p}/status" 2>/dev/null || echo 0)))
    done
    echo "${total}"
}

# One pair into FILE: "ratio radiald docker". Odd pairs run the radiald side first, even pairs the
# docker side: whichever side runs first in a pair is measured slower on this machine (about 3 % for
# a single turn, each side alike), and alternating the order cancels that out.
pair() { # pair FILE INDEX RADIALD_CMD DOCKER_CMD (each a command that prints its seconds)
    local a b
    if [ $(($2 % 2)) = 1 ]; then
        a="$($3)"; b="$($4)"
    else
        b="$($4)"; a="$($3)"
    fi
    echo "$(ratio "${a}" "${b}") ${a} ${b}" >>"$1"
}
: >"${work}/r1" ; : >"${work}/r2" ; : >"${work}/r3"
for i in $(seq 1 "${pairs}"); do
    pair "${work}/r1" "${i}" "time_it turn_true" "time_it raw_true"
    pair "${work}/r2" "${i}" "time_it turn_big" "time_it raw_big"
    pair "${work}/r3" "${i}" daemon_forty "time_it raw_forty"
done
daemon_batch 32 32 '["sleep", "3"]' "${work}/rss" >/dev/null

# The median of the pairs' ratios, the quartiles beside it: how far single pairs spread on this
# machine says how much one run's median can be trusted.
summary() { # summary FILE LABEL GOAL
    local m q1 q3 a b
    m="$(cut -d' ' -f1 <"$1" | median)"
    q1="$(cut -d' ' -f1 <"$1" | quantile 0.25)"
    q3="$(cut -d' ' -f1 <"$1" | quantile 0.75)"
    a="$(cut -d' ' -f2 <"$1" | median)"
    b="$(cut -d' ' -f3 <"$1" | median)"
    printf '%-44s ratio %6.3f (goal <= %s; quartiles %.3f-%.3f)   radiald %7.3f s, docker %7.3f s (medians of %s pairs)\n' \
        "$2" "${m}" "$3" "${q1}" "${q3}" "${a}" "${b}" "${pairs}"
}
summary "${work}/r1" "turn of 'true' / hardened docker run" 1.05
summary "${work}/r2" "128 MiB, 16 secrets / docker run | cat" 1.0
summary "${work}/r3" "daemon 40 turns at 4 / xargs -P4 docker run" 1.0
awk '{ printf "%-44s %6.1f MiB (goal <= 64 MiB)\n", "daemon peak RSS, 32 turns, with children", $1 / 1024 }' \
    "${work}/rss"
