#!/bin/sh
# examples/bubblewrap/make-rootfs.sh DIR [IMAGE] — a root filesystem directory for the bubblewrap
# runtime (docs/design.md §5.11). With IMAGE, the filesystem of a local Docker image is exported into DIR
# (docker create + docker export). Without, DIR gets the host's static busybox (Debian's
# busybox-static) with one symlink per applet, /etc/passwd and /etc/group with root, radial (1000)
# and nobody (65534), and empty /proc, /dev, /tmp, /work mount points. Replaces DIR.
set -eu
dir=${1:?usage: make-rootfs.sh DIR [IMAGE]}
image=${2:-}
rm -rf "$dir"
mkdir -p "$dir"
if [ -n "$image" ]; then
    id=$(docker create "$image" /bin/true)
    trap 'docker rm -f "$id" >/dev/null 2>&1 || true' EXIT
    docker export "$id" | tar -x -C "$dir"
    exit 0
fi
busybox=${BUSYBOX:-/bin/busybox}
# A dynamic busybox would need the host's libraries inside the box: ldd fails for a static one.
if [ ! -x "$busybox" ] || ldd "$busybox" >/dev/null 2>&1; then
    echo "make-rootfs.sh: '$busybox' is not a static busybox; install busybox-static or pass IMAGE" >&2
    exit 1
fi
mkdir -p "$dir/bin" "$dir/etc" "$dir/proc" "$dir/dev" "$dir/tmp" "$dir/work" "$dir/root"
cp "$busybox" "$dir/bin/busybox"
for applet in $("$busybox" --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$dir/bin/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nradial:x:1000:1000:radial:/work:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' > "$dir/etc/passwd"
printf 'root:x:0:\nradial:x:1000:\nnogroup:x:65534:\n' > "$dir/etc/group"
chmod 1777 "$dir/tmp"
