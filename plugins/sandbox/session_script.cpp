#include "session_script.h"

#include "exec_script.h"

namespace radial::sandbox {

namespace {

// Where the session's state lives in the sandbox: the exec user's home survives sbx stopping and
// starting the VM, /tmp may not.
constexpr const char* kStateDir = "d=\"${HOME:-/tmp}/.radial-session\"\n";

// SIGNAL ($1) to every other process whose environment carries RADIAL_SESSION_EXEC=$radial_tag
// (the session's label): what the session's execs started. Processes of other users are not
// readable, so never signalled.
constexpr const char* kSweep = R"(radial_sweep() {
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" = "$$" ] && continue
    grep -qzxF "RADIAL_SESSION_EXEC=$radial_tag" "$p/environ" 2>/dev/null && kill "-$1" "${p#/proc/}" 2>/dev/null
  done
  return 0
}
)";

// Starts the keeper unless its recorded pid is a live keeper (a pid reused after the VM restarted
// is not one). Its descriptors go to /dev/null, so no exec client waits for it.
constexpr const char* kKeeperUp = R"(radial_keeper_up() {
  k=$(cat "$d/keeper.pid" 2>/dev/null || true)
  if [ -z "$k" ] || ! grep -q radial-session "/proc/$k/cmdline" 2>/dev/null; then
    sh "$d/keeper" "$d" "$radial_tag" >/dev/null 2>&1 </dev/null &
    echo $! > "$d/keeper.pid"
  fi
}
)";

// The keeper's loop: once a second, the maximum lifetime, then the idle time (counted from the
// last exec's end, never while one runs).
constexpr const char* kKeeper = R"(d=$1
radial_tag=$2
radial_sweep() {
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" = "$$" ] && continue
    grep -qzxF "RADIAL_SESSION_EXEC=$radial_tag" "$p/environ" 2>/dev/null && kill "-$1" "${p#/proc/}" 2>/dev/null
  done
  return 0
}
while [ -d "$d" ] && [ ! -e "$d/ended" ]; do
  now=$(date +%s)
  max_at=$(cat "$d/max_at" 2>/dev/null || echo 0)
  idle=$(cat "$d/idle" 2>/dev/null || echo 0)
  why=
  if [ "$max_at" -gt 0 ] && [ "$now" -ge "$max_at" ]; then
    why="its maximum lifetime passed"
  elif [ "$idle" -gt 0 ]; then
    b=$(cat "$d/busy" 2>/dev/null || true)
    if [ -z "$b" ] || ! kill -0 "$b" 2>/dev/null; then
      last=$(cat "$d/last" 2>/dev/null || echo 0)
      [ $((now - last)) -ge "$idle" ] && why="it was idle for $idle s"
    fi
  fi
  if [ -n "$why" ]; then
    echo "$why" > "$d/ended"
    radial_sweep KILL
    exit 0
  fi
  sleep 1
done
)";

// The state directory and the tag every exec's processes carry: the session's label, which is
// [A-Za-z0-9][A-Za-z0-9_.-]* (the helper checked it), quoted all the same.
std::string preamble(const ContainerSpec& spec) {
    return std::string(kStateDir) + "radial_tag=" + posix_quote(spec.label) + "\n";
}

std::string whole_seconds(std::uint64_t ms) { return std::to_string((ms + 999) / 1000); }

// "S.mmm": sleep's argument for `ms`.
std::string seconds_text(std::uint64_t ms) {
    std::string frac = std::to_string(ms % 1000);
    return std::to_string(ms / 1000) + "." + std::string(3 - frac.size(), '0') + frac;
}

} // namespace

std::string sbx_session_setup_script(const ContainerSpec& spec, std::uint64_t idle_timeout_ms,
                                     std::uint64_t max_lifetime_ms) {
    std::string script = "set -e\n";
    script += sbx_bridge_lines(spec);
    script += preamble(spec);
    script += kKeeperUp;
    script += "rm -rf \"$d\"\nmkdir -p \"$d\"\nchmod 700 \"$d\"\nnow=$(date +%s)\n";
    script += max_lifetime_ms == 0
                  ? std::string("echo 0 > \"$d/max_at\"\n")
                  : "echo $((now + " + whole_seconds(max_lifetime_ms) + ")) > \"$d/max_at\"\n";
    script += "echo " + whole_seconds(idle_timeout_ms) + " > \"$d/idle\"\n";
    script += "echo \"$now\" > \"$d/last\"\n";
    script += "cat > \"$d/keeper\" <<'RADIAL_KEEPER'\n";
    script += kKeeper;
    script += "RADIAL_KEEPER\nradial_keeper_up\n";
    return script;
}

std::string sbx_session_exec_script(const ContainerSpec& exec, std::uint64_t kill_grace_ms) {
    // Built before anything is written, so a refusal names its field.
    const std::string env = sbx_env_lines(exec);
    const std::string argv = sbx_argv_words(exec);

    std::string script = preamble(exec);
    script += kSweep;
    script += kKeeperUp;
    script +=
        "if [ ! -d \"$d\" ] || [ -e \"$d/ended\" ]; then\n"
        "  echo \"radial: this session's sandbox has ended ($(cat \"$d/ended\" 2>/dev/null "
        "|| echo its state is gone)); create a new session\" >&2\n"
        "  exit " +
        std::to_string(kSessionEndedExit) +
        "\n"
        "fi\n"
        "echo $$ > \"$d/busy\"\n"
        "radial_keeper_up\n";
    // The exec's own variables exist from here on: the keeper never inherits them.
    script += "set -e\n" + env + "set +e\n";
    script += "radial_fired=\"$d/fired.$$\"\nrm -f \"$radial_fired\"\n";
    script += "RADIAL_SESSION_EXEC=\"$radial_tag\" " + argv + " </dev/null &\nradial_pid=$!\n";
    if (exec.timeout_ms != 0) {
        script +=
            "( trap 'kill $s 2>/dev/null; exit 0' TERM\n"
            "  sleep " +
            seconds_text(exec.timeout_ms) +
            " & s=$!; wait $s\n"
            "  : > \"$radial_fired\"; radial_sweep TERM\n"
            "  sleep " +
            seconds_text(kill_grace_ms) +
            " & s=$!; wait $s\n"
            "  radial_sweep KILL ) >/dev/null 2>&1 </dev/null &\n"
            "radial_dog=$!\n";
    }
    script += "wait \"$radial_pid\"\nradial_code=$?\n";
    if (exec.timeout_ms != 0)
        script +=
            "kill \"$radial_dog\" 2>/dev/null\nwait \"$radial_dog\" 2>/dev/null\n"
            "[ -e \"$radial_fired\" ] && radial_code=124\n";
    script +=
        "radial_sweep KILL\n"
        "rm -f \"$radial_fired\" \"$d/busy\"\n"
        "date +%s > \"$d/last\"\n"
        "exit \"$radial_code\"\n";
    return script;
}

std::string sbx_session_state_script() {
    std::string script = kStateDir;
    script +=
        "if [ ! -d \"$d\" ]; then echo gone\n"
        "elif [ -e \"$d/ended\" ]; then echo \"ended: $(cat \"$d/ended\")\"\n"
        "else echo live; fi\n";
    return script;
}

} // namespace radial::sandbox
