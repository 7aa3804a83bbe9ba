#!/usr/bin/env bash
# The Debian packages tested as shipped: build them, install them on this machine, use radiald from
# the installed paths, then purge them.
#
#   sudo packaging/test-installed.sh [BUILD_DIR]        (default: build, a built 'default' preset)
#
# 1. `cpack -G DEB` in BUILD_DIR, packages into a private directory; the binaries in radiald and
#    radial-plugin-dev are stripped and their debug information is in the -dbgsym packages.
# 2. `apt-get install` of radiald and radial-plugin-dev from those files; every file lands where
#    docs/operations.md says (/usr/bin/radiald, /usr/lib/radial/runtimes,
#    /etc/radial/radiald.toml, the unit, the manual page, the bash completion).
# 3. From the installed paths: `radiald plugins`, `radiald config check` of the packaged config
#    (which creates nothing), then a real turn with a test config: the packaged file with its own
#    stateDir and instanceId and pull = "never" (the local image radial/busybox:latest).
# 4. The unit's ExecStart line, started by hand with the unit's capability bounding set,
#    no-new-privileges and umask (see "Not reproduced" below), on a private state directory; a
#    turn submitted to it posts a record through its turn socket and succeeds; SIGTERM stops it
#    with exit 0.
# 5. The bubblewrap example radial-plugin-dev ships (/usr/share/radial-plugin-api/examples/bubblewrap)
#    configured and built against the installed radial-plugin-dev only, and its conformance run
#    with the installed radial-conformance; the package holds no radial/host/ header and the
#    harness no path of the build machine. Then the example plugin of docs/plugin-authors.md,
#    extracted from the page as written, built and run through the installed harness the same way.
#    Both conformance runs here take the checks in $installed_checks: what is proven here is the
#    installed package (find_package, the installed harness loading, creating, running and
#    killing); every check of the same sources and the same harness runs in the build tree's
#    ctest (conformance_bubblewrap_out_of_tree, conformance_guide_example).
# 6. `apt-get purge`, and nothing of the packages is left.
#
# Installing packages changes the machine: the packages are purged whatever happens (trap), and
# the script refuses to run when radiald or radial-plugin-dev is installed already (it would
# replace and then purge someone else's installation).
#
# Not reproduced here: the unit's namespace and seccomp settings (ProtectSystem=, PrivateTmp=,
# SystemCallFilter=, RestrictAddressFamilies=, MemoryDenyWriteExecute=, …) need systemd as PID 1,
# which CI machines and containers usually lack. Where systemd runs, the same daemon check can be
# made with `systemd-run --wait -p …` and the unit's properties.
set -euo pipefail

source_dir="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
build_dir="$(readlink -f "${1:-${source_dir}/build}")"
image="radial/busybox:latest"
unit_file=/usr/lib/systemd/system/radiald.service
packages=(radiald radial-plugin-dev)

step() { echo "test-installed: == $*"; }
die() {
    echo "test-installed: FAILED: $*" >&2
    exit 1
}

# --- preconditions -------------------------------------------------------------------------------
[[ $(id -u) == 0 ]] || die "installing packages needs root; run it with sudo"
[[ -f "${build_dir}/CPackConfig.cmake" ]] ||
    die "'${build_dir}' is not a configured build directory (no CPackConfig.cmake); run 'cmake --preset default && cmake --build --preset default' first"
for p in "${packages[@]}" radiald-dbgsym radial-plugin-dev-dbgsym; do
    status="$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)"
    if [[ -n "$status" && "$status" != "unknown ok not-installed" ]]; then
        die "package '$p' is already on this machine ($status); this test installs and purges its own and will not touch that one: 'apt-get purge $p' first if it is yours to remove"
    fi
done
for tool in cpack dpkg-deb readelf setpriv capsh cmake ctest lintian; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' is not installed (scripts/setup.sh installs what this test needs)"
done
docker image inspect "$image" >/dev/null 2>&1 ||
    die "the local test image '$image' is missing; build it with packaging/build-test-image.sh"

work="$(mktemp -d "${TMPDIR:-/tmp}/radial-installed-XXXXXX")"
chmod 0755 "$work" # the box user (65534) reaches the workspace below it
# An instance id unique to this run: its boxes are the only ones this script lists or removes.
instance="pkgtest$$$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
installed=0
daemon_pid=

