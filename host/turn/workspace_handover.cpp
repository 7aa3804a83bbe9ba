#include "turn/workspace_handover.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <radial/internal/dir_names.h>
#include <radial/internal/unique_fd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "fs/open_no_links.h"
#include "log/logger.h"

namespace radial::turn {

namespace {

struct IdMap {
    uid_t from_uid, to_uid;
    bool map_gid = false;
    gid_t from_gid = 0, to_gid = 0;
    dev_t dev = 0;
    bool clear_setid = false; // the hand-back: see apply()
};

// Applies `m` to one entry `name` of `dir` (or to `dir` itself when name is empty); true when it
// is a directory on the walk's filesystem, to be walked.
bool apply(int dir, const char* name, const IdMap& m, const std::string& shown,
           WalkReport& report) {
    struct stat st {};
    const int flags = name[0] == '\0' ? AT_EMPTY_PATH : AT_SYMLINK_NOFOLLOW;
    if (::fstatat(dir, name, &st, flags) != 0) return false; // gone meanwhile
    ++report.visited;
    // A socket in the workspace is the owner's service (a rootless engine's, an agent's): given
    // to the box's uid, the box could connect and act as the owner, or as root through an engine
    // (docs/design.md §3.9). The hand-over leaves sockets with their owner; the hand-back still
    // gives the owner what the box made.
    if (S_ISSOCK(st.st_mode) && !m.clear_setid) return false;
    const uid_t uid = st.st_uid == m.from_uid ? m.to_uid : st.st_uid;
    const gid_t gid = m.map_gid && st.st_gid == m.from_gid ? m.to_gid : st.st_gid;
    if ((uid != st.st_uid || gid != st.st_gid) && ::fchownat(dir, name, uid, gid, flags) != 0)
        log::warn("turn", "workspace entry '{}': changing its owner to {}:{}: {}", shown, uid, gid,
                  std::strerror(errno));
    // The hand-back: no setuid or setgid file survives the turn, and nothing the box made
    // writable by every local user stays so once it is the owner's (another user could plant a
    // git hook that runs as the owner: docs/design.md §3.9).
    const bool setid = S_ISREG(st.st_mode) && (st.st_mode & (S_ISUID | S_ISGID)) != 0;
    // The box's entries only: a box that runs as the owner (run.user) hands back the owner's own
    // tree, whose modes are the owner's choice.
    const bool open_to_all = (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) &&
                             (st.st_mode & S_IWOTH) != 0 && st.st_uid == m.from_uid &&
                             m.from_uid != m.to_uid;
    if (m.clear_setid && (setid || open_to_all)) {
        // Through a descriptor of the very entry (no path, so no link, is followed); the chown
        // above clears S_ISUID, but not a S_ISGID without group execute, nor on a file owned
        // by someone else.
        internal::UniqueFd f;
        if (name[0] != '\0')
            f.reset(::openat(dir, name,
                             (S_ISDIR(st.st_mode) ? O_DIRECTORY : O_NONBLOCK | O_NOCTTY) |
                                 O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
        const int fd = name[0] == '\0' ? dir : f.get();
        struct stat now {};
        const mode_t drop = (setid ? S_ISUID | S_ISGID : 0) | (open_to_all ? S_IWOTH : 0);
        if (fd >= 0 && ::fstat(fd, &now) == 0 && now.st_ino == st.st_ino &&
            (now.st_mode & S_IFMT) == (st.st_mode & S_IFMT) &&
            ::fchmod(fd, now.st_mode & 07777 & ~drop) == 0) {
            report.setid_cleared += setid ? 1 : 0;
            report.open_to_all_cleared += open_to_all ? 1 : 0;
        } else {
            log::warn("turn", "workspace entry '{}': clearing its {}: {}", shown,
                      setid ? "setuid and setgid bits" : "write permission for all users",
                      std::strerror(errno));
        }
    }
    return S_ISDIR(st.st_mode) && st.st_dev == m.dev;
}

// Walks the tree at `root` depth first, holding one directory open at a time: a directory's
// names are read whole before its children are entered, and the walk climbs back through "..",
// checked against the directory it came from (a tree moved meanwhile stops the walk there).
// Stops at `deadline`, counting what it did not reach.
WalkReport walk(internal::UniqueFd cur, const std::string& root, const IdMap& m,
                std::chrono::steady_clock::time_point deadline) {
    WalkReport report;
    if (!cur) {
        log::warn("turn", "workspace '{}': {}; its owners are left as they are", root,
                  std::strerror(errno));
        report.complete = false;
        return report;
    }
    if (!apply(cur.get(), "", m, root, report)) return report;
    struct Level {
        dev_t dev;
        ino_t ino;
        std::vector<std::string> names;
        std::size_t next = 0;
        std::string shown;
    };
    std::vector<Level> stack;
    // A directory whose entries cannot be listed or opened (out of descriptors, a read error)
    // stops nothing else, but the walk says so and is not complete: what it did not reach keeps
    // the box's ids.
    auto unreached = [&](const std::string& shown, const char* what) {
        log::warn("turn", "workspace entry '{}': {}: {}; what is in it keeps its owner", shown,
                  what, std::strerror(errno));
        report.complete = false;
    };
    auto enter = [&](const std::string& shown) {
        auto names = internal::dir_names(cur.get());
        if (!names) {
            unreached(shown, "listing it");
            return false;
        }
        struct stat st {};
        ::fstat(cur.get(), &st);
        stack.push_back({st.st_dev, st.st_ino, std::move(*names), 0, shown});
        report.deepest = std::max(report.deepest, stack.size() - 1);
        return true;
    };
    if (!enter(root)) return report;
    while (!stack.empty()) {
        // Real time: bounds a walk of a real file tree (docs/design.md §12.7).
        if (std::chrono::steady_clock::now() >= deadline) {
            report.complete = false;
            break;
        }
        Level& level = stack.back();
        if (level.next == level.names.size()) {
            stack.pop_back();
            if (stack.empty()) break;
            internal::UniqueFd up(::openat(cur.get(), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
            struct stat st {};
            if (!up || ::fstat(up.get(), &st) != 0 || st.st_dev != stack.back().dev ||
                st.st_ino != stack.back().ino) {
                log::warn("turn",
                          "workspace '{}' was moved while it was walked; the rest is "
                          "left as it is",
                          stack.back().shown);
                report.complete = false;
                break;
            }
            cur = std::move(up);
            continue;
        }
        const std::string& name = level.names[level.next++];
        const std::string shown = level.shown + "/" + name;
        if (!apply(cur.get(), name.c_str(), m, shown, report)) continue;
        internal::UniqueFd sub(
            ::openat(cur.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!sub) {
            // Gone, or replaced by a non-directory meanwhile: nothing of it to give back.
            if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP)
                unreached(shown, "opening it");
            continue;
        }
        // Listed before it is entered: a directory that cannot be listed leaves `cur` where it
        // was, so the walk goes on with its parent's next entry.
        std::swap(cur, sub);
        if (!enter(shown)) std::swap(cur, sub);
    }
    return report;
}

// A note under its temporary name that nobody holds: one a turn's start is about to lock (just
// made), or one a radiald killed before the rename left, which handed nothing over (the walk
// comes after the rename). Only the second is removed; a minute is far longer than the window.
void remove_if_abandoned(int fd, const std::filesystem::path& path) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return;
    // Real time: the file's own modification time is on the wall clock.
    if (::time(nullptr) - st.st_mtime < 60) return;
    if (::unlink(path.c_str()) == 0)
        log::info("turn", "removed '{}', a hand-over note a killed radiald did not finish",
                  path.string());
}

} // namespace

std::string directory_identity(int fd) {
    struct stat st {};
    struct statfs fs {};
    if (::fstat(fd, &st) != 0 || ::fstatfs(fd, &fs) != 0) return {};
    int fsid[2];
    static_assert(sizeof fsid == sizeof fs.f_fsid);
    std::memcpy(fsid, &fs.f_fsid, sizeof fsid);
    return fmt::format("{:08x}{:08x}:{}", static_cast<unsigned>(fsid[0]),
                       static_cast<unsigned>(fsid[1]), static_cast<std::uint64_t>(st.st_ino));
}

WorkspaceHandover::WorkspaceHandover(std::string workspace, uid_t box_uid, gid_t box_gid,
                                     std::string marker, bool box_writes,
                                     std::optional<std::pair<uid_t, gid_t>> recorded_owner,
                                     const std::string& expected_identity)
    : workspace_(std::move(workspace)), box_uid_(box_uid), box_gid_(box_gid) {
    if (::geteuid() != 0 || workspace_.empty()) return;
    // The path was resolved when the turn was checked (request_policy.h), so a link in it now was
    // put there since — by the owner, who could otherwise point the hand-over at another user's
    // tree.
    internal::UniqueFd fd = fs_util::open_no_links(workspace_, O_RDONLY | O_DIRECTORY);
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        const int err = errno;
        if (err == ELOOP)
            moved_ = fmt::format(
                "workspace '{}' is reached through a symbolic link now, which it "
                "was not when the turn was checked",
                workspace_);
        else if (err == ENOENT || err == ENOTDIR)
            moved_ = fmt::format("workspace '{}' is no longer a directory there", workspace_);
        return;
    }
    // A session's box has the directory it was made with for its life: another put at the path
    // since is not what the turn works in, and is not to be given to the box's ids (docs/design.md
    // §3.9).
    if (!expected_identity.empty() && directory_identity(fd.get()) != expected_identity) {
        moved_ = fmt::format(
            "workspace '{}' is not the directory its session was created with (it was moved or "
            "replaced since)",
            workspace_);
        return;
    }
    // Kept until the hand-back, which walks this very directory wherever it was moved to.
    root_ = internal::UniqueFd(::dup(fd.get()));
    if (!root_) return;
    owner_uid_ = st.st_uid;
    owner_gid_ = st.st_gid;
    if (st.st_uid == box_uid_ && recorded_owner && recorded_owner->first != box_uid_) {
        log::info("turn",
                  "workspace '{}' belongs to the box uid {}, as a radiald killed during an earlier "
                  "turn left it: it goes back to uid {} after this turn, its owner at the "
                  "session's create",
                  workspace_, box_uid_, recorded_owner->first);
        owner_uid_ = recorded_owner->first;
        owner_gid_ = recorded_owner->second;
    }
    active_ = true;
    if (!marker.empty()) {
        // radiald's own, whatever the umask: a note is an order to chown a tree (recover()).
        const std::filesystem::path marker_path(marker);
        const std::string notes = marker_path.parent_path().string();
        if (::mkdir(notes.c_str(), 0700) == 0) ::chmod(notes.c_str(), 0700);
        // Written and locked under a name recover() passes over, then renamed: a note under its
        // own name is always whole and held, so a recovery beside this turn's start (session rm,
        // reconcile) never takes an empty one for a forged note, nor one its turn still writes.
        std::string written = notes + "/" + std::string(kNoteBeingWritten) +
                              marker_path.filename().string() + ".XXXXXX";
        const int fd = ::mkostemp(written.data(), O_CLOEXEC);
        const std::string note = std::to_string(owner_uid_) + " " + std::to_string(owner_gid_) +
                                 " " + std::to_string(box_uid_) + " " + std::to_string(box_gid_) +
                                 " " + std::to_string(st.st_dev) + " " + std::to_string(st.st_ino) +
                                 "\n" + workspace_ + "\n";
        if (fd < 0 || ::flock(fd, LOCK_EX) != 0 ||
            ::write(fd, note.data(), note.size()) != static_cast<ssize_t>(note.size()) ||
            ::fsync(fd) != 0 || ::rename(written.c_str(), marker.c_str()) != 0) {
            log::warn("turn",
                      "writing '{}': {}; if radiald dies during this turn, hand '{}' back "
                      "to uid {} by hand",
                      marker, std::strerror(errno), workspace_, owner_uid_);
            if (fd >= 0) ::unlink(written.c_str());
        }
        if (fd >= 0) {
            marker_ = std::move(marker);
            marker_fd_.reset(fd);
            note_ids_ = note.substr(0, note.find('\n'));
        }
    }
    // A root-owned tree is never given to a box (its files may be the host's own): said, since
    // the box's writes then fail with nothing but "Permission denied" inside it.
    if (owner_uid_ == 0 && box_uid_ != 0 && box_writes)
        log::warn("turn",
                  "workspace '{}' belongs to root, and radiald never hands a root-owned tree to a "
                  "box: the box (uid {}) can write only where the workspace's modes let it. Give "
                  "the workspace to the user whose work it is (chown -R USER: '{}'), or run boxes "
                  "as root in a user namespace of their own (an engine with --userns-remap)",
                  workspace_, box_uid_, workspace_);
    if (owner_uid_ == box_uid_ || owner_uid_ == 0) return; // only the hand-back is needed
    IdMap m{owner_uid_, box_uid_};
    m.dev = st.st_dev;
    // Real time: bounds a walk of a real file tree (docs/design.md §12.7).
    walk(std::move(fd), workspace_, m, std::chrono::steady_clock::now() + kWalkBudget);
}

WorkspaceHandover::~WorkspaceHandover() { give_back(); }

void WorkspaceHandover::give_back() noexcept {
    if (!active_) return;
    active_ = false;
    try {
        struct stat st {};
        if (::fstat(root_.get(), &st) == 0) {
            IdMap m{box_uid_, owner_uid_, true, box_gid_, owner_gid_, st.st_dev, true};
            // Real time: bounds a walk of a real file tree (docs/design.md §12.7).
            report_ = walk(std::move(root_), workspace_, m,
                           std::chrono::steady_clock::now() + kWalkBudget);
            if (!report_.complete)
                log::warn("turn",
                          "handing workspace '{}' back to uid {}: incomplete after {} entries "
                          "(a part it could not reach, said above, or its {} s ran out); what it "
                          "did not reach keeps its owner and mode",
                          workspace_, owner_uid_, report_.visited,
                          std::chrono::duration_cast<std::chrono::seconds>(kWalkBudget).count());
        }
    } catch (const std::exception& e) {
        log::warn("turn", "handing workspace '{}' back to uid {}: {}", workspace_, owner_uid_,
                  e.what());
    }
    if (marker_fd_) {
        ::unlink(marker_.c_str()); // before the lock goes: nobody recovers a finished hand-over
        marker_fd_.reset();
    }
}

std::size_t WorkspaceHandover::recover(const std::string& marker_dir,
                                       const BoxMayWrite& may_write) noexcept {
    std::size_t recovered = 0;
    try {
        // A note is an order to give a tree to its owner, carried out as root: only radiald's
        // user may have written one. A directory others could write (made under a umask of 0 by
        // an older radiald) is made radiald's alone, and what anyone else put in it is not obeyed.
        if (struct stat d{}; ::lstat(marker_dir.c_str(), &d) == 0 && S_ISDIR(d.st_mode) &&
                             d.st_uid == ::geteuid() && (d.st_mode & 022) != 0) {
            log::warn("turn",
                      "the hand-over notes' directory '{}' was writable by others (mode {:o}); "
                      "made mode 0700, and no note another user could have put there is obeyed",
                      marker_dir, d.st_mode & 07777);
            ::chmod(marker_dir.c_str(), 0700);
        }
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator(marker_dir, ec)) {
            internal::UniqueFd fd(
                ::open(entry.path().c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
            if (!fd || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue; // its turn still runs
            const std::string turn_id = entry.path().filename().string();
            if (turn_id.starts_with(kNoteBeingWritten)) {
                remove_if_abandoned(fd.get(), entry.path());
                continue;
            }
            if (struct stat n{}; ::fstat(fd.get(), &n) != 0 || !S_ISREG(n.st_mode) ||
                                 n.st_uid != ::geteuid() || (n.st_mode & 022) != 0 ||
                                 n.st_nlink != 1) {
                log::warn("turn",
                          "'{}' is no hand-over note of radiald's (not a file of uid {} that no "
                          "other may write, with one link): not obeyed, and removed",
                          entry.path().string(), ::geteuid());
                ::unlink(entry.path().c_str());
                continue;
            }
            bool box_writes = false;
            try {
                box_writes = may_write && may_write(turn_id);
            } catch (const std::exception& e) {
                box_writes = true;
                log::warn("turn", "turn {}: whether its box still runs is not known ({})", turn_id,
                          e.what());
            }
            if (box_writes) {
                log::info("turn",
                          "turn {}: its radiald was killed and its box may still write into its "
                          "workspace; the workspace is handed back once the box is gone "
                          "(radiald reconcile, or the next start of radiald run)",
                          turn_id);
                continue;
            }
            std::ifstream in(entry.path());
            unsigned long owner_uid = 0, owner_gid = 0, box_uid = 0, box_gid = 0;
            unsigned long long dev = 0, ino = 0;
            std::string line, workspace;
            std::getline(in, line);
            std::istringstream ids(line);
            std::getline(in, workspace);
            // A box never runs as root: no note gives root's files away.
            if ((ids >> owner_uid >> owner_gid >> box_uid >> box_gid) && !workspace.empty() &&
                box_uid != 0 && box_gid != 0) {
                // The directory the note was written for, by the path with no link in it, or
                // none (a note without its inode is older: its path is trusted).
                const bool has_inode = static_cast<bool>(ids >> dev >> ino);
                internal::UniqueFd root = fs_util::open_no_links(workspace, O_RDONLY | O_DIRECTORY);
                struct stat st {};
                const bool same = root && ::fstat(root.get(), &st) == 0 &&
                                  (!has_inode || (st.st_dev == dev && st.st_ino == ino));
                if (!same)
                    log::warn("turn",
                              "workspace '{}' of a hand-over note is not the directory handed "
                              "to a box any more (moved, replaced or reached through a link): "
                              "give what uid {} owns in it back to uid {} by hand",
                              workspace, box_uid, owner_uid);
                if (same) {
                    IdMap m{static_cast<uid_t>(box_uid),
                            static_cast<uid_t>(owner_uid),
                            true,
                            static_cast<gid_t>(box_gid),
                            static_cast<gid_t>(owner_gid),
                            st.st_dev,
                            true};
                    // Real time: bounds a walk of a real file tree (docs/design.md §12.7).
                    walk(std::move(root), workspace, m,
                         std::chrono::steady_clock::now() + kWalkBudget);
                    log::info("turn",
                              "handed workspace '{}' back to uid {} after a turn whose radiald "
                              "stopped before doing so",
                              workspace, owner_uid);
                    ++recovered;
                }
            } else {
                log::warn("turn", "'{}' is not a workspace hand-over note; removed",
                          entry.path().string());
            }
            ::unlink(entry.path().c_str());
        }
    } catch (const std::exception& e) {
        log::warn("turn", "recovering workspace hand-overs from '{}': {}", marker_dir, e.what());
    }
    return recovered;
}

} // namespace radial::turn
