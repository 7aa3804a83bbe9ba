#include "session_script.h"

#include "exec_script.h"

namespace radial::sandbox {

namespace {

// Where the session's state lives in the sandbox: the exec user's home survives sbx stopping and
// starting the VM, /tmp may not.
constexpr const char* kStateDir = "d=\"${HOME:-/tmp}/.radial-session\"\n";

// What the keeper and every exec script share:
//   radial_sweep SIGNAL VAR: SIGNAL to every other process whose environment carries
//     VAR=<the session's label> — what the session's execs started (RADIAL_SESSION_EXEC) or an
//     exec's watchdog (RADIAL_SESSION_DOG). For KILL, pass after pass until one finds none (a
//     parent killed in a pass cannot fork again; what it forked before is found in the next).
//     Processes of other users are not readable, so never signalled.
//   radial_expired: true, with radial_why, once the maximum lifetime or the idle time passed —
//     never while an exec other than this script runs. Whole seconds, never early: a limit is
//     passed only once more whole seconds than it went by.
//   radial_end: marks the session ended (radial_why) and ends every process of its execs.
constexpr const char* kFunctions = R"(radial_sweep() {
  radial_n=0
  while :; do
    radial_found=
    for f in $(grep -lszxF "$2=$radial_tag" /proc/[0-9]*/environ); do
      p=${f#/proc/}; p=${p%/environ}
      [ "$p" = "$$" ] && continue
      kill "-$1" "$p" 2>/dev/null && radial_found=1
    done
    if [ "$1" != KILL ] || [ -z "$radial_found" ] || [ "$radial_n" -ge 100 ]; then return 0; fi
    radial_n=$((radial_n + 1))
  done
}
radial_expired() {
  radial_why=
  now=$(date +%s)
  max_at=$(cat "$d/max_at" 2>/dev/null); max_at=${max_at:-0}
  idle=$(cat "$d/idle" 2>/dev/null); idle=${idle:-0}
  if [ "$max_at" -gt 0 ] && [ "$now" -gt "$max_at" ]; then
    radial_why="its maximum lifetime passed"; return 0
  fi
  [ "$idle" -gt 0 ] || return 1
  b=$(cat "$d/busy" 2>/dev/null)
  if [ -n "$b" ] && [ "$b" != "$$" ] && kill -0 "$b" 2>/dev/null; then return 1; fi
  last=$(cat "$d/last" 2>/dev/null); last=${last:-$now}
  if [ $((now - last)) -gt "$idle" ]; then radial_why="it was idle for $idle s"; return 0; fi
  return 1
}
radial_end() {
  echo "$radial_why" > "$d/ended"
  radial_sweep KILL RADIAL_SESSION_EXEC
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

// The keeper's loop, once a second (its functions are written before it).
constexpr const char* kKeeperLoop = R"(while [ -d "$d" ] && [ ! -e "$d/ended" ]; do
  if radial_expired; then radial_end; exit 0; fi
  sleep 1
done
)";

// The state directory and the tag every exec's processes carry: the session's label, which is
// [A-Za-z0-9][A-Za-z0-9_.-]* (the helper checked it), quoted all the same.
std::string preamble(const ContainerSpec& spec) {
    return std::string(kStateDir) + "radial_tag=" + posix_quote(spec.label) + "\n";
}

// Rounded up, without overflowing for the largest `ms`.
std::string whole_seconds(std::uint64_t ms) {
    return std::to_string(ms / 1000 + (ms % 1000 != 0 ? 1 : 0));
}

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
    script += "cat > \"$d/keeper\" <<'RADIAL_KEEPER'\nd=$1\nradial_tag=$2\n";
    script += kFunctions;
    script += kKeeperLoop;
    script += "RADIAL_KEEPER\nradial_keeper_up\n";
    return script;
}

std::string sbx_session_exec_script(const ContainerSpec& exec, std::uint64_t kill_grace_ms,
                                    std::string_view started_marker) {
    // Built before anything is written, so a refusal names its field.
    const std::string env = sbx_env_lines(exec);
    const std::string argv = sbx_argv_words(exec);

    std::string script = preamble(exec);
    script += kFunctions;
    script += kKeeperUp;
    // Refused when the session ended, or has just passed a limit while no keeper ran (sbx stopped
    // the VM): the keeper's own judgement, made here before this exec counts as running.
    script +=
        "radial_refuse() {\n"
        "  echo \"radial: this session's sandbox has ended ($1); create a new session\" >&2\n"
        "  exit " +
        std::to_string(kSessionEndedExit) +
        "\n"
        "}\n"
        "[ -d \"$d\" ] || radial_refuse \"its state is gone\"\n"
        "[ -e \"$d/ended\" ] && radial_refuse \"$(cat \"$d/ended\")\"\n"
        "if radial_expired; then radial_end; radial_refuse \"$radial_why\"; fi\n"
        "echo $$ > \"$d/busy\"\n"
        "[ -e \"$d/ended\" ] && { rm -f \"$d/busy\"; radial_refuse \"$(cat \"$d/ended\")\"; }\n"
        "radial_keeper_up\n"
        "radial_fired=\"$d/fired.$$\"\n"
        "rm -f \"$radial_fired\"\n";
    // The exec's variables exist only in the command's own subshell: neither this script, nor
    // its watchdog, nor the keeper ever holds them; `exec` runs the argv as a program.
    // The tag is written out, not read from a variable the exec's own could have replaced.
    // The marker, last before the command, says it started (docs/design.md §13.3).
    std::string started;
    if (!started_marker.empty())
        started = "printf '%s\\n' " + posix_quote(started_marker) + " >&2\n";
    script += "( set -e\n" + env + started + "RADIAL_SESSION_EXEC=" + posix_quote(exec.label) +
              " exec " + argv + " </dev/null ) &\nradial_pid=$!\n";
    if (exec.timeout_ms != 0) {
        script +=
            "( trap 'kill $s 2>/dev/null; exit 0' TERM\n"
            "  RADIAL_SESSION_DOG=\"$radial_tag\" sleep " +
            seconds_text(exec.timeout_ms) +
            " & s=$!; wait $s\n"
            "  : > \"$radial_fired\"; radial_sweep TERM RADIAL_SESSION_EXEC\n"
            "  RADIAL_SESSION_DOG=\"$radial_tag\" sleep " +
            seconds_text(kill_grace_ms) +
            " & s=$!; wait $s\n"
            "  radial_sweep KILL RADIAL_SESSION_EXEC ) >/dev/null 2>&1 </dev/null &\n"
            "radial_dog=$!\n";
    }
    // The shell's own "Killed" line would land in the turn's stderr: wait's stderr is dropped.
    script += "wait \"$radial_pid\" 2>/dev/null\nradial_code=$?\n";
    if (exec.timeout_ms != 0)
        script +=
            "kill \"$radial_dog\" 2>/dev/null\nwait \"$radial_dog\" 2>/dev/null\n"
            "radial_sweep KILL RADIAL_SESSION_DOG\n"
            "[ -e \"$radial_fired\" ] && radial_code=124\n";
    script +=
        "radial_sweep KILL RADIAL_SESSION_EXEC\n"
        "rm -f \"$radial_fired\"\n"
        "date +%s > \"$d/last.new\" && mv -f \"$d/last.new\" \"$d/last\"\n"
        "rm -f \"$d/busy\"\n"
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
