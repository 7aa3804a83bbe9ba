// host/fs/fs_error.h — the one exception type of host/fs (docs/design.md §14.2): a file the host
// could not publish or a directory it could not open, sync or write into.
#pragma once

#include <stdexcept>
#include <string>
#include <system_error>

namespace radial::fs_util {

// Thrown by durable_file.h and pinned_directory.h. what() is one line naming the path and the step
// ("<step> '<path>': <cause>", docs/design.md §14.3); the caller prefixes what it was doing (the
// spool, the instance id, --record-file). error_number() is the errno behind it, 0 when the cause
// is not a failed system call (a name that is not a file name, a directory replaced).
class FsError : public std::runtime_error {
public:
    // A failed system call: "<what>: <strerror(err)>" (thread-safe, unlike strerror(3)).
    FsError(const std::string& what, int err)
        : std::runtime_error(what + ": " + std::generic_category().message(err)), errno_(err) {}
    // A refusal with no errno: `message` is the whole line.
    explicit FsError(const std::string& message) : std::runtime_error(message) {}

    int error_number() const noexcept { return errno_; }

private:
    int errno_ = 0;
};

} // namespace radial::fs_util
