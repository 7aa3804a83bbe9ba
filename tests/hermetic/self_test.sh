#!/usr/bin/env bash
# Shows that check_hermetic.sh can fail: run on violations/examples.txt, it must exit 1, report each
# of its rules on the line that breaks it, and report nothing else.
set -euo pipefail
here="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
examples="${here}/violations/examples.txt"
set +e
out="$("${here}/check_hermetic.sh" "${examples}" 2>/dev/null)"
rc=$?
set -e
fail() { echo "self_test: $*"; echo "--- output ---"; echo "${out}"; exit 1; }
((rc == 1)) || fail "exit status ${rc}, expected 1"
expect=(
    "examples.txt:2: host-wide ps"
    "examples.txt:3: host-wide process match"
    "examples.txt:4: unfiltered docker listing"
    "examples.txt:5: engine-wide prune"
    "examples.txt:6: throwing /proc read"
    "examples.txt:7: ad-hoc /proc scan"
)
for e in "${expect[@]}"; do
    grep -qF -- "${e}" <<<"${out}" || fail "not reported: ${e}"
done
n=$(grep -c . <<<"${out}")
((n == ${#expect[@]})) || fail "${n} lines reported, expected ${#expect[@]}"
echo "self_test: all ${#expect[@]} rules reported, nothing else"
