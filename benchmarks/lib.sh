# shellcheck shell=bash
# benchmarks/lib.sh — what the benchmark scripts share: timing, medians and ratios, and the 16
# registered secrets of a turn that redacts. Sourced by them, never run on its own.

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", b - a }'; } # seconds from $1 to $2
time_it() { # prints the seconds "$@" took, output discarded
    local t0
    t0="$(now)"
    "$@" >/dev/null 2>&1
    secs "${t0}" "$(now)"
}
median() { quantile 0.5; }
# quantile Q: the value at or just below the Q-th fraction of the sorted numbers on stdin (0.25 is
# the lower quartile, 0.5 the median of an odd count).
quantile() { sort -g | awk -v q="$1" '{ a[NR] = $1 } END { i = int(q * (NR - 1)) + 1; print a[i] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", a / b }'; }

# Exports BENCH_SECRET_1..16 with random values and sets the array secret_flags to the
# `--secret NAME` flags that register them.
bench_secrets() {
    local i name
    secret_flags=()
    for i in $(seq 1 16); do
        name="BENCH_SECRET_${i}"
        export "${name}=sk-bench-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
        secret_flags+=(--secret "${name}")
    done
}

# The flags of a raw `docker run` carrying the same hardening as radiald's docker boxes (its box
# user, dropped capabilities, no-new-privileges, pids, memory and CPU caps, read-only rootfs, tmpfs
# /tmp, no network, no log driver): what the docker side of a benchmark runs, so only the host
# differs. The commas are the tmpfs options, one element.
# shellcheck disable=SC2034,SC2054
hardened=(--rm --log-driver none --network none --cap-drop=ALL --security-opt no-new-privileges
    --pids-limit 256 --memory 2g --memory-swap 2g --cpus 2 --user 2000000000:2000000000 --read-only
    --tmpfs /tmp:rw,exec,nosuid,nodev,size=256m)