cleanup() {
    local rc=$?
    set +e
    if [[ -n "$daemon_pid" ]] && kill -0 "$daemon_pid" 2>/dev/null; then
        kill -KILL "$daemon_pid"
        wait "$daemon_pid" 2>/dev/null
    fi
    # Boxes of this run only: the label's value starts with exactly our instance's prefix.
    docker ps -a --filter "name=radial-turn-${instance}-" --format '{{.ID}} {{.Label "radial.label"}}' 2>/dev/null |
        while read -r id label; do
            [[ "$label" == "radial-turn-${instance}-"* ]] && docker rm -f "$id" >/dev/null
        done
    if ((installed)); then
        step "purging ${packages[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get purge -y "${packages[@]}" >"$work/purge.log" 2>&1 ||
            { cat "$work/purge.log" >&2; rc=1; }
    fi
    rm -rf "$work"
    if ((rc == 0)); then echo "test-installed: passed"; else echo "test-installed: FAILED (exit $rc)" >&2; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Polls "$@" until it succeeds, for at most $1 seconds.
await() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.2
    done
}

# --- 1. build the packages -------------------------------------------------------------------------
step "cpack -G DEB in ${build_dir}"
(cd "$build_dir" && cpack -G DEB -B "$work/pkgs") >"$work/cpack.log" 2>&1 || {
    cat "$work/cpack.log" >&2
    die "cpack failed"
}
deb() { compgen -G "$work/pkgs/$1" | head -n1; }
radiald_deb="$(deb 'radiald_*.deb')"
dev_deb="$(deb 'radial-plugin-dev_*.deb')"
dbgsym="$(deb 'radiald-dbgsym_*.*deb')"
[[ -f "$radiald_deb" && -f "$dev_deb" ]] || die "cpack made no radiald/radial-plugin-dev .deb: $(ls "$work/pkgs")"
[[ -f "$dbgsym" ]] || die "cpack made no radiald-dbgsym package: $(ls "$work/pkgs")"
for f in "$work"/pkgs/*.deb "$work"/pkgs/*.ddeb; do
    [[ -f "$f" ]] || continue
    printf 'test-installed:    %-45s %6s KiB file, %6s KiB installed\n' "$(basename "$f")" \
        "$(($(stat -c %s "$f") / 1024))" "$(dpkg-deb -f "$f" Installed-Size)"
done

# Every package as shipped, the -dbgsym ones included, passes lintian without an error (issue: a
# package a distribution would refuse is not done); warnings are shown.
step "lintian"
lintian_rc=0
# Its scratch files (mldbm-elf-*) in this run's directory, removed with it: lintian leaves them in
# $TMPDIR.
mkdir "$work/lintian-tmp"
TMPDIR="$work/lintian-tmp" lintian --fail-on error "$work"/pkgs/*.deb "$work"/pkgs/*.ddeb >"$work/lintian.out" 2>&1 || lintian_rc=$?
grep -v '^running with root privileges' "$work/lintian.out" || true
((lintian_rc == 0)) || die "lintian found errors in the packages (above; exit $lintian_rc)"

# `... | grep PAT >/dev/null`, never `grep -q`, throughout: under pipefail a producer still writing
# when grep -q has matched and left dies of SIGPIPE, and the pipeline then reads as "no match".
step "stripped binaries, debug information in radiald-dbgsym"
mkdir "$work/x" "$work/dbg"
dpkg-deb -x "$radiald_deb" "$work/x"
dpkg-deb -x "$dbgsym" "$work/dbg"
for bin in "$work/x/usr/bin/radiald" "$work/x/usr/lib/radial/radial-plugin-host" "$work"/x/usr/lib/radial/runtimes/*.so; do
    if readelf -S "$bin" | grep '\.debug_info' >/dev/null; then die "$(basename "$bin") is shipped with debug information"; fi
    if readelf -S "$bin" | grep '\.symtab' >/dev/null; then die "$(basename "$bin") is shipped with a symbol table"; fi
    id="$(readelf -n "$bin" 2>/dev/null | awk '/Build ID/ { print $3 }')"
    [[ -n "$id" ]] || die "$(basename "$bin") has no build id"
    debug="$work/dbg/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"
    [[ -f "$debug" ]] || die "no debug file for $(basename "$bin") (build id $id) in radiald-dbgsym"
    readelf -S "$debug" 2>/dev/null | grep '\.debug_info' >/dev/null || die "$debug holds no debug information"
done

# --- 2. install ------------------------------------------------------------------------------------
step "apt-get install $(basename "$radiald_deb") $(basename "$dev_deb")"
installed=1
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$radiald_deb" "$dev_deb" \
    >"$work/install.log" 2>&1 || {
    cat "$work/install.log" >&2
    die "apt-get install failed"
}
for f in /usr/bin/radiald /usr/lib/radial/runtimes/docker.so /usr/lib/radial/runtimes/sandbox.so \
    /etc/radial/radiald.toml "$unit_file" /usr/share/man/man8/radiald.8.gz \
    /usr/share/bash-completion/completions/radiald /usr/bin/radial-conformance \
    /usr/lib/cmake/RadialPluginApi/RadialPluginApiConfig.cmake /usr/share/man/man1/radial-conformance.1.gz \
    /usr/share/doc/radiald/copyright /usr/share/doc/radiald/changelog.gz \
    /usr/share/doc/radial-plugin-dev/copyright /usr/share/doc/radial-plugin-dev/changelog.gz; do
    [[ -e "$f" ]] || die "the packages did not install $f"
done
dpkg-query -W -f='${Conffiles}\n' radiald | grep '/etc/radial/radiald.toml' >/dev/null ||
    die "/etc/radial/radiald.toml is not a conffile of radiald"
zcat /usr/share/man/man8/radiald.8.gz | grep '^\.SH NAME' >/dev/null || die "radiald.8.gz is not a manual page"
zcat /usr/share/man/man8/radiald.8.gz | grep 'config check' >/dev/null || die "radiald(8) does not document 'config check'"
bash -n /usr/share/bash-completion/completions/radiald || die "the bash completion does not parse"

# --- 3. the installed radiald ---------------------------------------------------------------------
step "radiald --version, radiald plugins"
/usr/bin/radiald --version
/usr/bin/radiald plugins --config /etc/radial/radiald.toml | tee "$work/plugins.out"
grep -q '^docker .*/usr/lib/radial/runtimes/docker.so$' "$work/plugins.out" || die "'radiald plugins' does not list the docker runtime"
grep -q '^sandbox .*/usr/lib/radial/runtimes/sandbox.so$' "$work/plugins.out" || die "'radiald plugins' does not list the sandbox runtime"

