// host/turn/workspace_handover.h — the workspace belongs to the box user while its turn runs, and
// to its owner again once the box is gone.
//
// Boxes run as an id of their own (config/box_identity.h), which cannot write a workspace that
// belongs to a host user. So, when radiald runs as root, the entries of the workspace tree that
// belong to the workspace directory's owner are handed to the box uid before the box starts, and
// afterwards every entry that belongs to the box uid is handed back to the owner, and the box gid
// replaced by the workspace directory's group: the owner can edit and delete everything the box
// wrote without root. The walk never follows a symlink (every step is relative to an open
// directory, with O_NOFOLLOW and AT_SYMLINK_NOFOLLOW), stays on the workspace's filesystem, and
// touches only entries owned by the id being mapped — except that the hand-back clears the
// setuid and setgid bits of every regular file it reaches, whoever owns it: no such file a box
// made survives its turn (a local user running it would become the box). The walk has no depth
// limit (it holds one directory open at a time) and stops after kWalkBudget, logging it. The
// workspace itself is opened without following a link anywhere in its path (the path was resolved
// when the turn was checked, so a link there now was put there since), and the hand-back walks
// that same directory, kept open meanwhile, wherever it was moved.
#pragma once

#include <radial/internal/unique_fd.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace radial::turn {

// "<file system id>:<inode>" of the directory open at `fd` (fstatfs's f_fsid, which a file system
// derives from what it is, not from the order devices were numbered at boot: a btrfs, NFS or
// device-mapper volume keeps it across remounts and reboots where st_dev changes); empty when it
// cannot be read. What a session keeps of its workspace (docs/design.md §13.12).
std::string directory_identity(int fd);

// How long one walk of a workspace may take before it stops (and says so): a box can make a
// tree too large to walk in any time a turn should wait.
inline constexpr std::chrono::seconds kWalkBudget{120};

// What a walk did: entries visited, setuid/setgid files cleared, entries of the box's that were
// writable by all users made not so, the deepest level entered, and whether it reached everything.
struct WalkReport {
    std::size_t visited = 0;
    std::size_t setid_cleared = 0;
    std::size_t open_to_all_cleared = 0; // entries of the box's that were writable by all
    std::size_t deepest = 0;
    bool complete = true;
};

// How the name of a hand-over note begins while it is written: readers of the notes pass over it
// (recover() removes one left unfinished by a killed radiald).
inline constexpr std::string_view kNoteBeingWritten = ".writing.";

// Where the hand-over notes of a state directory live.
inline std::string handover_marker_dir(const std::string& state_dir) {
    return state_dir + "/handovers";
}

class WorkspaceHandover {
public:
    // Hands the tree to `box_uid` unless radiald is not root (then it does nothing at all), the
    // box already runs as the owner, or the owner is root. Problems with single entries are
    // logged, never thrown. With a `marker` path (under the state directory), a note of the
    // hand-over is written there first and held locked until give_back(), so that a radiald
    // killed meanwhile leaves what recover() needs to hand the tree back.
    // `box_writes`: the box's mount of it is writable (workspace-write); a workspace that belongs
    // to root is then logged as one the box can write only where its modes let it.
    // `expected_identity` (a session's SessionRecord::workspace_id, directory_identity()): the
    // directory the path must still lead to; another is not handed over (moved()).
    // `recorded_owner` (a session's, from its create): the owner to give the tree back to when the
    // directory belongs to the box uid itself, which only a hand-back that never happened (a
    // radiald killed mid-turn, its box kept) leaves; otherwise the directory's owner is.
    WorkspaceHandover(std::string workspace, uid_t box_uid, gid_t box_gid, std::string marker = {},
                      bool box_writes = false,
                      std::optional<std::pair<uid_t, gid_t>> recorded_owner = std::nullopt,
                      const std::string& expected_identity = {});
    // Hands back (give_back()).
    ~WorkspaceHandover();

    WorkspaceHandover(const WorkspaceHandover&) = delete;
    WorkspaceHandover& operator=(const WorkspaceHandover&) = delete;

    // Gives every entry owned by the box uid (or gid) back to the workspace's owner (group). Call
    // only once the box is gone. Idempotent; never throws.
    void give_back() noexcept;

    // What the hand-back did (after give_back()).
    const WalkReport& report() const noexcept { return report_; }
    // Why the workspace was not handed over because it is not the directory the turn was checked
    // with (reached through a symbolic link now, or gone); empty otherwise. The turn must then not
    // start its box: docker would mount wherever the path leads now.
    const std::string& moved() const noexcept { return moved_; }
    // The first line of this hand-over's note ("<owner uid> <owner gid> <box uid> <box gid> <dev>
    // <inode>"): another note with the same line handed the same directory to the same ids.
    // Empty when no note was written.
    const std::string& note_ids() const noexcept { return note_ids_; }

    // Whether the box of the turn a note names (the note's file name) may still write into its
    // workspace: true keeps the note for a later recovery. May throw (taken as true).
    using BoxMayWrite = std::function<bool(const std::string& turn_id)>;

    // Hands back every workspace whose note in `marker_dir` no live radiald holds (its turn's
    // radiald was killed) and whose box `may_write` (if given) says has ended, then removes the
    // note: a box a killed radiald left running still writes as the box user, and what it wrote
    // after a hand-back would stay the box uid's with no note left to give it back. Returns how
    // many. Never throws; logs each.
    static std::size_t recover(const std::string& marker_dir,
                               const BoxMayWrite& may_write = {}) noexcept;

private:
    std::string workspace_;
    internal::UniqueFd root_; // the workspace directory handed over, open until the hand-back
    std::string marker_;
    internal::UniqueFd marker_fd_; // holds the note locked while the turn runs
    uid_t box_uid_;
    gid_t box_gid_;
    uid_t owner_uid_ = 0;
    gid_t owner_gid_ = 0;
    bool active_ = false;
    std::string moved_;
    std::string note_ids_;
    WalkReport report_;
};

} // namespace radial::turn
