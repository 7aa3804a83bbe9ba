#!/usr/bin/env bash
# The whole test suite, the way CI runs it (.ci/run calls this): set up and build with the default
# preset and run every test but the unit tests, then the Debian packages built, installed, used and
# purged (packaging/test-installed.sh), then the unit tests beside a CPU hog, then the ASan + UBSan
# build's tests. Every test of the default build runs once, the unit tests under load (a harder
# condition than a quiet machine; they also run quiet under ASan in stage 6).
# Prints each stage's time at the end.
#
# The ASan + UBSan build (stage 5) compiles while stages 2 to 4 run, at idle CPU and I/O priority
# (SCHED_IDLE, ionice class idle): the live tests mostly wait on the engine, so the compiler gets
# the cores they leave. They still slow down some (stage 2 took 406 s beside it, about 300 s
# alone), far less than the build takes on its own. Stage 5 then waits for it and prints its log.
#
#   scripts/test.sh     (as root)
#
# RADIAL_SKIP_ASAN=1 skips the sanitizer stage, for local iteration only; CI always runs it.
set -euo pipefail

case "$#:${1-}" in
    0:) ;;
    1:-h | 1:--help)
        sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "scripts/test.sh: unknown argument '$1'; it takes none (see scripts/test.sh --help)" >&2
        exit 2
        ;;
esac

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

times=()
total_start=$SECONDS
# stage "N/6 what" COMMAND...: runs it, records how long it took; a failure ends the run (set -e)
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
stage "1/6 setup, preset 'default'" scripts/setup.sh --preset default --with-gvisor

asan_pid=""
asan_log=""
# Starts `scripts/setup.sh --preset asan` in its own process group at idle priority; its output
# goes to a log that wait_asan_build prints. An exit before then (a failed stage) kills it.
start_asan_build() {
    asan_log="$(mktemp /tmp/radial-asan-build.XXXXXX.log)"
    asan_start=$SECONDS
    setsid chrt --idle 0 ionice -c 3 scripts/setup.sh --preset asan >"${asan_log}" 2>&1 </dev/null &
    asan_pid=$!
    trap 'stop_asan_build' EXIT
    echo "test: [5/6] the ASan + UBSan build started in the background at idle priority (pid ${asan_pid}, log ${asan_log})"
}
stop_asan_build() {
    if [[ -n "${asan_pid}" ]] && kill -0 "${asan_pid}" 2>/dev/null; then
        kill -TERM -- "-${asan_pid}" 2>/dev/null || true
        wait "${asan_pid}" 2>/dev/null || true
        echo "test: the background ASan + UBSan build was stopped (log ${asan_log})"
    fi
    [[ -n "${asan_log}" ]] && rm -f "${asan_log}"
    return 0
}
wait_asan_build() {
    local rc=0
    wait "${asan_pid}" || rc=$?
    asan_pid=""
    cat "${asan_log}"
    echo "test: the ASan + UBSan build took $((SECONDS - asan_start)) s in all, most of it beside stages 2 and 3"
    return "${rc}"
}
if [[ "${RADIAL_SKIP_ASAN:-0}" != 1 ]]; then
    start_asan_build
fi

# Every ctest stage runs beside an unrelated `sleep 30` and an unrelated box labelled
# radial-turn-x-<pid>, which no test may count or touch (tests/README.md, "Hermetic tests"). The unit
# tests are stage 4's.
stage "2/6 ctest --preset default-beyond-unit" \
    tests/hermetic/beside_other_work.sh -- --preset default-beyond-unit
# It installs and purges the radiald packages on this machine (root needed; it refuses to run if
# they are installed already).
stage "3/6 the packages, installed (packaging/test-installed.sh)" packaging/test-installed.sh build

# The unit tests, beside `stress-ng --cpu 4` (two CPU workers per core on CI's 2-core
# machine): every budget a test waits with scales with the load factor the suite measures at its
# start, and this stage shows that it does (tests/README.md, "Time under load"). About 190 s; the
# background ASan build (idle priority) waits meanwhile.
stage "4/6 the unit tests beside a CPU hog (stress-ng --cpu 4)" \
    tests/hermetic/beside_other_work.sh --cpu-hog 4 -- --preset default -L unit

if [[ "${RADIAL_SKIP_ASAN:-0}" == 1 ]]; then
    echo "test: [5/6] [6/6] ASan + UBSan stage skipped (RADIAL_SKIP_ASAN=1)"
    print_times
    exit 0
fi

stage "5/6 setup, preset 'asan' (the rest of the background build)" wait_asan_build
stage "6/6 ctest --preset asan" tests/hermetic/beside_other_work.sh -- --preset asan
print_times
