#!/usr/bin/env bash
# Removes what the tests' recorded instances left on the engine (tests/support/owned_instances.h):
# a live test that ctest killed at its TIMEOUT (SIGKILL) ran no destructor, so its boxes and
# snapshot images outlive it. Run by ctest after the live tests (the fixture test
# remove_owned_boxes, tests/CMakeLists.txt); touches nothing but the boxes and images of the ids
# recorded (docs/design.md §16):
#
#   containers named radial-turn-<id>-…, radial-check-<id>-…, radial-session-<id>-…,
#   radial-pool-<id>-…, and the images radial-snapshot-<id>:<tag> (removed by that name, which
#   only untags an image another name holds too)
#
# then the records. A record whose test still runs (its pid, on its first line, is alive: another
# ctest in this build tree) is left. A record whose removal failed is kept for the next run.
#
#   tests/support/remove_owned_boxes.sh DIR
set -euo pipefail
dir=${1:?usage: remove_owned_boxes.sh DIR}
[[ -d "${dir}" ]] || exit 0
say() { echo "remove_owned_boxes: $*"; }

# Removes the boxes and snapshot images of instance $1; fails when one of them stays.
remove_instance() {
    local id=$1 ok=0 kind prefix names name refs ref
    for kind in turn check session pool; do
        prefix="radial-${kind}-${id}-"
        names=$(docker ps -a --filter "name=${prefix}" --format '{{.Names}}') || { ok=1; continue; }
        # The name filter matches anywhere in a name: only those that start with our prefix.
        for name in ${names}; do
            [[ "${name}" == "${prefix}"* ]] || continue
            if docker rm -f "${name}" >/dev/null; then say "removed box ${name}"; else ok=1; fi
        done
    done
    refs=$(docker image ls "radial-snapshot-${id}" --format '{{.Repository}}:{{.Tag}}') || return 1
    for ref in ${refs}; do
        [[ "${ref}" != *'<none>'* ]] || continue
        if docker image rm "${ref}" >/dev/null; then say "removed image ${ref}"; else ok=1; fi
    done
    return "${ok}"
}

status=0
shopt -s nullglob
for record in "${dir}"/id.* "${dir}"/state.*; do
    pid="" path=""
    { read -r pid && read -r path; } <"${record}" || true
    if [[ "${pid}" =~ ^[0-9]+$ && -e "/proc/${pid}" ]]; then
        continue # its test is still running
    fi
    name=${record##*/}
    id=""
    if [[ "${name}" == id.* ]]; then
        id=${name#id.}
    elif [[ -n "${path}" && -f "${path}/instance-id" ]]; then
        read -r id <"${path}/instance-id" || true
    fi
    # An instance id is [a-z0-9]{1,32} (no '-': no other instance's prefix starts with ours).
    if [[ "${id}" =~ ^[a-z0-9]{1,32}$ ]] && ! remove_instance "${id}"; then
        say "instance ${id}: not everything could be removed; its record (${record}) is kept" >&2
        status=1
        continue
    fi
    rm -f "${record}"
done
exit "${status}"
