// radial/internal/dir_names.h — the names in an open directory, read whole, for the walks of a
// tree that a box may have shaped (the docker runtime's walk of a box's changes, radiald's
// hand-over of a workspace): a walk lists a directory, closes the listing and only then enters its
// children, so it holds one descriptor per level however deep the tree goes.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <cerrno>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace radial::internal {

// Every name in the directory open as `dir_fd` but "." and "..", from its start, through a
// descriptor of its own (which shares, and moves, `dir_fd`'s read position: use `dir_fd` with the
// *at calls only). nullopt with errno set when the directory cannot be listed whole (out of
// descriptors, a read error): a caller must not take a partial list for the whole; nullopt with
// errno EOVERFLOW when it holds more than `most` names (a tree the box shaped: its names would be
// held in memory at once). Throws std::bad_alloc. Thread-safe.
inline std::optional<std::vector<std::string>> dir_names(
    int dir_fd, std::size_t most = std::numeric_limits<std::size_t>::max()) {
    const int listing_fd = ::dup(dir_fd);
    if (listing_fd < 0) return std::nullopt;
    std::unique_ptr<DIR, int (*)(DIR*)> listing(::fdopendir(listing_fd), ::closedir);
    if (!listing) {
        const int err = errno;
        ::close(listing_fd);
        errno = err;
        return std::nullopt;
    }
    ::rewinddir(listing.get());
    std::vector<std::string> names;
    errno = 0;
    while (const dirent* e = ::readdir(listing.get())) {
        const std::string_view name = e->d_name;
        if (name != "." && name != "..") names.emplace_back(name);
        if (names.size() > most) {
            listing.reset();
            errno = EOVERFLOW;
            return std::nullopt;
        }
        errno = 0;
    }
    if (const int err = errno; err != 0) {
        listing.reset();
        errno = err;
        return std::nullopt;
    }
    return names;
}

} // namespace radial::internal
