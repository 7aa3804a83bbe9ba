#!/usr/bin/env bash
# Keeps host-wide observation out of the test suite and the conformance harness (tests/README.md,
# "Hermetic tests"). A test may only look at what it made: its own boxes (by its own instance id or
# label), its own processes (by pid, process group, pid namespace or a marker unique to the run),
# its own files and ports. This check refuses the ways a test has looked at everything instead:
#
#   host-wide process matching   pgrep, pkill, killall, pidof, `ps -e`/`ps -A`/`ps aux`/`ps ax`
#   engine-wide listing          `docker ps` / `docker container ls` without a --filter
#   engine-wide clean-up         `docker ... prune`
#   throwing /proc reads         an ifstream or read_file() on /proc/<pid>/… of another process
#                                (it throws when the process exits mid-read)
#   ad-hoc /proc scans           iterating /proc anywhere but tests/support/host_processes.h
#
# A line that must break a rule says why, on it or on the line above: `hermetic-ok: <reason>`.
#
#   tests/hermetic/check_hermetic.sh [FILE_OR_DIR...]    (default: tests/ and plugin-api/conformance/)
#
# Prints one `path:line: rule: text` per violation and exits 1 when there is any, 0 otherwise.
set -euo pipefail

root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
skip=()
if (($# == 0)); then
    set -- "${root}/tests" "${root}/plugin-api/conformance"
    # This check and its own examples of violations are not tests.
    skip=(-not -path '*/hermetic/*')
fi

# The files to read: sources, headers, scripts and build files.
mapfile -t files < <(find "$@" -type f \
    \( -name '*.cpp' -o -name '*.h' -o -name '*.hpp' -o -name '*.c' -o -name '*.sh' \
    -o -name 'sbx-*' -o -name 'scripted-*' -o -name '*.txt' -o -name '*.cmake' \) \
    "${skip[@]}" | sort)

# Each rule: a name, an extended regex (grep -E) that finds it, and a regex that makes a matching
# line fine ("" for none).
names=() patterns=() allows=()
rule() { names+=("$1"); patterns+=("$2"); allows+=("$3"); }
rule 'host-wide process match' '(^|[^A-Za-z_.])(pgrep|pkill|killall|pidof)([^A-Za-z_]|$)' ''
rule 'host-wide ps' '(^|[^A-Za-z_."])"?ps"?,? +"?(-[A-Za-z]*[eA][A-Za-z]*|aux|ax)([^A-Za-z]|$)' ''
rule 'unfiltered docker listing' 'docker"?,? +"?(ps|container"?,? +"?ls)([^A-Za-z]|$)' 'filter'
rule 'engine-wide prune' 'docker.*prune' ''
rule 'throwing /proc read' '(ifstream|read_file)[^;]*"/proc/"' '/proc/self'
rule 'ad-hoc /proc scan' '(directory_iterator[^;]*|opendir)\("/proc"[,)]' ''

# One grep per rule over every file (a grep per file and rule took a minute on a loaded machine);
# each hit is "path:line:text" (the paths hold no ':').
status=0
for i in "${!names[@]}"; do
    while IFS= read -r hit; do
        f="${hit%%:*}" rest="${hit#*:}"
        line="${rest%%:*}" text="${rest#*:}"
        [[ "${f}" == */tests/support/host_processes.h ]] && continue
        [[ "${text}" == *hermetic-ok:* ]] && continue
        # A comment only talks about a command.
        [[ "${text}" =~ ^[[:space:]]*(//|#|\*|/\*) ]] && continue
        ((line > 1)) && [[ "$(sed -n "$((line - 1))p" "${f}")" == *hermetic-ok:* ]] && continue
        if [[ -n "${allows[i]}" ]] && grep -Eq -- "${allows[i]}" <<<"${text}"; then continue; fi
        echo "${f#"${root}/"}:${line}: ${names[i]}: ${text#"${text%%[![:space:]]*}"}"
        status=1
    done < <(grep -EnH -- "${patterns[i]}" "${files[@]}" || true)
done

if ((status != 0)); then
    echo "check_hermetic: a test must look only at what it made (tests/README.md, \"Hermetic tests\");" \
        "fix the lines above or say why on the line with 'hermetic-ok: <reason>'" >&2
fi
exit "${status}"
