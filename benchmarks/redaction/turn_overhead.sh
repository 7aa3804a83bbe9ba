#!/usr/bin/env bash
# What the whole host costs a real turn, end to end: 256 MiB of container output streamed through
# `radiald turn` with 16 registered secrets, against the same container's output with no host at
# all (plain `docker run`, output to /dev/null, and piped through `cat`) and against radiald with
# only the turn token. radiald's figure includes its fixed per-turn work (config, preflight, turn
# socket, journal, `docker inspect` and `docker rm` after exit: about 0.1 s here). Redaction alone,
# on the same path with and without a redactor, is measured by the turn_redaction_overhead
# program (docs/redaction.md). Runs alternate, repeated; the medians and their ratios are printed.
# Not a test: a measurement.
#
#   benchmarks/redaction/turn_overhead.sh [RADIALD] [IMAGE] [REPEATS]
set -euo pipefail
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
radiald="${1:-build/bin/radiald}"
image="${2:-radial/busybox:latest}"
repeats="${3:-3}"
bytes=$((256 * 1024 * 1024))
# Ordinary log-like text; none of the secrets occurs in it, as in a normal turn.
cmd="yes 'INFO 2026-11-29T13:15:00Z worker-3 compiled src/module_42.cc in 183 ms (cache miss)' | head -c ${bytes}"

work="$(mktemp -d /tmp/radial-overhead.XXXXXX)"
trap 'rm -rf "${work}"' EXIT
printf '[run]\nstateDir = "%s/state"\n' "${work}" >"${work}/radiald.toml"
bench_secrets

: >"${work}/docker" ; : >"${work}/cat" ; : >"${work}/token" ; : >"${work}/sixteen"
docker_to_cat() { docker run --rm --log-driver none --network none "${image}" sh -c "${cmd}" | cat; }
for _ in $(seq 1 "${repeats}"); do
    # The same flags the docker runtime streams with (no log driver), so only radiald differs.
    time_it docker run --rm --log-driver none --network none "${image}" sh -c "${cmd}" >>"${work}/docker"
    time_it docker_to_cat >>"${work}/cat"
    time_it "${radiald}" turn --config "${work}/radiald.toml" --image "${image}" -- sh -c "${cmd}" >>"${work}/token"
    time_it "${radiald}" turn --config "${work}/radiald.toml" --image "${image}" "${secret_flags[@]}" -- sh -c "${cmd}" \
        >>"${work}/sixteen"
done
d="$(median <"${work}/docker")"
c="$(median <"${work}/cat")"
t="$(median <"${work}/token")"
s="$(median <"${work}/sixteen")"
printf 'docker run, no redaction      : %6.2f s (median of %s)\n' "${d}" "${repeats}"
printf 'docker run | cat, no redaction: %6.2f s\n' "${c}"
printf 'radiald turn, token only      : %6.2f s\n' "${t}"
printf 'radiald turn, 16 secrets      : %6.2f s\n' "${s}"
awk -v s="${s}" -v d="${d}" -v c="${c}" -v t="${t}" 'BEGIN {
    printf "ratio 16 secrets / docker run : %6.3f\n", s / d
    printf "ratio 16 secrets / docker|cat : %6.3f\n", s / c
    printf "ratio 16 secrets / token only : %6.3f\n", s / t }'
