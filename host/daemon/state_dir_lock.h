// host/daemon/state_dir_lock.h — one daemon per state directory (docs/design.md §8.6).
//
// The lock is flock(2) on "<stateDir>/radiald.lock". `radiald run` and `radiald reconcile` hold it
// exclusively: both kill every box of the instance that is not their own turn, so one of them
// beside a running daemon would reclaim that daemon's live turns. `radiald turn` holds it shared:
// any number of them may run side by side, but never beside a daemon or a reconcile, whose startup
// pass would take their boxes for orphans. The kernel drops the lock when its holder dies, SIGKILL
// included, so a crash never leaves a stale lock behind.
#pragma once

#include <radial/internal/unique_fd.h>
#include <sys/types.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace radial::daemon {

// The lock file's name under the state directory.
inline constexpr const char* kLockFile = "radiald.lock";

// The state directory is in use. what() names the directory, who holds it (pid and command when
// known) and what to do, e.g. "state directory '/var/lib/radial' (run.stateDir) is in use by
// 'radiald run' (pid 4242); stop it first, or give this one its own run.stateDir".
class LockError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Pids holding an flock(2) on the file open as `fd`, from /proc/locks (empty when it cannot say);
// `exclusive` is set when one of them holds it exclusively. Never throws except bad_alloc.
std::vector<pid_t> flock_holders(int fd, bool& exclusive);

class StateDirLock {
public:
    enum class Mode { exclusive, shared };

    // Takes the lock without waiting. Creates the state directory (0700) and the lock file (0600)
    // when missing; refuses one that config::check_state_dir_trust refuses. An exclusive holder
    // writes "<pid> <command>\n" into the file (what status and the refusal messages read) and
    // clears it again when it lets go; `command` is e.g. "radiald run". Throws LockError when
    // another process holds a conflicting lock, or the file cannot be created or locked. Not
    // thread-safe against itself; the result may be used from any thread.
    static StateDirLock acquire(const std::string& state_dir, Mode mode,
                                const std::string& command);

    // Who holds the lock exclusively: pids from /proc/locks, and the command the holder wrote.
    struct Holder {
        std::vector<pid_t> pids; // empty when /proc/locks could not say
        std::string command;     // empty when the holder wrote none (a shared holder)
        bool exclusive = false;
    };

    // Whether any process holds the lock of `state_dir`, without taking or waiting for it
    // (`radiald status`). nullopt: free, or no lock file. Throws LockError when it cannot tell —
    // the lock file is there but cannot be opened (e.g. EACCES for a user who may not read the
    // state directory) — naming the path and the error: "not running" would be a guess.
    // [thread-safe]
    static std::optional<Holder> probe(const std::string& state_dir);

    StateDirLock(StateDirLock&&) noexcept = default;
    StateDirLock& operator=(StateDirLock&&) noexcept = default;
    ~StateDirLock();

    const std::string& path() const noexcept { return path_; }

private:
    StateDirLock(std::string path, internal::UniqueFd fd, Mode mode)
        : path_(std::move(path)), fd_(std::move(fd)), mode_(mode) {}
    std::string path_;
    internal::UniqueFd fd_;
    Mode mode_ = Mode::shared;
};

} // namespace radial::daemon
