#include "turn/workspace_handover.h"

#include <dirent.h>
#include <fcntl.h>
#include <radial/internal/unique_fd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "log/logger.h"

namespace radial::turn {

namespace {

// Deeper trees are left as they are below this depth (and logged): each level holds a descriptor.
constexpr int kMaxDepth = 128;

struct IdMap {
    uid_t from_uid, to_uid;
    bool map_gid = false;
    gid_t from_gid = 0, to_gid = 0;
    dev_t dev = 0;
};

// Applies `m` to `name` in `dir` (or to `dir` itself when name is empty), then to what is below
// it when it is a directory on the same filesystem.
void remap(int dir, const char* name, const IdMap& m, int depth, const std::string& shown) {
    struct stat st {};
    const int flags = name[0] == '\0' ? AT_EMPTY_PATH : AT_SYMLINK_NOFOLLOW;
    if (::fstatat(dir, name, &st, flags) != 0) return; // gone meanwhile
    const uid_t uid = st.st_uid == m.from_uid ? m.to_uid : st.st_uid;
    const gid_t gid = m.map_gid && st.st_gid == m.from_gid ? m.to_gid : st.st_gid;
    if ((uid != st.st_uid || gid != st.st_gid) && ::fchownat(dir, name, uid, gid, flags) != 0)
        log::warn("turn", "workspace entry '{}': changing its owner to {}:{}: {}", shown, uid, gid,
                  std::strerror(errno));
    if (!S_ISDIR(st.st_mode) || st.st_dev != m.dev) return;
    if (depth >= kMaxDepth) {
        log::warn("turn",
                  "workspace entry '{}' is nested over {} levels deep; its contents keep "
                  "their owners",
                  shown, kMaxDepth);
        return;
    }
    internal::UniqueFd sub(
        name[0] == '\0' ? ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                        : ::openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub) return; // replaced by a non-directory meanwhile
    const int listing_fd = ::dup(sub.get());
    if (listing_fd < 0) return;
    std::unique_ptr<DIR, int (*)(DIR*)> listing(::fdopendir(listing_fd), ::closedir);
    if (!listing) {
        ::close(listing_fd);
        return;
    }
    while (const dirent* e = ::readdir(listing.get())) {
        if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
        remap(sub.get(), e->d_name, m, depth + 1, shown + "/" + e->d_name);
    }
}

void remap_tree(const std::string& root, const IdMap& m) {
    internal::UniqueFd dir(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir) {
        log::warn("turn", "workspace '{}': {}; its owners are left as they are", root,
                  std::strerror(errno));
        return;
    }
    remap(dir.get(), "", m, 0, root);
}

} // namespace

WorkspaceHandover::WorkspaceHandover(std::string workspace, uid_t box_uid, gid_t box_gid,
                                     std::string marker)
    : workspace_(std::move(workspace)), box_uid_(box_uid), box_gid_(box_gid) {
    if (::geteuid() != 0 || workspace_.empty()) return;
    struct stat st {};
    if (::stat(workspace_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return;
    owner_uid_ = st.st_uid;
    owner_gid_ = st.st_gid;
    active_ = true;
    if (!marker.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(std::filesystem::path(marker).parent_path(), ec);
        const int fd =
            ::open(marker.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        const std::string note = std::to_string(owner_uid_) + " " + std::to_string(owner_gid_) +
                                 " " + std::to_string(box_uid_) + " " + std::to_string(box_gid_) +
                                 "\n" + workspace_ + "\n";
        if (fd < 0 || ::flock(fd, LOCK_EX) != 0 ||
            ::write(fd, note.data(), note.size()) != static_cast<ssize_t>(note.size()) ||
            ::fsync(fd) != 0)
            log::warn("turn",
                      "writing '{}': {}; if radiald dies during this turn, hand '{}' back "
                      "to uid {} by hand",
                      marker, std::strerror(errno), workspace_, owner_uid_);
        if (fd >= 0) {
            marker_ = std::move(marker);
            marker_fd_.reset(fd);
        }
    }
    if (owner_uid_ == box_uid_ || owner_uid_ == 0) return; // only the hand-back is needed
    IdMap m{owner_uid_, box_uid_};
    m.dev = st.st_dev;
    remap_tree(workspace_, m);
}

WorkspaceHandover::~WorkspaceHandover() { give_back(); }

void WorkspaceHandover::give_back() noexcept {
    if (!active_) return;
    active_ = false;
    try {
        struct stat st {};
        if (::stat(workspace_.c_str(), &st) == 0) {
            IdMap m{box_uid_, owner_uid_, true, box_gid_, owner_gid_, st.st_dev};
            remap_tree(workspace_, m);
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

std::size_t WorkspaceHandover::recover(const std::string& marker_dir) noexcept {
    std::size_t recovered = 0;
    try {
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator(marker_dir, ec)) {
            internal::UniqueFd fd(
                ::open(entry.path().c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
            if (!fd || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue; // its turn still runs
            std::ifstream in(entry.path());
            unsigned long owner_uid = 0, owner_gid = 0, box_uid = 0, box_gid = 0;
            std::string line, workspace;
            std::getline(in, line);
            std::istringstream ids(line);
            std::getline(in, workspace);
            if ((ids >> owner_uid >> owner_gid >> box_uid >> box_gid) && !workspace.empty()) {
                struct stat st {};
                if (::stat(workspace.c_str(), &st) == 0) {
                    IdMap m{static_cast<uid_t>(box_uid), static_cast<uid_t>(owner_uid), true,
                            static_cast<gid_t>(box_gid), static_cast<gid_t>(owner_gid), st.st_dev};
                    remap_tree(workspace, m);
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
