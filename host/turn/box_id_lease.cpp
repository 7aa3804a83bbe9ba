#include "turn/box_id_lease.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <radial/internal/proc_file.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>

#include "fs/lock_file.h"
#include "log/logger.h"
#include "turn/turn_setup_error.h"

namespace radial::turn {
namespace {

// The ids of [first, last] some process on the host runs with (real, effective, saved or
// filesystem uid or gid), in any pid namespace: a box whose radiald was killed still runs there.
std::set<std::uint32_t> ids_in_use(std::uint32_t first, std::uint32_t last) {
    std::set<std::uint32_t> used;
    std::unique_ptr<DIR, int (*)(DIR*)> proc(::opendir("/proc"), ::closedir);
    if (!proc) return used;
    while (const dirent* e = ::readdir(proc.get())) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        std::istringstream status(
            internal::read_proc_file(std::string("/proc/") + e->d_name + "/status"));
        std::string line;
        while (std::getline(status, line)) {
            if (!line.starts_with("Uid:") && !line.starts_with("Gid:")) continue;
            std::istringstream ids(line.substr(4));
            std::uint64_t id = 0;
            while (ids >> id)
                if (id >= first && id <= last) used.insert(static_cast<std::uint32_t>(id));
        }
    }
    return used;
}

void check_dir(const std::string& dir) {
    std::error_code ec;
    if (std::filesystem::create_directories(dir, ec)) ::chmod(dir.c_str(), 0755);
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw TurnSetupError(
            fmt::format("the box id leases directory '{}' is not a directory ({}); remove it", dir,
                        ec ? ec.message() : std::string(std::strerror(errno))));
    if (st.st_uid != ::geteuid() || (st.st_mode & 022) != 0)
        throw TurnSetupError(fmt::format(
            "the box id leases directory '{}' belongs to uid {} with mode {:o}; it must be uid "
            "{}'s and writable by nobody else: another user could take or free a box's ids. "
            "Remove it, or fix its owner and mode",
            dir, st.st_uid, st.st_mode & 07777, ::geteuid()));
}

bool try_lock(int fd) {
    while (::flock(fd, LOCK_EX | LOCK_NB) != 0)
        if (errno != EINTR) return false;
    return true;
}

std::string read_all(int fd) {
    std::string text;
    char buf[1024];
    ::lseek(fd, 0, SEEK_SET);
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        text.append(buf, static_cast<std::size_t>(n));
        if (text.size() > 64 * 1024) break; // a lease is a line; more is not ours
    }
    return text;
}

// Whether the state directory a lease file names no longer exists.
bool state_dir_gone(const std::string& text) {
    auto note = nlohmann::json::parse(text, nullptr, false);
    if (!note.is_object() || !note.contains("stateDir") || !note["stateDir"].is_string())
        return false;
    const std::string dir = note["stateDir"].get<std::string>();
    struct stat st {};
    return !dir.empty() && ::lstat(dir.c_str(), &st) != 0 && errno == ENOENT;
}

} // namespace

std::string box_id_lease_dir(const std::string& claim_registry) {
    return claim_registry + "/box-ids";
}

BoxIdLease BoxIdLease::acquire(const std::string& dir, std::uint32_t first, std::uint32_t last,
                               const std::string& label, const std::string& state_dir) {
    check_dir(dir);
    const std::set<std::uint32_t> running = ids_in_use(first, last);
    const std::uint64_t size = std::uint64_t{last} - first + 1;
    std::uint64_t start = std::random_device{}() % size;
    std::uint64_t held = 0, left = 0;
    const std::string note =
        nlohmann::json{{"label", label}, {"stateDir", state_dir}, {"pid", ::getpid()}}.dump(
            -1, ' ', false, nlohmann::json::error_handler_t::replace) +
        "\n";
    for (std::uint64_t i = 0; i < size; ++i) {
        const auto id = static_cast<std::uint32_t>(first + (start + i) % size);
        if (running.contains(id)) {
            ++held;
            continue;
        }
        const std::string path = fmt::format("{}/{}", dir, id);
        internal::UniqueFd fd = fs_util::open_lock_file(path);
        if (!fd)
            throw TurnSetupError(
                fmt::format("opening the box id lease '{}': {}; check that "
                            "directory",
                            path, std::strerror(errno)));
        if (!try_lock(fd.get())) {
            ++held;
            continue;
        }
        // Freed and removed between our open and our lock: that file is nobody's any more.
        if (!fs_util::still_named(fd.get(), path)) continue;
        struct stat st {};
        if (::fstat(fd.get(), &st) != 0) continue;
        // A radiald was killed holding it: its box may still run as this id, until the
        // reconciliation of its state directory. A state directory that is gone will never be
        // reconciled, and no process runs as the id (above): the lease is over.
        if (st.st_size > 0 &&
            !(state_dir_gone(read_all(fd.get())) && ::ftruncate(fd.get(), 0) == 0 &&
              ::lseek(fd.get(), 0, SEEK_SET) == 0)) {
            ++left;
            continue;
        }
        if (::write(fd.get(), note.data(), note.size()) != static_cast<ssize_t>(note.size())) {
            int err = errno;
            ::unlink(path.c_str());
            throw TurnSetupError(
                fmt::format("writing the box id lease '{}': {}", path, std::strerror(err)));
        }
        return BoxIdLease(id, path, std::move(fd));
    }
    throw BoxIdsExhausted(fmt::format(
        "run.boxIdRange {}-{}: every id is taken ({} by boxes that run or are about to, {} left by "
        "a radiald that "
        "was killed, freed when its state directory is reconciled); wait for turns to end, run "
        "'radiald reconcile' for the state directories named in '{}', or widen run.boxIdRange",
        first, last, held, left, dir));
}

