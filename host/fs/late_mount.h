// host/fs/late_mount.h — the host's side of a box that receives its mounts after it started
// (docs/design.md §13.13, the warm pool): a directory made a mount point with shared propagation,
// which a box mounts with slave propagation (radial_spec_propagation), and the bind mounts the host
// later makes below it, which then appear in the box.
#pragma once

#include <filesystem>
#include <string>

namespace radial::fs_util {

// `dir` bound onto itself and made shared (MS_BIND, then MS_SHARED), so that a box that mounts it
// with slave propagation sees every mount made below it afterwards. The destructor detaches it
// (MNT_DETACH), with everything still mounted below it: a box holding a slave copy keeps it
// until the box ends, and the host's view is clean at once. Needs CAP_SYS_ADMIN in the host's
// mount namespace. Throws FsError naming the step and the path. Move-only; one thread at a time.
class ReceivingDir {
public:
    explicit ReceivingDir(std::filesystem::path dir);
    ReceivingDir(ReceivingDir&& o) noexcept;
    ReceivingDir& operator=(ReceivingDir&&) = delete;
    ReceivingDir(const ReceivingDir&) = delete;
    ~ReceivingDir();
    const std::filesystem::path& path() const noexcept { return dir_; }

private:
    std::filesystem::path dir_; // empty once moved from
};

// A bind mount of `source` at `target` (an existing directory, usually below a ReceivingDir),
// read-only when asked. The mount is built detached (open_tree with OPEN_TREE_CLONE | AT_RECURSIVE,
// then mount_setattr with MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV) and only then
// attached (move_mount), so the copy that propagates into a box carries those flags from its first
// moment: a read-only workspace is never writable in the box, not even for an instant. Links are
// not followed in `source`'s last component. The destructor detaches it (MNT_DETACH). Throws
// FsError naming the step and the paths. Move-only; one thread at a time.
class LateMount {
public:
    LateMount(const std::filesystem::path& source, std::filesystem::path target, bool read_only);
    LateMount(LateMount&& o) noexcept;
    LateMount& operator=(LateMount&&) = delete;
    LateMount(const LateMount&) = delete;
    ~LateMount();
    const std::filesystem::path& target() const noexcept { return target_; }

private:
    std::filesystem::path target_; // empty once moved from
};

} // namespace radial::fs_util
