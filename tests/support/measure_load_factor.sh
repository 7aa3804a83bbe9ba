#!/usr/bin/env bash
# Measures how contended this machine's CPUs are at the start of the suite and writes the factor
# every test budget is multiplied by (tests/support/load_factor.h) to FILE: 1 plus the processes
# waiting for a CPU per core, sampled from /proc/loadavg's runnable count ten times over a second,
# at least 1 and at most 8. On a quiet machine it is about 1; beside `stress-ng --cpu 4` on two
# cores about 3.
#
#   tests/support/measure_load_factor.sh FILE
set -euo pipefail
out=${1:?usage: measure_load_factor.sh FILE}
cores=$(nproc)
sum=0
for _ in 1 2 3 4 5 6 7 8 9 10; do
    read -r _ _ _ runnable _ </proc/loadavg
    # running/total; this script's own read counts as one
    sum=$((sum + ${runnable%/*} - 1))
    sleep 0.1
done
factor=$(awk -v s="${sum}" -v c="${cores}" 'BEGIN {
    f = 1 + s / 10 / c; if (f < 1) f = 1; if (f > 8) f = 8; printf "%.2f\n", f }')
mkdir -p "$(dirname "${out}")"
echo "${factor}" >"${out}.tmp" && mv "${out}.tmp" "${out}"
echo "measure_load_factor: ${cores} cores, $((sum / 10)) waiting on average: budgets x ${factor} (${out})"
