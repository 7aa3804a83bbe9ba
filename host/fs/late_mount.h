// host/fs/late_mount.h — the host's side of a box that receives its mounts after it started
// (docs/design.md §13.13, the warm pool): a directory made a mount point of a peer group of its
// own, which a box mounts with slave propagation (radial_spec_propagation), and the bind mount
// the host later stacks on it, which then appears in the box.
#pragma once

#include <radial/internal/unique_fd.h>

#include <filesystem>

namespace radial::fs_util {

// `dir` bound onto itself, made private and then shared (MS_BIND, MS_PRIVATE, MS_SHARED): a peer
// group of its own, so that a mount stacked on it reaches the boxes that mount it with slave
// propagation and nothing else — not the peers of the file system it lies on (systemd makes `/`
// shared, and a plain bind of a shared mount joins its peer group). The destructor detaches it
// (MNT_DETACH) with whatever is stacked on it: a box holding a slave copy keeps that until the box
// ends, and the host's view is clean at once. `dir` must be a directory only root can change
// (under the state directory): it is resolved by path once, here. Needs CAP_SYS_ADMIN in the
// host's mount namespace. Throws FsError naming the step and the path. Move-only; one thread at a
// time.
class ReceivingDir {
public:
    explicit ReceivingDir(std::filesystem::path dir);
    ReceivingDir(ReceivingDir&& o) noexcept = default;
    ReceivingDir& operator=(ReceivingDir&&) = delete;
    ReceivingDir(const ReceivingDir&) = delete;
    ~ReceivingDir();
    const std::filesystem::path& path() const noexcept { return dir_; }
    // An O_PATH descriptor of the bind mount's root.
    int fd() const noexcept { return root_.get(); }

private:
    std::filesystem::path dir_;
    internal::UniqueFd root_; // invalid once moved from
};

// A bind mount of `source` stacked on `into`, read-only when asked, so that a box mounting `into`
// with slave propagation sees `source` at that mount's target. The mount is built detached
// (open_tree with OPEN_TREE_CLONE | AT_RECURSIVE, then mount_setattr: nosuid, nodev, read-only
// when asked) and only then attached, by descriptor (move_mount onto `into`'s root), so the copy
// that propagates into a box carries those flags from its first moment: a read-only workspace is
// never writable in the box, not even for an instant. Once attached it is made private, so that
// nothing the host mounts below `source` later follows it into the box. `source` (absolute, as
// radiald resolved it) is opened without following a link anywhere on it (open_no_links.h): a
// link there fails the mount with ELOOP rather than mount another tree. The destructor detaches
// exactly this mount (through its own descriptor), never whatever else a path may name by then.
// Throws FsError naming the step and the paths. Move-only; one thread at a time.
class LateMount {
public:
    LateMount(const ReceivingDir& into, const std::filesystem::path& source, bool read_only);
    LateMount(LateMount&& o) noexcept = default;
    LateMount& operator=(LateMount&&) = delete;
    LateMount(const LateMount&) = delete;
    ~LateMount();

private:
    internal::UniqueFd tree_; // the attached mount's root; invalid once moved from
};

} // namespace radial::fs_util
