#!/usr/bin/env bash
# The whole test suite, the way CI runs it (.ci/run calls this): set up and build with the default
# preset and run every test, then the Debian packages built, installed, used and purged
# (packaging/test-installed.sh), then the ASan + UBSan build's tests.
#
#   sudo scripts/test.sh
#
# RADIAL_SKIP_ASAN=1 skips the sanitizer stage, for local iteration only; CI always runs it.
set -euo pipefail

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

echo "test: [1/5] setup, preset 'default'"
scripts/setup.sh --preset default
# Both stages run beside an unrelated `sleep 30` and an unrelated box labelled radial-turn-x-y,
# which no test may count or touch (tests/README.md, "Hermetic tests").
echo "test: [2/5] ctest --preset default"
tests/hermetic/beside_other_work.sh -- --preset default

# It installs and purges the radiald packages on this machine (root needed; it refuses to run if
# they are installed already).
echo "test: [3/5] the packages, installed (packaging/test-installed.sh)"
start=$SECONDS
packaging/test-installed.sh build
echo "test: [3/5] took $((SECONDS - start)) s"

if [[ "${RADIAL_SKIP_ASAN:-0}" == 1 ]]; then
    echo "test: [4/5] [5/5] ASan + UBSan stage skipped (RADIAL_SKIP_ASAN=1)"
    exit 0
fi

echo "test: [4/5] setup, preset 'asan'"
scripts/setup.sh --preset asan
echo "test: [5/5] ctest --preset asan"
tests/hermetic/beside_other_work.sh -- --preset asan
