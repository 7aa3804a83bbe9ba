// plugins/docker/upper_dir_walk.h — the entries a session's box changed, read from its overlay
// upper directory on the host (docs/design.md §13.12: what a snapshot may not keep is looked for
// in exactly what the box wrote, never in what the box says it wrote).
#pragma once

#include <cstddef>
#include <cstdint>
#include <radial/plugin/session.hpp>
#include <string>
#include <utility>
#include <vector>

namespace radial::docker {

// How many directory levels below the upper directory a walk goes; deeper is unreadable.
inline constexpr std::size_t kMostWalkDepth = 128;
// How many entries the directories on one path of the changes may hold together; more is
// unreadable: the walk holds each directory's names until its last child is walked, beside those
// of every directory above it, in the plugin's process (which may be radiald's).
inline constexpr std::size_t kMostNamesHeld = std::size_t{1} << 18;

// Walks `upper_dir` (an overlayfs upper directory: the box's own changes) without following any
// link, and gives `sink` every entry whose inode changed (ctime) at or after `since_ms` (Unix
// epoch), named by its path in the box ("/etc/x"): a regular file with its bytes (holes
// skipped), a symbolic link with its target, anything else with no bytes; each then followed by
// the values of its extended attributes (overlayfs' own "trusted.overlay." ones excepted).
// Below a directory that changed (not the root), every entry is given too, by its name alone
// when it did not change itself: its full path may be new (a directory above it was renamed,
// which changes that directory's ctime, not its children's), and a path can carry a secret's
// value as well as bytes can. Overlayfs whiteouts (removals) are not given. Stops when the sink
// asks to. Throws
// radial::plugin::Error(RADIAL_E_UNAVAILABLE) naming the path it cannot read: an unread entry
// must not pass for a clean one. Reads as the calling process (root: the engine's data root is
// root's). A directory more than kMostWalkDepth levels down is such an entry too: the walk holds
// one descriptor per level (the plugin may share radiald's process and its descriptor limit); so
// is one whose entries, with those of the directories above it, come to more than kMostNamesHeld.
// `most_names_held`: kMostNamesHeld but in tests of the bound.
void walk_upper_dir(const std::string& upper_dir, std::uint64_t since_ms,
                    radial::plugin::ChangeSink& sink, std::size_t most_names_held = kMostNamesHeld);

// What a commit of the changes would write: the layer's archive.
struct UpperDirSize {
    // Each entry's header block and the extended header of what does not fit it (a name or link
    // target over 100 bytes, extended attributes), and each regular file's apparent size (once
    // per inode), in 512-byte blocks; saturating.
    std::uint64_t bytes = 0;
    std::uint64_t entries = 0; // every name below the upper directory
    // The biggest files (path in the box, st_size), biggest first; at most `most_biggest`.
    std::vector<std::pair<std::string, std::uint64_t>> biggest;
};

// Sums what a commit of everything under `upper_dir` writes (UpperDirSize): every entry's
// headers, names, link targets and extended attributes, and the apparent size (st_size) of every
// regular file — a sparse file's holes too: a commit writes them out as zeros
// (docs/design.md §13.12) — counting a file with several names once, without following any link
// or reading any contents. Names the `most_biggest` biggest files. Bounded and throwing as
// walk_upper_dir (kMostWalkDepth, `most_names_held`; RADIAL_E_UNAVAILABLE naming an entry it cannot
// inspect). Reads as the calling process; no state: thread-safe.
UpperDirSize size_upper_dir(const std::string& upper_dir, std::size_t most_biggest = 3,
                            std::size_t most_names_held = kMostNamesHeld);

} // namespace radial::docker
