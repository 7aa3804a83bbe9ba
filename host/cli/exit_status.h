// host/cli/exit_status.h — the one place that maps radiald's error classes to exit statuses and
// log components (docs/design.md §14.4). Every command in host/cli ends its failure paths here.
#pragma once

#include <exception>
#include <string_view>

namespace radial::cli {

// Which exit-status table applies (docs/design.md §14.4): `radiald turn` mirrors `docker run`;
// every other command uses 0/1/2/70.
enum class CommandKind { turn, other };

// Exit statuses of docs/design.md §14.4.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;        // other commands: ran, and what was asked failed
inline constexpr int kExitUsage = 2;         // other commands: bad flags or config
inline constexpr int kExitNotRunning = 3;    // `radiald status`: no daemon holds the state dir
inline constexpr int kExitGaveUp = 70;       // `radiald run`: gave up waiting for killed turns
inline constexpr int kExitTimedOut = 124;    // turn: timed out, box killed
inline constexpr int kExitHostFault = 125;   // turn: the host's or the runtime's fault
inline constexpr int kExitInterrupted = 130; // turn: interrupted, box killed

// The exit status for `e`, by its class (docs/design.md §14.4): for `radiald turn` every error is
// 125; for the other commands a config::ConfigError is 2 (the operator must change the
// invocation) and everything else — a request, lock, journal, spool, plugin, runtime or
// reconciliation failure, or any other exception — is 1. Thread-safe; never throws.
int exit_status_for(const std::exception& e, CommandKind kind) noexcept;

// The log component `e` is reported under: an error of a subsystem with its own component
// ("config", "journal", "spool", "reconcile") goes there; every other error under the command's
// own `command_component` ("turn", "daemon", "submit", ...). Never throws.
std::string_view error_component(const std::exception& e,
                                 std::string_view command_component) noexcept;

// Logs `e.what()` as one error line (its context is already in the message, docs/design.md
// §14.3) under error_component and returns exit_status_for. Never throws.
int report_error(const std::exception& e, CommandKind kind,
                 std::string_view command_component) noexcept;

} // namespace radial::cli
