#!/usr/bin/env bash
# The whole test suite, the way CI runs it (.ci/run calls this): set up and build with the default
# preset and run every test, then the same with the ASan + UBSan build.
#
#   sudo scripts/test.sh
#
# RADIAL_SKIP_ASAN=1 skips the sanitizer stage, for local iteration only; CI always runs it.
set -euo pipefail

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

echo "test: [1/4] setup, preset 'default'"
scripts/setup.sh --preset default
# Both stages run beside an unrelated `sleep 30` and an unrelated box labelled radial-turn-x-y,
# which no test may count or touch (tests/README.md, "Hermetic tests").
echo "test: [2/4] ctest --preset default"
tests/hermetic/beside_other_work.sh -- --preset default

if [[ "${RADIAL_SKIP_ASAN:-0}" == 1 ]]; then
    echo "test: [3/4] [4/4] ASan + UBSan stage skipped (RADIAL_SKIP_ASAN=1)"
    exit 0
fi

echo "test: [3/4] setup, preset 'asan'"
scripts/setup.sh --preset asan
echo "test: [4/4] ctest --preset asan"
tests/hermetic/beside_other_work.sh -- --preset asan
