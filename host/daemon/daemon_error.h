// host/daemon/daemon_error.h — the exception type of the event loops that wait for stop signals
// (docs/design.md §14.2), the daemon's and `radiald turn`'s: a descriptor they poll (the
// stop-signal pipe, a wake-up eventfd or pipe) could not be made, or poll(2) itself failed. The
// spool, lock, turn-file and reconciler parts of host/daemon have their own types (SpoolError,
// LockError, TurnFileError, ReconcileError).
#pragma once

#include <stdexcept>
#include <string>
#include <system_error>

namespace radial::daemon {

// what() is one line: "<what was being done>: <strerror(errno)>" (docs/design.md §14.3); the
// command that runs the loop reports it (exit 1, or 125 for `radiald turn`,
// host/cli/exit_status.h).
class DaemonError : public std::runtime_error {
public:
    // A failed system call with errno `err`. Thread-safe.
    DaemonError(const std::string& what, int err)
        : std::runtime_error(what + ": " + std::generic_category().message(err)) {}
};

} // namespace radial::daemon
