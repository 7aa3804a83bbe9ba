#include "fs/late_mount.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>

#include "fs/fs_error.h"
#include "fs/open_no_links.h"

namespace radial::fs_util {
namespace {

[[noreturn]] void fail(const std::string& step, const std::filesystem::path& path) {
    throw FsError(step + " '" + path.string() + "'", errno);
}

// Detaches the mount whose root `fd` (O_PATH) is: /proc/self/fd/N names exactly that mount, where
// a path could name another one stacked there since.
void detach(const internal::UniqueFd& fd) noexcept {
    if (fd) ::umount2(("/proc/self/fd/" + std::to_string(fd.get())).c_str(), MNT_DETACH);
}

} // namespace

ReceivingDir::ReceivingDir(std::filesystem::path dir) : dir_(std::move(dir)) {
    if (::mount(dir_.c_str(), dir_.c_str(), nullptr, MS_BIND, nullptr) != 0)
        fail("binding onto itself", dir_);
    root_.reset(::open(dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
    if (!root_) {
        const int err = errno;
        ::umount2(dir_.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW);
        errno = err;
        fail("opening the mount", dir_);
    }
    if (::mount(nullptr, dir_.c_str(), nullptr, MS_PRIVATE, nullptr) != 0 ||
        ::mount(nullptr, dir_.c_str(), nullptr, MS_SHARED, nullptr) != 0) {
        const int err = errno;
        detach(root_);
        errno = err;
        fail("making a peer group of its own for", dir_);
    }
}

ReceivingDir::~ReceivingDir() { detach(root_); }

LateMount::LateMount(const ReceivingDir& into, const std::filesystem::path& source,
                     bool read_only) {
    // The source as radiald resolved and checked it, reached now without a link anywhere on it:
    // one put on the path since (a directory swapped for a link to another user's tree) ends the
    // mount, never redirects it (docs/design.md §13.14).
    const internal::UniqueFd pinned = open_no_links(source.string(), O_PATH);
    if (!pinned) fail("opening, without following links,", source);
    internal::UniqueFd tree(::open_tree(
        pinned.get(), "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE));
    if (!tree) fail("cloning the mount of", source);
    mount_attr attr{};
    attr.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (read_only ? MOUNT_ATTR_RDONLY : 0);
    if (::mount_setattr(tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) != 0)
        fail("setting the flags of the mount of", source);
    if (::move_mount(tree.get(), "", into.fd(), "",
                     MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
        fail("mounting '" + source.string() + "' on", into.path());
    tree_ = std::move(tree);
    // Attached below a shared mount, it became shared, its copies in the boxes its slaves; made
    // private now, a mount the host makes below `source` later stays out of them. Its unmount
    // still reaches them: that follows the receiving directory's propagation, not its own.
    mount_attr priv{};
    priv.propagation = MS_PRIVATE;
    if (::mount_setattr(tree_.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &priv, sizeof priv) != 0) {
        const int err = errno;
        detach(tree_);
        errno = err;
        fail("making private the mount of '" + source.string() + "' on", into.path());
    }
}

LateMount::~LateMount() { detach(tree_); }

} // namespace radial::fs_util
