#!/bin/sh
# tests/conformance/expect_verdict.sh STATUS TEXT... -- COMMAND... — runs a conformance run and
# asserts how it ended (docs/design.md §5.11): its exit status is STATUS ("nonzero" for any failure), and its
# output contains every TEXT (fixed strings, e.g. the verdict line and the reason of the check
# expected to fail), and none of the TEXTs written !TEXT (e.g. a path of the build machine).
# Prints the run's output, then what did not match. Exit 0 when all match.
set -u
want_status=${1:?usage: expect_verdict.sh STATUS TEXT... -- COMMAND...}
shift
texts_file=$(mktemp)
out_file=$(mktemp)
trap 'rm -f "$texts_file" "$out_file"' EXIT
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    printf '%s\n' "$1" >> "$texts_file"
    shift
done
[ $# -gt 0 ] || { echo "expect_verdict.sh: missing -- COMMAND" >&2; exit 2; }
shift
"$@" > "$out_file" 2>&1
status=$?
cat "$out_file"
echo "---- expect_verdict: exit status $status"
failed=0
if [ "$want_status" = nonzero ]; then
    [ "$status" -ne 0 ] || { echo "expect_verdict: FAIL: the run passed; it must fail"; failed=1; }
elif [ "$status" -ne "$want_status" ]; then
    echo "expect_verdict: FAIL: exit status $status, expected $want_status"
    failed=1
fi
while IFS= read -r text; do
    case $text in
    !*)
        text=${text#!}
        if grep -qF -- "$text" "$out_file"; then
            echo "expect_verdict: FAIL: the output contains: $text"
            failed=1
        else
            echo "expect_verdict: absent, as it must be: $text"
        fi
        continue
        ;;
    esac
    if grep -qF -- "$text" "$out_file"; then
        echo "expect_verdict: found: $text"
    else
        echo "expect_verdict: FAIL: the output does not contain: $text"
        failed=1
    fi
done < "$texts_file"
exit $failed