void BoxIdLease::release() noexcept {
    if (path_.empty()) return;
    // Removed while still locked: a radiald that opened it meanwhile sees another file, or none.
    ::unlink(path_.c_str());
    path_.clear();
    fd_.reset();
}

void BoxIdLease::keep_for_reconcile() noexcept {
    path_.clear();
    fd_.reset();
}

namespace {

// What to do with a lease file nobody holds.
enum class LeaseAction { keep, remove, remove_and_stop };

// Calls `decide(id, path, text)` for every lease file in `dir` that nobody holds, with its lock
// taken, and removes it (still locked) when told to.
template <class Decide>
void for_each_unheld_lease(const std::string& dir, Decide&& decide) {
    std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
    if (!d) return;
    while (const dirent* e = ::readdir(d.get())) {
        const std::string name = e->d_name;
        if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
        std::uint32_t id = 0;
        try {
            id = static_cast<std::uint32_t>(std::stoul(name));
        } catch (const std::exception&) {
            continue;
        }
        const std::string path = dir + "/" + name;
        internal::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
        if (!fd || !try_lock(fd.get()) || !fs_util::still_named(fd.get(), path)) continue;
        const LeaseAction action = decide(id, path, read_all(fd.get()));
        if (action != LeaseAction::keep) ::unlink(path.c_str());
        if (action == LeaseAction::remove_and_stop) return;
    }
}

} // namespace

std::vector<StaleLease> release_stale_box_id_leases(const std::string& dir,
                                                    const std::string& state_dir,
                                                    const std::vector<std::string>& live_labels) {
    std::vector<StaleLease> removed;
    for_each_unheld_lease(
        dir, [&](std::uint32_t id, const std::string& path, const std::string& text) {
            if (text.empty()) return LeaseAction::remove; // never written: nobody ran as its id
            auto note = nlohmann::json::parse(text, nullptr, false);
            if (!note.is_object() || !note.contains("stateDir") || !note["stateDir"].is_string() ||
                !note.contains("label") || !note["label"].is_string()) {
                log::warn("reconcile", "box id lease '{}' is not one radiald wrote; left as it is",
                          path);
                return LeaseAction::keep;
            }
            if (note["stateDir"].get<std::string>() != state_dir) return LeaseAction::keep;
            std::string label = note["label"].get<std::string>();
            if (std::find(live_labels.begin(), live_labels.end(), label) != live_labels.end())
                return LeaseAction::keep;
            removed.push_back({id, std::move(label)});
            return LeaseAction::remove;
        });
    return removed;
}

std::vector<std::string> unheld_box_id_lease_labels(const std::string& dir,
                                                    const std::string& state_dir) {
    std::vector<std::string> labels;
    for_each_unheld_lease(dir, [&](std::uint32_t, const std::string&, const std::string& text) {
        auto note = nlohmann::json::parse(text, nullptr, false);
        if (note.is_object() && note.value("stateDir", std::string()) == state_dir &&
            note.contains("label") && note["label"].is_string())
            labels.push_back(note["label"].get<std::string>());
        return LeaseAction::keep;
    });
    return labels;
}

std::optional<std::uint32_t> release_box_id_lease_of(const std::string& dir,
                                                     const std::string& label) {
    std::optional<std::uint32_t> freed;
    for_each_unheld_lease(dir, [&](std::uint32_t id, const std::string&, const std::string& text) {
        auto note = nlohmann::json::parse(text, nullptr, false);
        if (!note.is_object() || note.value("label", std::string()) != label)
            return LeaseAction::keep;
        freed = id;
        return LeaseAction::remove_and_stop;
    });
    return freed;
}

} // namespace radial::turn