step "radiald config check of the packaged config"
default_state_existed=0
[[ -e /var/lib/radial ]] && default_state_existed=1
/usr/bin/radiald config check --config /etc/radial/radiald.toml | tee "$work/check.out"
grep -q '^plugin  *\/usr\/lib\/radial\/runtimes\/docker.so$' "$work/check.out" || die "config check names no plugin path"
grep -q '^config ok$' "$work/check.out" || die "config check did not say 'config ok'"
if ((!default_state_existed)) && [[ -e /var/lib/radial ]]; then
    die "'radiald config check' created /var/lib/radial; it must change nothing"
fi

# The packaged config with this run's own state directory and instance id, and no pulls. A numeric
# box user makes radiald hand each turn's socket to that user (chown), so the daemon below shows
# that the unit's capability bounding set is enough for it, and for the clean-up after it.
state="$work/state"
config="$work/radiald.toml"
sed -e "s|^\[run\]\$|[run]\nstateDir = \"${state}\"\ninstanceId = \"${instance}\"\nuser = \"65534:65534\"|" \
    -e 's|^pull = .*|pull = "never"|' -e "s|^workspaceRoots = .*|workspaceRoots = [\"$work\"]|" \
    /etc/radial/radiald.toml >"$config"
grep -q '^pull = "never"$' "$config" || die "the packaged config has no 'pull' line to override"
# The packaged roots are /srv only (what the unit lets radiald see); this run's workspaces are here.
grep -q "^workspaceRoots = \[\"$work\"\]\$" "$config" ||
    die "the packaged config has no 'workspaceRoots' line to override"

step "a turn from the installed paths"
mkdir -m 0777 "$work/ws"
marker="installed-$instance"
set +e
/usr/bin/radiald turn --config "$config" --image "$image" --workspace "$work/ws" --timeout 60s \
    --record-file "$work/turn.json" -- sh -c "echo $marker; echo $marker > /work/out" >"$work/turn.out"
rc=$?
set -e
cat "$work/turn.out"
((rc == 0)) || die "the turn exited $rc: $(cat "$work/turn.json" 2>/dev/null)"
grep -qx "$marker" "$work/turn.out" || die "the turn's output is missing"
grep -qx "$marker" "$work/ws/out" || die "the turn did not write its workspace"
grep -q '"status": *"succeeded"' "$work/turn.json" || die "the record says: $(cat "$work/turn.json")"

