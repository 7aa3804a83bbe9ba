#!/usr/bin/env bash
# The README's two commands, scripts/demo.sh and scripts/test.sh, answer --help without setting
# anything up, and refuse an argument they do not take (exit 2, naming it) instead of running: a
# `--help` must never start the 20-minute suite or a turn. .ci/run passes its arguments through.
set -uo pipefail
repo="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
failed=0
fail() {
    echo "FAIL: $*" >&2
    failed=1
}
for script in scripts/demo.sh scripts/test.sh .ci/run; do
    for help in -h --help; do
        out="$(timeout 20 "${repo}/${script}" "${help}" 2>&1)"
        rc=$?
        [[ ${rc} -eq 0 ]] || fail "${script} ${help}: exit ${rc}: ${out}"
        [[ "${out}" == *"(as root)"* || "${out}" == *"scripts/test.sh"* ]] ||
            fail "${script} ${help}: no help text: ${out}"
        [[ "${out}" != *"setup:"* && "${out}" != *"test: ["* && "${out}" != *"demo: ["* ]] ||
            fail "${script} ${help}: started its work: ${out}"
    done
    out="$(timeout 20 "${repo}/${script}" --bogus 2>&1)"
    rc=$?
    [[ ${rc} -eq 2 ]] || fail "${script} --bogus: exit ${rc}, not 2: ${out}"
    [[ "${out}" == *"unknown argument '--bogus'"* ]] || fail "${script} --bogus: ${out}"
    # An empty first argument is an argument too, and so is --help with more after it.
    for args in '"" --bogus' '--help --bogus'; do
        eval "set -- ${args}"
        out="$(timeout 20 "${repo}/${script}" "$@" 2>&1)"
        rc=$?
        [[ ${rc} -eq 2 ]] || fail "${script} ${args}: exit ${rc}, not 2: ${out}"
        [[ "${out}" != *"setup:"* && "${out}" != *"test: ["* && "${out}" != *"demo: ["* ]] ||
            fail "${script} ${args}: started its work: ${out}"
    done
done
exit "${failed}"
