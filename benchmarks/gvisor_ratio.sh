#!/usr/bin/env bash
# What gVisor costs a turn (docs/design.md §13.9): `radiald turn -- true` through the docker
# runtime under the engine's default runtime (runc) and under runsc ([run.docker] ociRuntime =
# "runsc"), in alternating pairs so drift in the machine's load hits both alike. Prints each
# side's median and the ratio runsc/runc of the medians, and the median of the per-pair ratios.
# Needs runsc registered with the engine (sudo scripts/setup.sh --with-gvisor). Not a test: a
# measurement.
#
#   benchmarks/gvisor_ratio.sh [RADIALD] [IMAGE] [PAIRS]
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
radiald="${1:-build/bin/radiald}"
image="${2:-radial/busybox:latest}"
pairs="${3:-10}"

docker info --format '{{json .Runtimes}}' | grep '"runsc"' >/dev/null || {
    echo "gvisor_ratio: the engine does not list the runtime 'runsc'; run sudo scripts/setup.sh --with-gvisor" >&2
    exit 1
}

work="$(mktemp -d /tmp/radial-gvisor-ratio.XXXXXX)"
trap 'rm -rf "${work}"' EXIT
for side in runc runsc; do
    mkdir -p "${work}/${side}"
    {
        printf '[run]\nstateDir = "%s/%s/state"\n\n[run.docker]\npull = "never"\n' "${work}" "${side}"
        [[ "${side}" == runsc ]] && printf 'ociRuntime = "runsc"\n'
    } >"${work}/${side}/radiald.toml"
done

time_turn() { # prints the seconds one turn of `true` under side $1 took; fails if the turn did
    local t0 t1
    t0="$(now)"
    "${radiald}" turn --config "${work}/$1/radiald.toml" --image "${image}" -- true >/dev/null 2>"${work}/$1/err" ||
        { echo "gvisor_ratio: the turn under $1 failed:" >&2; cat "${work}/$1/err" >&2; exit 1; }
    t1="$(now)"
    awk -v a="${t0}" -v b="${t1}" 'BEGIN { printf "%.4f\n", b - a }'
}

# One unmeasured turn each: the first turn pays for cold caches (the image, runsc's binary).
time_turn runc >/dev/null
time_turn runsc >/dev/null
: >"${work}/runc.s"
: >"${work}/runsc.s"
: >"${work}/ratio"
for i in $(seq 1 "${pairs}"); do
    # Alternate which side goes first, so neither always follows the other's teardown.
    if ((i % 2)); then
        a="$(time_turn runc)"
        b="$(time_turn runsc)"
    else
        b="$(time_turn runsc)"
        a="$(time_turn runc)"
    fi
    echo "${a}" >>"${work}/runc.s"
    echo "${b}" >>"${work}/runsc.s"
    awk -v a="${a}" -v b="${b}" 'BEGIN { printf "%.4f\n", b / a }' >>"${work}/ratio"
done
c="$(median <"${work}/runc.s")"
g="$(median <"${work}/runsc.s")"
r="$(median <"${work}/ratio")"
printf 'radiald turn -- true, runc   : %7.3f s (median of %s)\n' "${c}" "${pairs}"
printf 'radiald turn -- true, runsc  : %7.3f s\n' "${g}"
awk -v c="${c}" -v g="${g}" 'BEGIN { printf "ratio runsc/runc (medians)   : %7.2f\n", g / c }'
printf 'ratio runsc/runc (per pair)  : %7.2f (median)\n' "${r}"
