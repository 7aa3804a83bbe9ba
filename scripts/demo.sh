#!/usr/bin/env bash
# The main job, end to end: set the machine up, then run one real turn through radiald in a
# hardened box and show what it left on the host.
#
#   scripts/demo.sh     (as root)
#
# The turn runs in the local test image (radial/busybox:latest) as a box uid radiald leases for it
# (never root), with no network and a read-only rootfs; it writes /work/hello.txt into the
# workspace, which radiald mounts at /work.
set -euo pipefail

case "$#:${1-}" in
    0:) ;;
    1:-h | 1:--help)
        sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "scripts/demo.sh: unknown argument '$1'; it takes none (see scripts/demo.sh --help)" >&2
        exit 2
        ;;
esac

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

image=radial/busybox:latest
radiald=build/bin/radiald

echo "demo: [1/3] setup (scripts/setup.sh)"
scripts/setup.sh

[[ -x "${radiald}" ]] ||
    { echo "demo: running a turn: '${radiald}' was not built; see the build output above" >&2; exit 1; }

demo_dir="$(mktemp -d /tmp/radial-demo.XXXXXX)"
ws="${demo_dir}/workspace"
record="${demo_dir}/record.json"
mkdir "${ws}"
# A workspace is some user's work (here nobody's, 65534): radiald never hands a root-owned tree to
# a box, and hands this one to the box's uid for the turn and back to its owner after it.
chown 65534:65534 "${ws}"

echo "demo: [2/3] a turn in '${image}', workspace '${ws}'"
echo "+ ${radiald} turn --image ${image} --workspace ${ws} --record-file ${record} -- sh -c '...'"
rc=0
# shellcheck disable=SC2016 # $(id -u) expands inside the box, not here
"${radiald}" turn --image "${image}" --workspace "${ws}" --record-file "${record}" -- \
    sh -c 'echo "hello from inside the box: $(id -u)"; uname -a; echo "written by the turn" > /work/hello.txt' ||
    rc=$?
echo "demo: the turn exited ${rc}"

echo "demo: [3/3] on the host"
echo "+ cat ${ws}/hello.txt"
cat "${ws}/hello.txt" || echo "demo: the turn left no ${ws}/hello.txt" >&2
echo "+ cat ${record}   (the terminal record)"
cat "${record}" || echo "demo: the turn left no terminal record at ${record}" >&2
echo
echo "demo: files kept in ${demo_dir} (remove with: rm -rf ${demo_dir})"
exit "${rc}"
