// plugins/sandbox/exec_script.h — the script `sbx exec -i NAME sh -s` reads on stdin
// (docs/design.md §6.3): bridge the mount targets, export the turn's environment, cd, exec the
// argv.
#pragma once

#include <radial/container_spec.hpp>
#include <string>
#include <string_view>

namespace radial::sandbox {

// `value` as one POSIX shell word that reads back byte for byte: wrapped in single quotes, each
// single quote written '\''. Inside single quotes nothing is special — not $, `, \, ", a newline
// or any non-ASCII byte. Pure; thread-safe.
std::string posix_quote(std::string_view value);

// The exec script for `spec`, in this order:
//   set -e
//   (when a mount's target differs from its source) a root helper — `sudo -n` when the exec user
//   is not root and sudo exists (sbx templates run as a non-root user with sudo, peers-and-sbx
//   §1.7), else nothing — then per such mount: mkdir -p the target's parent; remove an empty
//   directory standing at the target, or move one with files aside to TARGET.radial-covered.PID
//   (as a docker mount would cover it); symlink the target at the source (ln -sfn)
//   export NAME='value'            (every spec.env entry, secret or not)
//   cd 'workdir'                   (when carried)
//   printf '%s\n' 'MARKER' >&2     (when `started_marker` is not empty)
//   exec 'argv0' 'argv1' ... </dev/null
// `set -e` makes a failed bridge a failed run rather than a harness started in the wrong tree;
// the marker line on stderr, the last thing before `exec`, tells the runtime that sbx and the
// set-up worked and the exit status is the command's: without it the run failed before the
// command (docs/design.md §13.3);
// `exec` makes the workload's exit status the exec's; stdin is /dev/null so a workload never reads
// the rest of the script or waits on the exec client's stdin. Every value is posix_quote()d, so
// quotes, $, backticks, newlines and non-ASCII arrive byte for byte. The script holds secret
// values: it goes over stdin only, never on an argv, and is never logged (docs/design.md §6.3,
// C-02). Throws radial::plugin::Error(RADIAL_E_INVALID, <field>) naming "env[i]" for a name not
// matching [A-Za-z_][A-Za-z0-9_]* or a NUL byte in a value, "argv[i]"/"workdir" for a NUL byte,
// "mounts[i]" for a target that is "/", shared by two mounts, inside a bridged target, or (when
// bridged) inside a mount source — either way a symlink would be written into the host's files —
// plus sbx_workspaces()'s refusals.
// Pure; thread-safe. Source: docs/design.md §5.6 (mounts bridged; argv, env, workdir honoured),
// §4.1, §8.2.
std::string sbx_exec_script(const ContainerSpec& spec, std::string_view started_marker = {});

// A marker for one run's exec script: "radial-exec-started-" and 128 random bits in hex, so
// nothing but that script's own line can be taken for it. Thread-safe.
std::string exec_started_marker();

// The pieces of sbx_exec_script, for the session scripts (session_script.h), with the same
// refusals: the mount bridging lines (after sbx_workspaces()'s checks; empty when no target
// differs from its source), the `export` and `cd` lines, and the argv as quoted words.
std::string sbx_bridge_lines(const ContainerSpec& spec);
std::string sbx_env_lines(const ContainerSpec& spec);
std::string sbx_argv_words(const ContainerSpec& spec);

} // namespace radial::sandbox
