#include "daemon/state_dir_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/state_dir_trust.h"
#include "fs/lock_file.h"

namespace radial::daemon {
namespace fs = std::filesystem;

// See state_dir_lock.h. Pids holding an flock(2) on the file open as `fd`, read from /proc/locks
// (the kernel's own account, so never stale), and whether one of them holds it exclusively.
std::vector<pid_t> flock_holders(int fd, bool& exclusive) {
    std::vector<pid_t> pids;
    struct stat st {};
    if (::fstat(fd, &st) != 0) return pids;
    // /proc/locks: "1: FLOCK  ADVISORY  WRITE 4242 fe:00:10954692 0 EOF"; the device is
    // major:minor in hex, the inode in decimal.
    std::string device =
        fmt::format("{:02x}:{:02x}:{}", major(st.st_dev), minor(st.st_dev), st.st_ino);
    std::ifstream in("/proc/locks");
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string n, kind, advisory, access, pid, dev;
        if (!(fields >> n >> kind)) continue;
        if (kind == "->") fields >> kind; // a waiter: "1: -> FLOCK ..."
        if (!(fields >> advisory >> access >> pid >> dev)) continue;
        if (kind != "FLOCK" || dev != device) continue;
        try {
            pids.push_back(static_cast<pid_t>(std::stol(pid)));
            if (access == "WRITE") exclusive = true;
        } catch (const std::exception&) {
        }
    }
    return pids;
}

namespace {

std::string describe(const StateDirLock::Holder& h) {
    std::string who = h.command.empty() ? (h.exclusive ? std::string("another radiald")
                                                       : std::string("'radiald turn'"))
                                        : "'" + h.command + "'";
    if (h.pids.empty()) return who;
    std::string pids;
    for (pid_t p : h.pids) pids += (pids.empty() ? "" : ", ") + std::to_string(p);
    return fmt::format("{} (pid {})", who, pids);
}

// The "<pid> <command>" line an exclusive holder wrote; its command part.
std::string written_command(int fd) {
    char buf[256];
    ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0) return {};
    std::string text(buf, static_cast<std::size_t>(n));
    auto nl = text.find('\n');
    if (nl != std::string::npos) text.resize(nl);
    auto space = text.find(' ');
    return space == std::string::npos ? std::string() : text.substr(space + 1);
}

} // namespace

StateDirLock StateDirLock::acquire(const std::string& state_dir, Mode mode,
                                   const std::string& command) {
    std::error_code ec;
    if (fs::create_directories(state_dir, ec)) ::chmod(state_dir.c_str(), 0700);
    std::string path = (fs::path(state_dir) / kLockFile).string();
    if (ec)
        throw LockError(fmt::format("creating the state directory '{}' (run.stateDir): {}",
                                    state_dir, ec.message()));
    config::check_state_dir_trust(state_dir);
    internal::UniqueFd fd = fs_util::open_lock_file(path);
    if (!fd)
        throw LockError(
            fmt::format("opening the lock file '{}': {}; check run.stateDir and its "
                        "permissions",
                        path, std::strerror(errno)));
    int op = (mode == Mode::exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB;
    while (::flock(fd.get(), op) != 0) {
        if (errno == EINTR) continue;
        if (errno != EWOULDBLOCK)
            throw LockError(fmt::format("locking '{}': {}", path, std::strerror(errno)));
        Holder h;
        h.pids = flock_holders(fd.get(), h.exclusive);
        h.command = written_command(fd.get());
        if (!h.exclusive && mode == Mode::exclusive)
            h.command.clear(); // stale: shared holders only
        // A session's box is made, removed or committed only beside no daemon: the daemon's
        // start reconciles sessions, and a box made meanwhile would have no record yet.
        const bool session_change = std::string_view(command).starts_with("radiald session");
        throw LockError(fmt::format(
            "state directory '{}' (run.stateDir) is in use by {}; {}", state_dir, describe(h),
            mode == Mode::exclusive ? "stop it first, or give this one its own run.stateDir"
            : session_change
                ? "a session's box is made, removed or snapshotted only while no daemon serves "
                  "the state directory: stop the daemon ('systemctl stop radiald'), run this "
                  "command, then start it again ('session ls' and 'session snapshots' run beside "
                  "it, and a request naming the session, session = \"ID\", goes to it with "
                  "'radiald submit')"
                : "submit the turn to that daemon with 'radiald submit', or give this command its "
                  "own run.stateDir"));
    }
    if (mode == Mode::exclusive) {
        std::string line = fmt::format("{} {}\n", ::getpid(), command);
        if (::ftruncate(fd.get(), 0) != 0 ||
            ::pwrite(fd.get(), line.data(), line.size(), 0) != static_cast<ssize_t>(line.size()))
            throw LockError(
                fmt::format("writing the lock file '{}': {}", path, std::strerror(errno)));
    }
    return StateDirLock(std::move(path), std::move(fd), mode);
}

StateDirLock::~StateDirLock() {
    // Cleared before the lock goes, so nobody reads a pid that no longer holds anything.
    if (fd_ && mode_ == Mode::exclusive && ::ftruncate(fd_.get(), 0) != 0) {
        // Nothing to do: a stale line names a pid that holds no lock, and probe() asks the kernel.
    }
}

std::optional<StateDirLock::Holder> StateDirLock::probe(const std::string& state_dir) {
    std::string path = (fs::path(state_dir) / kLockFile).string();
    internal::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) {
        if (errno == ENOENT) return std::nullopt; // no daemon has ever run here
        throw LockError("cannot tell whether a daemon holds the state directory '" + state_dir +
                        "': opening '" + path + "': " + std::strerror(errno) +
                        "; run this as a user who may read the state directory (root for the "
                        "packaged daemon)");
    }
    Holder h;
    h.pids = flock_holders(fd.get(), h.exclusive);
    if (h.pids.empty()) {
        // /proc/locks unavailable: ask the lock itself (a shared probe fails only beside an
        // exclusive holder).
        if (::flock(fd.get(), LOCK_SH | LOCK_NB) == 0) {
            ::flock(fd.get(), LOCK_UN);
            return std::nullopt;
        }
        h.exclusive = true;
    }
    if (h.exclusive) h.command = written_command(fd.get());
    return h;
}

} // namespace radial::daemon