step "a turn with the plugin in a process of its own (run.pluginIsolation = \"process\")"
[[ -x /usr/lib/radial/radial-plugin-host ]] || die "the packages did not install /usr/lib/radial/radial-plugin-host"
sed 's|^\[run\]$|[run]\npluginIsolation = "process"|' "$config" >"$work/isolated.toml"
set +e
/usr/bin/radiald turn --config "$work/isolated.toml" --image "$image" --timeout 60s \
    --record-file "$work/isolated.json" -- sh -c "echo isolated-$instance" >"$work/isolated.out"
rc=$?
set -e
((rc == 0)) || die "the isolated turn exited $rc: $(cat "$work/isolated.json" 2>/dev/null)"
grep -qx "isolated-$instance" "$work/isolated.out" || die "the isolated turn's output is missing"

# --- 4. the unit's ExecStart, by hand -----------------------------------------------------------------
exec_start="$(sed -n 's/^ExecStart=//p' "$unit_file")"
[[ "$exec_start" == "/usr/bin/radiald run --config /etc/radial/radiald.toml" ]] ||
    die "the unit's ExecStart is '$exec_start'; update this test with it"
read -r -a argv <<<"${exec_start/\/etc\/radial\/radiald.toml/$config}"
caps="$(sed -n 's/^CapabilityBoundingSet=//p' "$unit_file")"
umask_value="$(sed -n 's/^UMask=//p' "$unit_file")"
[[ -n "$caps" && -n "$umask_value" ]] || die "the unit sets no CapabilityBoundingSet= or UMask="
bounding="-all$(for c in $caps; do c="${c#CAP_}"; printf ',+%s' "${c,,}"; done)"
pid1="$(ps -p 1 -o comm=)"
step "ExecStart by hand (PID 1 is '$pid1'): umask $umask_value, setpriv --bounding-set=$bounding --no-new-privs ${argv[*]}"
(umask "$umask_value" && exec setpriv --bounding-set="$bounding" --inh-caps=-all --no-new-privs \
    "${argv[@]}") >"$work/daemon.log" 2>&1 &
daemon_pid=$!
daemon_running() { /usr/bin/radiald status --config "$config" 2>/dev/null | grep '^daemon: running' >/dev/null; }
await 60 daemon_running || {
    cat "$work/daemon.log" >&2
    die "the daemon did not start"
}
bnd="$(capsh --decode="$(awk '/^CapBnd:/ { print $2 }' /proc/"$daemon_pid"/status)")"
want="$(for c in $caps; do printf '%s,' "${c,,}"; done)"
[[ "${bnd#*=}" == "${want%,}" ]] || die "the daemon runs with the capability bounding set '$bnd', not the unit's '$caps'"

cat >"$work/request.toml" <<EOF
id = "pkg-$instance"
image = "$image"
argv = ["sh", "-c", "curl -sf --unix-socket \${RADIAL_TURN_SOCKET#unix://} -H \"Authorization: Bearer \$RADIAL_TURN_TOKEN\" -H 'Content-Type: application/json' --data-binary '{\"type\":\"result\",\"payload\":{\"marker\":\"$marker\"}}' http://radial/v1/records"]
timeout = "60s"
recordType = "result"
EOF
step "radiald submit to the running daemon"
turn_id="$(/usr/bin/radiald submit --config "$config" "$work/request.toml")"
[[ "$turn_id" == "pkg-$instance" ]] || die "submit printed '$turn_id'"
turn_done() { /usr/bin/radiald records --config "$config" "$turn_id" 2>/dev/null | grep '^terminal: {' >/dev/null; }
await 120 turn_done || {
    cat "$work/daemon.log" >&2
    die "the daemon did not finish turn $turn_id"
}
/usr/bin/radiald records --config "$config" "$turn_id" | tee "$work/records.out"
grep -q '"status":"succeeded"' "$work/records.out" || {
    cat "$work/daemon.log" >&2
    die "turn $turn_id did not succeed under the daemon"
}
grep -q "result {\"marker\":\"$marker\"}" "$work/records.out" || die "the record the box posted is missing"
# Handed to the box user, the socket's directory can only be removed with CAP_DAC_OVERRIDE.
[[ ! -e "$state/turns/$turn_id" ]] || die "the turn's socket directory was left behind: $(ls -la "$state/turns/$turn_id")"
[[ "$(stat -c %a "$state/journal.sqlite3")" == 600 ]] || die "the journal is not 0600"

step "SIGTERM to the daemon"
kill -TERM "$daemon_pid"
set +e
wait "$daemon_pid"
rc=$?
set -e
daemon_pid=
((rc == 0)) || {
    cat "$work/daemon.log" >&2
    die "the daemon exited $rc after SIGTERM"
}

# --- 5. a third-party runtime against the installed radial-plugin-dev ------------------------------
step "the bubblewrap example radial-plugin-dev ships, against the installed radial-plugin-dev"
example=/usr/share/radial-plugin-api/examples/bubblewrap
[[ -f "$example/CMakeLists.txt" && -x "$example/make-rootfs.sh" ]] ||
    die "radial-plugin-dev does not ship the bubblewrap example under $example"
# The plugin side of the ABI only: radiald's own client (radial::host) is not public API.
if dpkg -L radial-plugin-dev | grep '^/usr/include/radial/host' >/dev/null; then
    die "radial-plugin-dev installs /usr/include/radial/host/, radiald's private ABI client"
fi
# The harness's messages carry no path of the machine it was built on.
for path in "$build_dir" "$source_dir"; do
    if grep -qaF "$path" /usr/bin/radial-conformance; then
        die "/usr/bin/radial-conformance contains the build machine's path '$path'"
    fi
done
generator=
command -v ninja >/dev/null 2>&1 && generator="-G Ninja"
# shellcheck disable=SC2086
cmake -S "$example" -B "$work/bwrap" $generator -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >"$work/bwrap-configure.log" 2>&1 || {
    cat "$work/bwrap-configure.log" >&2
    die "configuring examples/bubblewrap against the installed package failed"
}
grep -q 'RadialPluginApi_DIR:PATH=/usr/lib/cmake/RadialPluginApi' "$work/bwrap/CMakeCache.txt" ||
    die "examples/bubblewrap did not find the installed package: $(grep RadialPluginApi_DIR "$work/bwrap/CMakeCache.txt")"
cmake --build "$work/bwrap" -j 2 >"$work/bwrap-build.log" 2>&1 || {
    cat "$work/bwrap-build.log" >&2
    die "building examples/bubblewrap failed"
}
# The harness is a GoogleTest program: GTEST_FILTER chooses its checks, whoever starts it.
installed_checks='Conformance.plugin_loads:Conformance.descriptor_*:Conformance.abi_negotiation'
installed_checks+=':Conformance.create_*:Conformance.preflight:Conformance.run_exit_codes'
installed_checks+=':Conformance.kill_during_run:Conformance.no_box_left'
GTEST_FILTER="$installed_checks" ctest --test-dir "$work/bwrap" --output-on-failure

step "the example of docs/plugin-authors.md, as the page writes it, against the installed radial-plugin-dev"
"$source_dir/tests/conformance/extract_guide_example.sh" "$source_dir/docs/plugin-authors.md" \
    "$work/myrt" >/dev/null || die "the guide's example could not be extracted from docs/plugin-authors.md"
# shellcheck disable=SC2086
cmake -S "$work/myrt" -B "$work/myrt-build" $generator -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DMYRT_TEST_IMAGE="$image" >"$work/myrt-configure.log" 2>&1 || {
    cat "$work/myrt-configure.log" >&2
    die "configuring the guide's example against the installed package failed"
}
grep -q 'RadialPluginApi_DIR:PATH=/usr/lib/cmake/RadialPluginApi' "$work/myrt-build/CMakeCache.txt" ||
    die "the guide's example did not find the installed package"
cmake --build "$work/myrt-build" -j 2 >"$work/myrt-build.log" 2>&1 || {
    cat "$work/myrt-build.log" >&2
    die "building the guide's example failed"
}
GTEST_FILTER="$installed_checks" ctest --test-dir "$work/myrt-build" --output-on-failure

# --- 6. purge -------------------------------------------------------------------------------------------
step "apt-get purge ${packages[*]}"
DEBIAN_FRONTEND=noninteractive apt-get purge -y "${packages[@]}" >"$work/purge.log" 2>&1 || {
    cat "$work/purge.log" >&2
    die "apt-get purge failed"
}
installed=0
grep '^radiald: purged. Left on purpose:' "$work/purge.log" >/dev/null ||
    die "the purge did not say what it leaves: $(cat "$work/purge.log")"
for f in /usr/bin/radiald /usr/lib/radial/runtimes /etc/radial/radiald.toml "$unit_file" \
    /usr/include/radial /usr/lib/cmake/RadialPluginApi; do
    [[ ! -e "$f" ]] || die "$f is still there after the purge"
done
