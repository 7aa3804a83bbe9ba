#!/usr/bin/env bash
# Builds the local test image the live tests and the demo run, without any registry:
# a rootfs made from Debian's busybox-static, loaded with `docker import`.
#
#   packaging/build-test-image.sh [TAG]        (default: radial/busybox:latest)
#
# The rootfs holds /bin/busybox and one symlink per applet, /etc/passwd and /etc/group with root,
# a non-root user `radial` (1000) and `nobody` (65534), empty mount points (/proc, /sys, /dev,
# /work, and /etc/hosts, /etc/hostname, /etc/resolv.conf for Docker to bind over) and a
# world-writable sticky /tmp, and a world-writable sticky /opt/cache on the image's own file
# system (not a mount in any box), where a session's turn installs what its next turn and a
# snapshot of it keep. The image runs /bin/sh with PATH=/bin.
#
# It also carries Debian's curl with the shared libraries it loads (as ldd lists them), so a turn
# can post records to its turn socket over a unix socket or tcp like any harness would.
#
# Idempotent: the image carries the label radial.recipe, the sha256 of this script, the busybox
# and curl binaries and curl's libraries; when an image with TAG already carries the same recipe,
# nothing is done.
set -euo pipefail

tag="${1:-radial/busybox:latest}"
busybox=/bin/busybox
curl=/usr/bin/curl
script="$(readlink -f "${BASH_SOURCE[0]}")"

die() {
    echo "build-test-image: building '${tag}': $*" >&2
    exit 1
}

command -v docker >/dev/null 2>&1 ||
    die "docker CLI not found; install Debian's docker.io (scripts/setup.sh does)"
if ! dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep 'ok installed' >/dev/null ||
    [[ ! -x "${busybox}" ]]; then
    die "busybox-static is not installed (no static ${busybox}); install Debian's busybox-static (scripts/setup.sh does)"
fi
[[ -x "${curl}" ]] || die "curl is not installed (no ${curl}); install Debian's curl (scripts/setup.sh does)"
# Every library curl loads, by absolute path, plus the dynamic loader.
mapfile -t curl_libs < <(ldd "${curl}" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u)
((${#curl_libs[@]} > 0)) || die "ldd listed no libraries for ${curl}"
timeout 20 docker info >/dev/null 2>&1 ||
    die "no Docker Engine answers 'docker info'; start one (scripts/setup.sh starts dockerd)"

recipe="$(cat "${script}" "${busybox}" "${curl}" "${curl_libs[@]}" | sha256sum | cut -d' ' -f1)"

# Serialise concurrent builds of the same tag (ctest fixtures, setup.sh run twice in parallel).
lock="/tmp/radial-build-test-image.$(printf %s "${tag}" | tr -c 'A-Za-z0-9._-' '_').lock"
exec 9>"${lock}"
flock -w 300 9 || die "another build holds '${lock}' for over 300 s"

current="$(docker image inspect --format '{{index .Config.Labels "radial.recipe"}}' "${tag}" 2>/dev/null || true)"
if [[ "${current}" == "${recipe}" ]]; then
    echo "build-test-image: '${tag}' is up to date (recipe ${recipe:0:12})"
    exit 0
fi

rootfs="$(mktemp -d /tmp/radial-test-image.XXXXXX)"
trap 'rm -rf "${rootfs}"' EXIT

mkdir -p "${rootfs}"/{bin,etc,proc,sys,dev,work,root,tmp,opt/cache}
chmod 1777 "${rootfs}/tmp" "${rootfs}/opt/cache"
chmod 0700 "${rootfs}/root"
cp "${busybox}" "${rootfs}/bin/busybox"
chmod 0755 "${rootfs}/bin/busybox"
for applet in $("${busybox}" --list); do
    [[ "${applet}" == busybox ]] && continue
    ln -s busybox "${rootfs}/bin/${applet}"
done

cp "${curl}" "${rootfs}/bin/curl"
for lib in "${curl_libs[@]}"; do
    mkdir -p "${rootfs}$(dirname "${lib}")"
    cp -L "${lib}" "${rootfs}${lib}"
done

cat >"${rootfs}/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
radial:x:1000:1000:radial:/work:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
cat >"${rootfs}/etc/group" <<'EOF'
root:x:0:
radial:x:1000:
nogroup:x:65534:
EOF
chmod 0644 "${rootfs}/etc/passwd" "${rootfs}/etc/group"
# Docker bind-mounts these; empty files keep a --read-only rootfs from needing to create them.
: >"${rootfs}/etc/hosts"
: >"${rootfs}/etc/hostname"
: >"${rootfs}/etc/resolv.conf"

tar -C "${rootfs}" --numeric-owner --owner=0 --group=0 -cf - . |
    docker import \
        -c 'CMD ["/bin/sh"]' \
        -c 'ENV PATH=/bin' \
        -c "LABEL radial.recipe=${recipe}" \
        -m "radial test image from Debian busybox-static" \
        - "${tag}" >/dev/null

# Prove the image does what the tests assume: runs as an unprivileged uid with no network and a
# read-only rootfs.
out="$(docker run --rm --network none --read-only --user 65534:65534 "${tag}" sh -c 'id -u; curl --version >/dev/null && echo ok')" ||
    die "the freshly imported image does not run: ${out}"
[[ "${out}" == $'65534\nok' ]] || die "smoke run printed '${out}', expected '65534' and 'ok'"

echo "build-test-image: built '${tag}' (recipe ${recipe:0:12}, $("${busybox}" --list | wc -l) applets)"
