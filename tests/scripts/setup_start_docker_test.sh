#!/usr/bin/env bash
# scripts/setup.sh starts dockerd again when it exits before answering (its containerd killed while
# deleting a killed engine's dead shims), up to dockerd_start_attempts times, and says so; a dockerd
# that never stays up still ends setup with an error naming its log. Before a start, gVisor state
# whose sandbox pid is no longer a runsc-sandbox is removed (containerd's delete would SIGKILL that
# pid). A fake dockerd and a fake `docker info` stand in for the engine: setup's steps are tested.
set -euo pipefail

repo="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
((EUID == 0)) || { echo "SKIP: setup.sh starts dockerd only as root"; exit 77; }

work="$(mktemp -d)"
pids=()
trap 'kill "$(cat "${work}/up.pid" 2>/dev/null)" "${pids[@]}" 2>/dev/null || true; rm -rf "${work}"' EXIT

# The fake dockerd: exits (as a dockerd whose containerd died does) until it has run
# $fails_before_up times, then stays up and answers.
cat >"${work}/dockerd" <<'FAKE'
#!/usr/bin/env bash
work="$(dirname "$0")"
runs=$(($(cat "${work}/runs" 2>/dev/null || echo 0) + 1))
echo "${runs}" >"${work}/runs"
if ((runs <= $(cat "${work}/fails_before_up"))); then
    echo "failed to start containerd: timeout waiting for containerd to start"
    exit 1
fi
echo $$ >"${work}/up.pid"
touch "${work}/answers"
exec sleep 600
FAKE
chmod +x "${work}/dockerd"

# Runs setup.sh's start_docker with the fakes; prints its output, returns its status.
start_docker_with_fakes() {
    (
        # shellcheck source=../../scripts/setup.sh
        source "${repo}/scripts/setup.sh"
        dockerd_cmd=("${work}/dockerd")
        dockerd_log="${work}/dockerd.log"
        dockerd_pidfile="${work}/docker.pid"
        dockerd_exec_root="${work}/exec-root"
        daemon_json="${work}/daemon.json"
        docker_answers() { [[ -e "${work}/answers" ]]; }
        docker() { echo fake; }
        start_docker
    ) 2>&1
}

fail() {
    echo "FAIL: $*"
    exit 1
}

# Two early exits, then up: setup goes on after the third start.
echo 2 >"${work}/fails_before_up"
out="$(start_docker_with_fakes)" || fail "start_docker failed although the third dockerd answered: ${out}"
[[ "$(cat "${work}/runs")" == 3 ]] || fail "dockerd ran $(cat "${work}/runs") times, not 3"
grep -q "attempt 3 of 3" <<<"${out}" || fail "the output does not say which attempt answered: ${out}"
grep -q "exited before answering; last lines of ${work}/dockerd.log" <<<"${out}" ||
    fail "an early exit does not name the log: ${out}"
grep -q "timeout waiting for containerd" <<<"${out}" || fail "an early exit does not show the log's last lines: ${out}"
kill "$(cat "${work}/up.pid")"

# Never up: setup fails after three starts and names the log.
rm -f "${work}/runs" "${work}/answers" "${work}/up.pid"
echo 99 >"${work}/fails_before_up"
if out="$(start_docker_with_fakes)"; then
    fail "start_docker succeeded although dockerd never answered: ${out}"
fi
[[ "$(cat "${work}/runs")" == 3 ]] || fail "dockerd ran $(cat "${work}/runs") times, not 3"
grep -q "starting dockerd: it exited before answering 3 times; see ${work}/dockerd.log" <<<"${out}" ||
    fail "the error does not say how often it was started and where its log is: ${out}"
# gVisor state left by boxes that died with their engine: one whose pid is now another process (it
# would be SIGKILLed by containerd's delete), one whose pid is gone, and one whose sandbox lives.
states="${work}/exec-root/runtime-runc/moby"
mkdir -p "${states}"
sleep 600 &
pids+=($!)
other=$!
# As runsc starts its sandbox: argv[0] "runsc-sandbox", the executable another name ("exe").
bash -c 'exec -a runsc-sandbox sleep 600' &
pids+=($!)
sandbox=$!
sleep 0 &
gone=$!
wait "${gone}"
for box in reused:${other} gone:${gone} alive:${sandbox}; do
    printf '{"id":"%s","goferPid":1,"sandbox":{"pid":%s}}\n' "${box%%:*}" "${box#*:}" \
        >"${states}/${box%%:*}_sandbox:${box%%:*}.state"
    : >"${states}/${box%%:*}_sandbox:${box%%:*}.lock"
done
# While the engine's containerd still runs, its state is in use: nothing is touched.
mkdir -p "${work}/exec-root/containerd"
echo "${other}" >"${work}/exec-root/containerd/containerd.pid"
rm -f "${work}/runs" "${work}/answers" "${work}/up.pid"
echo 0 >"${work}/fails_before_up"
out="$(start_docker_with_fakes)" || fail "start_docker failed: ${out}"
kill "$(cat "${work}/up.pid")"
[[ -e "${states}/reused_sandbox:reused.state" ]] || fail "state was removed under a live containerd: ${out}"
rm -f "${work}/exec-root/containerd/containerd.pid"
rm -f "${work}/runs" "${work}/answers" "${work}/up.pid"
out="$(start_docker_with_fakes)" || fail "start_docker failed: ${out}"
for box in reused gone; do
    [[ ! -e "${states}/${box}_sandbox:${box}.state" && ! -e "${states}/${box}_sandbox:${box}.lock" ]] ||
        fail "the state of the dead box '${box}' was kept: ${out}"
    grep -q "removing gVisor state .*${box}_sandbox" <<<"${out}" || fail "the removal of '${box}' is not said: ${out}"
done
[[ -e "${states}/alive_sandbox:alive.state" ]] || fail "the state of a live sandbox was removed: ${out}"
kill -0 "${other}" || fail "the process holding a dead box's pid was killed"
echo "PASS"
