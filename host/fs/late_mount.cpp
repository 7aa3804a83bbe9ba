#include "fs/late_mount.h"

#include <fcntl.h>
#include <radial/internal/unique_fd.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "fs/fs_error.h"

namespace radial::fs_util {
namespace {

[[noreturn]] void fail(const std::string& step, const std::filesystem::path& path) {
    throw FsError(step + " '" + path.string() + "'", errno);
}

void detach(const std::filesystem::path& p) noexcept {
    if (!p.empty()) ::umount2(p.c_str(), MNT_DETACH);
}

} // namespace

ReceivingDir::ReceivingDir(std::filesystem::path dir) : dir_(std::move(dir)) {
    if (::mount(dir_.c_str(), dir_.c_str(), nullptr, MS_BIND, nullptr) != 0)
        fail("binding onto itself", dir_);
    if (::mount(nullptr, dir_.c_str(), nullptr, MS_SHARED, nullptr) != 0) {
        const int err = errno;
        detach(dir_);
        errno = err;
        fail("making shared", dir_);
    }
}

ReceivingDir::ReceivingDir(ReceivingDir&& o) noexcept : dir_(std::exchange(o.dir_, {})) {}

ReceivingDir::~ReceivingDir() { detach(dir_); }

LateMount::LateMount(const std::filesystem::path& source, std::filesystem::path target,
                     bool read_only)
    : target_(std::move(target)) {
    const internal::UniqueFd tree(
        ::open_tree(AT_FDCWD, source.c_str(),
                    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW));
    if (!tree) {
        target_.clear();
        fail("cloning the mount of", source);
    }
    mount_attr attr{};
    attr.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (read_only ? MOUNT_ATTR_RDONLY : 0);
    if (::mount_setattr(tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) != 0 ||
        ::move_mount(tree.get(), "", AT_FDCWD, target_.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0) {
        const int err = errno;
        const std::filesystem::path t = std::exchange(target_, {});
        errno = err;
        fail("mounting '" + source.string() + "' at", t);
    }
}

LateMount::LateMount(LateMount&& o) noexcept : target_(std::exchange(o.target_, {})) {}

LateMount::~LateMount() { detach(target_); }

} // namespace radial::fs_util
