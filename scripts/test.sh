#!/usr/bin/env bash
# The whole test suite, the way CI runs it (.ci/run calls this): set up and build with the default
# preset and run every test, then the Debian packages built, installed, used and purged
# (packaging/test-installed.sh), then the ASan + UBSan build's tests. Prints each stage's time at
# the end.
#
#   sudo scripts/test.sh
#
# RADIAL_SKIP_ASAN=1 skips the sanitizer stage, for local iteration only; CI always runs it.
set -euo pipefail

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

times=()
total_start=$SECONDS
# stage "N/5 what" COMMAND...: runs it, records how long it took; a failure ends the run (set -e)
# after the times so far are printed.
stage() {
    local name="$1" start=$SECONDS
    shift
    echo "test: [${name}]"
    local rc=0
    "$@" || rc=$?
    times+=("$(printf '%5d s  %s' $((SECONDS - start)) "${name}")")
    if ((rc != 0)); then
        print_times
        echo "test: [${name}] failed (exit ${rc})"
        exit "${rc}"
    fi
}
print_times() {
    echo "test: stage times"
    printf 'test:   %s\n' "${times[@]}"
    printf 'test:   %5d s  total\n' $((SECONDS - total_start))
}

# --with-gvisor: the live suite runs turns under gVisor (tests/host/cli/radiald_gvisor_live_test.cpp).
stage "1/5 setup, preset 'default'" scripts/setup.sh --preset default --with-gvisor
# Both ctest stages run beside an unrelated `sleep 30` and an unrelated box labelled
# radial-turn-x-y, which no test may count or touch (tests/README.md, "Hermetic tests").
stage "2/5 ctest --preset default" tests/hermetic/beside_other_work.sh -- --preset default
# It installs and purges the radiald packages on this machine (root needed; it refuses to run if
# they are installed already).
stage "3/5 the packages, installed (packaging/test-installed.sh)" packaging/test-installed.sh build

if [[ "${RADIAL_SKIP_ASAN:-0}" == 1 ]]; then
    echo "test: [4/5] [5/5] ASan + UBSan stage skipped (RADIAL_SKIP_ASAN=1)"
    print_times
    exit 0
fi

stage "4/5 setup, preset 'asan'" scripts/setup.sh --preset asan
stage "5/5 ctest --preset asan" tests/hermetic/beside_other_work.sh -- --preset asan
print_times
