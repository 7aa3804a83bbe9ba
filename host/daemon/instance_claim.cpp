#include "daemon/instance_claim.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "daemon/state_dir_lock.h"
#include "fs/lock_file.h"
#include "log/logger.h"

namespace radial::daemon {
namespace fs = std::filesystem;

namespace {

// How long a claim waits for another radiald's check-and-claim (a few syscalls) to finish.
constexpr std::chrono::seconds kGuardBudget{5};

// "<dev>:<ino> <canonical path>": the inode tells two paths to one directory apart from two
// directories, the path is what the refusal names.
std::string identity_of(const std::string& state_dir) {
    struct stat st {};
    if (::stat(state_dir.c_str(), &st) != 0)
        throw LockError(fmt::format("inspecting the state directory '{}' (run.stateDir): {}",
                                    state_dir, std::strerror(errno)));
    std::error_code ec;
    const auto canonical = fs::weakly_canonical(state_dir, ec);
    return fmt::format("{}:{} {}", st.st_dev, st.st_ino, ec ? state_dir : canonical.string());
}

void check_registry(const std::string& registry) {
    std::error_code ec;
    if (fs::create_directories(registry, ec)) ::chmod(registry.c_str(), 0755);
    if (ec)
        throw LockError(
            fmt::format("creating the instance registry '{}': {}", registry, ec.message()));
    struct stat st {};
    if (::lstat(registry.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw LockError(
            fmt::format("the instance registry '{}' is not a directory; remove it", registry));
    // Anyone who could write here could plant a claim and lock every radiald out.
    // Another user's directory is one this user cannot remove from a sticky /tmp: the fix named
    // is one it can make.
    if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))
        throw LockError(fmt::format(
            "the instance registry '{}' belongs to uid {} with mode {:o}; it must be uid {}'s and "
            "writable by nobody else; {}",
            registry, st.st_uid, st.st_mode & 07777, ::geteuid(),
            st.st_uid != ::geteuid()
                ? "another user made it first: set XDG_RUNTIME_DIR to a directory only you can "
                  "write (a login session's /run/user/<uid>), where radiald keeps it instead, or "
                  "have root remove it"
                : "chmod go-w it, or remove it and let radiald create it"));
}

internal::UniqueFd open_file(const std::string& path) {
    internal::UniqueFd fd = fs_util::open_lock_file(path);
    if (!fd) throw LockError(fmt::format("opening '{}': {}", path, std::strerror(errno)));
    return fd;
}

std::string read_line(int fd) {
    char buf[4096];
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return {};
    std::string text(buf, static_cast<std::size_t>(n));
    if (const auto nl = text.find('\n'); nl != std::string::npos) text.resize(nl);
    return text;
}

// True when `fd` is the file at `path` now (it was not removed, or replaced, since it was opened).
bool still_at_path(int fd, const std::string& path) noexcept {
    struct stat by_fd {
    }, by_path{};
    return ::fstat(fd, &by_fd) == 0 && ::lstat(path.c_str(), &by_path) == 0 &&
           by_fd.st_dev == by_path.st_dev && by_fd.st_ino == by_path.st_ino;
}

// Opens `path` and takes its exclusive lock within `budget`, retrying when the file locked was
// removed by a releasing holder meanwhile (so two radialds never lock two different files). An
// empty fd when the budget ran out; `error` says why not.
internal::UniqueFd lock_guard_file(const std::string& path,
                                   std::chrono::steady_clock::time_point deadline,
                                   std::string& error) {
    for (;;) {
        internal::UniqueFd fd = fs_util::open_lock_file(path);
        if (!fd) {
            error = fmt::format("opening '{}': {}", path, std::strerror(errno));
            return {};
        }
        bool locked = false;
        while (!locked) {
            if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
                locked = true;
                break;
            }
            if (errno != EWOULDBLOCK && errno != EINTR) {
                error = fmt::format("locking '{}': {}", path, std::strerror(errno));
                return {};
            }
            // Real time: bounds a wait for a lock another process holds (docs/design.md §12.7).
            if (std::chrono::steady_clock::now() >= deadline) return {};
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        if (still_at_path(fd.get(), path)) return fd;
        // Removed by the claim's last holder while we waited: lock the file there now.
    }
}

// Removes the claims no radiald holds whose state directory is gone: a killed radiald cannot
// remove its own, and only the next start on the same state directory would (a test suite, or a
// host that moves state directories, left hundreds). Each one under its own guard, taken only if
// it exists and is free at once (a radiald claiming it now keeps it); one held, unreadable,
// without a guard or whose directory still exists is left. Never throws but bad_alloc.
void sweep_stale_claims(const std::string& registry, const std::string& ours) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(registry, ec)) {
        const fs::path& claim = e.path();
        if (claim.extension() != ".claim" || claim.string() == ours) continue;
        const std::string guard_path = fs::path(claim).replace_extension(".lock").string();
        // Never made here: a claim with no guard is being released (or was, by a holder that
        // removed both), and a guard made now would outlive it.
        internal::UniqueFd guard(::open(guard_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
        if (!guard || ::flock(guard.get(), LOCK_EX | LOCK_NB) != 0 ||
            !still_at_path(guard.get(), guard_path))
            continue;
        internal::UniqueFd fd(::open(claim.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
        if (!fd || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue; // held: a radiald runs
        const std::string line = read_line(fd.get());
        const auto space = line.find(' ');
        if (space == std::string::npos || space + 1 >= line.size() || line[space + 1] != '/')
            continue;
        struct stat st {};
        if (::stat(line.c_str() + space + 1, &st) == 0 || errno != ENOENT) continue;
        if (still_at_path(fd.get(), claim.string())) ::unlink(claim.c_str());
        ::unlink(guard_path.c_str());
    }
}

} // namespace

std::vector<std::string> claimed_state_dirs(const std::string& registry) {
    std::vector<std::string> dirs;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(registry, ec)) {
        if (e.path().extension() != ".claim") continue;
        internal::UniqueFd fd(::open(e.path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
        if (!fd) continue;
        // "<dev>:<ino> <canonical path>" (identity_of)
        const std::string line = read_line(fd.get());
        const auto space = line.find(' ');
        if (space != std::string::npos && space + 1 < line.size() && line[space + 1] == '/')
            dirs.push_back(line.substr(space + 1));
    }
    return dirs;
}

void InstanceClaim::release() noexcept {
    if (!fd_) return;
    try {
        std::string error;
        // Real time: bounds a wait for a lock another process holds (docs/design.md §12.7).
        internal::UniqueFd guard =
            lock_guard_file(guard_path_, std::chrono::steady_clock::now() + kGuardBudget, error);
        // Under the guard nobody is between opening the claim and locking it, so an exclusive
        // lock means nobody else holds it; without the guard the files simply stay.
        if (guard && ::flock(fd_.get(), LOCK_EX | LOCK_NB) == 0) {
            if (still_at_path(fd_.get(), path_)) ::unlink(path_.c_str());
            ::unlink(guard_path_.c_str());
        }
    } catch (const std::exception& e) {
        // Leaving the files behind is harmless; a destructor must not throw, so it is only said.
        log::warn("daemon", "releasing the instance claim '{}': {}; its files stay (harmless)",
                  path_, e.what());
    } catch (...) {
        log::warn("daemon", "releasing the instance claim '{}' failed; its files stay (harmless)",
                  path_);
    }
    fd_.reset();
}

std::string default_claim_registry() {
    // Not under /run/lock: that directory is writable by every user (mode 1777), so any of them
    // could create "radial" there first and keep every radiald of root from starting; only root
    // may create an entry in /run (docs/design.md §8.2).
    if (::geteuid() == 0) return "/run/radial-claims";
    if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime && runtime[0] == '/')
        return std::string(runtime) + "/radial";
    return fmt::format("/tmp/radial-{}", ::geteuid());
}

InstanceClaim InstanceClaim::acquire(const std::string& registry, const std::string& instance_id,
                                     const std::string& state_dir) {
    check_registry(registry);
    const std::string ours = identity_of(state_dir);
    // The guard serialises check-and-claim: the claim's own lock cannot be converted from
    // exclusive to shared atomically.
    const std::string guard_path = fmt::format("{}/{}.lock", registry, instance_id);
    std::string error;
    // Real time: bounds a wait for a lock another process holds (docs/design.md §12.7).
    internal::UniqueFd guard =
        lock_guard_file(guard_path, std::chrono::steady_clock::now() + kGuardBudget, error);
    if (!guard && !error.empty()) throw LockError(error);
    if (!guard)
        throw LockError(
            fmt::format("'{}' stayed locked for {} s; another radiald is stuck "
                        "claiming run.instanceId '{}'",
                        guard_path, kGuardBudget.count(), instance_id));

    std::string path = fmt::format("{}/{}.claim", registry, instance_id);
    internal::UniqueFd fd = open_file(path);
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
        // Nobody holds it: it is ours now, whatever a dead holder wrote.
        const std::string line = ours + "\n";
        if (::ftruncate(fd.get(), 0) != 0 ||
            ::pwrite(fd.get(), line.data(), line.size(), 0) != static_cast<ssize_t>(line.size()))
            throw LockError(fmt::format("writing '{}': {}", path, std::strerror(errno)));
    } else if (errno != EWOULDBLOCK) {
        throw LockError(fmt::format("locking '{}': {}", path, std::strerror(errno)));
    } else if (const std::string holder = read_line(fd.get()); holder != ours) {
        bool exclusive = false;
        std::string pids;
        for (pid_t p : flock_holders(fd.get(), exclusive))
            pids += (pids.empty() ? "" : ", ") + std::to_string(p);
        const auto space = holder.find(' ');
        const std::string other = space == std::string::npos ? holder : holder.substr(space + 1);
        throw LockError(fmt::format(
            "run.instanceId '{}' is in use by the radiald of state directory '{}'{}; two state "
            "directories must not share an instance id (each would take the other's boxes for "
            "orphans); give this one its own run.instanceId",
            instance_id, other, pids.empty() ? "" : fmt::format(" (pid {})", pids)));
    }
    if (::flock(fd.get(), LOCK_SH) != 0)
        throw LockError(fmt::format("locking '{}': {}", path, std::strerror(errno)));
    guard.reset(); // ours is claimed; the sweep takes other instances' guards only
    sweep_stale_claims(registry, path);
    return InstanceClaim(std::move(path), guard_path, std::move(fd));
}

} // namespace radial::daemon
