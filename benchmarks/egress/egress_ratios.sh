#!/usr/bin/env bash
# What brokered egress costs (docs/design.md §9.7), each figure from alternating pairs in one run
# (which side goes first alternates, so drift in the machine's load hits both). Both sides are a
# real `radiald turn` of the same image running curl against the same server on 127.0.0.2:
#
#   1. a MIB MiB download through the broker (`--egress`, the box has no network)
#      / the same download direct (run.network = "host": the box's own loopback is the host's)
#      as throughput, goal >= 0.8
#   2. the added latency of a small request: curl's time_total through the broker minus direct,
#      medians of 20 requests per turn (reported, no goal)
#
# curl's own figures (time_total, size_download) time the transfer alone, not the box's start.
# Prints each pair, then the medians. Not a test: a measurement. Needs a Docker Engine, the image,
# python3 and a built radiald.
#
#   benchmarks/egress/egress_ratios.sh [RADIALD] [IMAGE] [PAIRS] [MIB]
set -euo pipefail
here="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"
# shellcheck source=../lib.sh
source "${here}/../lib.sh"
radiald="$(realpath "${1:-build/bin/radiald}")"
image="${2:-radial/busybox:latest}"
pairs="${3:-5}"
mib="${4:-256}"

work="$(mktemp -d /tmp/radial-egress-bench.XXXXXX)"
server_pid=
cleanup() {
    [[ -n "${server_pid}" ]] && kill "${server_pid}" 2>/dev/null
    rm -rf "${work}"
}
trap cleanup EXIT

mkdir -p "${work}/www"
head -c "$((mib << 20))" /dev/zero >"${work}/www/big"
echo small >"${work}/www/small"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.2",0)); print(s.getsockname()[1])')"
python3 -m http.server --bind 127.0.0.2 --directory "${work}/www" "${port}" >/dev/null 2>&1 &
server_pid=$!
for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.2:${port}/small" && break
    sleep 0.1
done

brokered="${work}/brokered.toml"
direct="${work}/direct.toml"
printf '[run]\nstateDir = "%s/state-b"\n[run.docker]\npull = "never"\n[run.egress]\nallow = ["pkg.test:%s"]\nallowRanges = ["127.0.0.2/32"]\nhosts = { "pkg.test" = "127.0.0.2" }\nmaxBytesIn = "4g"\n' \
    "${work}" "${port}" >"${brokered}"
printf '[run]\nstateDir = "%s/state-d"\nnetwork = "host"\n[run.docker]\npull = "never"\n' \
    "${work}" >"${direct}"

# One turn: the download's bytes per second, then the median time_total of 20 small requests.
measure() { # CONFIG URL_HOST [FLAGS...]
    local config="$1" host="$2"
    shift 2
    "${radiald}" turn --config "${config}" --image "${image}" "$@" -- sh -c "
        curl -s -o /dev/null -w '%{speed_download}\n' http://${host}:${port}/big
        for i in \$(seq 20); do
            curl -s -o /dev/null -w '%{time_total}\n' http://${host}:${port}/small
        done | sort -g | sed -n 10p" 2>/dev/null
}

printf '%-5s %14s %14s %9s %12s %12s\n' pair brokered_B/s direct_B/s ratio broker_s direct_s
ratios=() added=()
for i in $(seq "${pairs}"); do
    if ((i % 2)); then
        b="$(measure "${brokered}" pkg.test --egress "pkg.test:${port}")"
        d="$(measure "${direct}" 127.0.0.2)"
    else
        d="$(measure "${direct}" 127.0.0.2)"
        b="$(measure "${brokered}" pkg.test --egress "pkg.test:${port}")"
    fi
    b_speed="$(sed -n 1p <<<"${b}")" b_small="$(sed -n 2p <<<"${b}")"
    d_speed="$(sed -n 1p <<<"${d}")" d_small="$(sed -n 2p <<<"${d}")"
    r="$(ratio "${b_speed}" "${d_speed}")"
    ratios+=("${r}")
    added+=("$(awk -v a="${b_small}" -v b="${d_small}" 'BEGIN { printf "%.6f\n", a - b }')")
    printf '%-5s %14.0f %14.0f %9s %12s %12s\n' "${i}" "${b_speed}" "${d_speed}" "${r}" \
        "${b_small}" "${d_small}"
done
echo "median throughput ratio (brokered / direct, goal >= 0.8): $(printf '%s\n' "${ratios[@]}" | median)"
echo "median added latency of a small request (s): $(printf '%s\n' "${added[@]}" | median)"
