#include "upper_dir_walk.h"

#include <fcntl.h>
#include <radial/internal/dir_names.h>
#include <radial/internal/unique_fd.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace radial::docker {
namespace {

using radial::plugin::ChangeSink;
using radial::plugin::Error;

Error unreadable(const std::string& what, const std::string& path) {
    return Error(RADIAL_E_UNAVAILABLE, what + " '" + path +
                                           "' of the box's changes: " + std::strerror(errno) +
                                           "; an entry that cannot be read cannot be checked");
}

bool changed_since(const struct stat& st, std::uint64_t since_ms) {
    const auto ms = static_cast<std::uint64_t>(st.st_ctim.tv_sec) * 1000u +
                    static_cast<std::uint64_t>(st.st_ctim.tv_nsec) / 1000000u;
    return st.st_ctim.tv_sec >= 0 && ms >= since_ms;
}

// The bytes of regular file `fd`, data extents only (a sparse file's holes are zeros).
bool give_contents(int fd, const std::string& path, ChangeSink& sink) {
    std::vector<char> buf(1 << 16);
    off_t at = 0;
    for (;;) {
        off_t data = ::lseek(fd, at, SEEK_DATA);
        if (data < 0) {
            if (errno == ENXIO) return true; // no data after `at`
            throw unreadable("seeking in", path);
        }
        off_t hole = ::lseek(fd, data, SEEK_HOLE);
        if (hole < 0) throw unreadable("seeking in", path);
        for (off_t pos = data; pos < hole;) {
            const auto want = static_cast<std::size_t>(
                std::min<off_t>(hole - pos, static_cast<off_t>(buf.size())));
            const ssize_t n = ::pread(fd, buf.data(), want, pos);
            if (n < 0) {
                if (errno == EINTR) continue;
                throw unreadable("reading", path);
            }
            if (n == 0) return true;
            if (!sink.data(buf.data(), static_cast<std::size_t>(n))) return false;
            pos += n;
        }
        at = hole;
    }
}

// The values of the entry's extended attributes, overlayfs' own excepted. `fd` is an O_PATH
// descriptor of the entry (no link followed); its /proc/self/fd link, followed, is that very
// inode (a magic link names the object, not a path), so a symlink's own attributes are read.
bool give_xattrs(int fd, const std::string& path, ChangeSink& sink) {
    const std::string proc = "/proc/self/fd/" + std::to_string(fd);
    std::vector<char> names(4096);
    ssize_t n;
    while ((n = ::listxattr(proc.c_str(), names.data(), names.size())) < 0 && errno == ERANGE)
        names.resize(names.size() * 4);
    if (n < 0) {
        if (errno == ENOTSUP) return true;
        throw unreadable("listing the attributes of", path);
    }
    std::vector<char> value(4096);
    for (ssize_t i = 0; i < n;) {
        const std::string name(names.data() + i);
        i += static_cast<ssize_t>(name.size()) + 1;
        if (name.rfind("trusted.overlay.", 0) == 0) continue;
        ssize_t v;
        while ((v = ::getxattr(proc.c_str(), name.c_str(), value.data(), value.size())) < 0 &&
               errno == ERANGE)
            value.resize(value.size() * 4);
        if (v < 0) throw unreadable("reading attribute '" + name + "' of", path);
        if (!sink.data(value.data(), static_cast<std::size_t>(v))) return false;
    }
    return true;
}

// The inodes of files with more than one name whose bytes this walk gave already.
using GivenInodes = std::set<std::pair<dev_t, ino_t>>;

// The names the walk holds (each directory's, on the path it is on) and how many it may.
struct NamesHeld {
    std::size_t most;
    std::size_t held = 0;
};

// The names of directory `dir_fd` (the box's `box_path`, `depth` levels down), counted in `names`
// while this lives. Throws as walk_upper_dir says: too deep, too wide, or unreadable; `unkept`
// says what becomes of changes past a bound ("are not checked, so they cannot be kept").
class HeldNames {
public:
    HeldNames(int dir_fd, const std::string& box_path, std::size_t depth, NamesHeld& names,
              const char* unkept)
        : names_(names) {
        const std::string shown = box_path.size() > 200 ? box_path.substr(0, 200) + "…" : box_path;
        // The box chooses how deep its directories go; radiald (whose process this may be) does
        // not follow it past kMostWalkDepth levels with a descriptor, a stack frame and a path
        // each.
        if (depth > kMostWalkDepth)
            throw Error(RADIAL_E_UNAVAILABLE, "'" + shown +
                                                  "' of the box's changes lies deeper than " +
                                                  std::to_string(kMostWalkDepth) +
                                                  " directories; changes that deep " + unkept);
        // Its names are held until its last child is walked, beside every level's above it: the
        // box chooses how many there are too, so the walk holds at most kMostNamesHeld at once.
        auto listed = radial::internal::dir_names(dir_fd, names.most - names.held);
        if (!listed && errno == EOVERFLOW)
            throw Error(RADIAL_E_UNAVAILABLE,
                        "'" + shown +
                            "' of the box's changes brings the entries of the directories it lies "
                            "in past " +
                            std::to_string(names.most) + "; changes that wide " + unkept);
        if (!listed) throw unreadable("listing", box_path);
        list = std::move(*listed);
        names.held += list.size();
    }
    ~HeldNames() { names_.held -= list.size(); }
    HeldNames(const HeldNames&) = delete;
    HeldNames& operator=(const HeldNames&) = delete;

    std::vector<std::string> list;

private:
    NamesHeld& names_;
};

// `renamed`: a directory above changed since `since_ms` (an entry put in, taken out or renamed),
// so every entry below has a full path that may be new although the entry itself did not change
// (a rename changes the renamed directory's ctime, not its children's). Such an entry is given by
// its name alone: its bytes were given when they changed.
bool walk(int dir_fd, const std::string& box_path, std::size_t depth, std::uint64_t since_ms,
          ChangeSink& sink, GivenInodes& given, NamesHeld& names, bool renamed) {
    const HeldNames listed(dir_fd, box_path, depth, names,
                           "are not checked, so they cannot be kept");
    for (const std::string& name : listed.list) {
        const std::string path = (box_path == "/" ? "" : box_path) + "/" + name;
        struct stat st {};
        if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
            throw unreadable("inspecting", path);
        if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) continue; // a whiteout
        if (S_ISDIR(st.st_mode)) {
            radial::internal::UniqueFd sub(
                ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
            if (!sub) throw unreadable("opening", path);
            const bool changed = changed_since(st, since_ms);
            if (changed) {
                if (!sink.entry(path, RADIAL_CHANGE_OTHER) || !give_xattrs(sub.get(), path, sink))
                    return false;
            } else if (renamed && !sink.entry(path, RADIAL_CHANGE_OTHER)) {
                return false;
            }
            if (!walk(sub.get(), path, depth + 1, since_ms, sink, given, names, renamed || changed))
                return false;
            continue;
        }
        if (!changed_since(st, since_ms)) {
            if (renamed && !sink.entry(path, S_ISREG(st.st_mode)   ? RADIAL_CHANGE_FILE
                                             : S_ISLNK(st.st_mode) ? RADIAL_CHANGE_SYMLINK
                                                                   : RADIAL_CHANGE_OTHER))
                return false;
            continue;
        }
        radial::internal::UniqueFd at(
            ::openat(dir_fd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
        if (!at) throw unreadable("opening", path);
        // A file's other names give only the name: its bytes and attributes are one inode's,
        // given once. A box that made thousands of links to one large file had its bytes read
        // (and checked by the host) once per link, far past the call's deadline.
        if (S_ISREG(st.st_mode) && st.st_nlink > 1 && !given.emplace(st.st_dev, st.st_ino).second) {
            if (!sink.entry(path, RADIAL_CHANGE_FILE)) return false;
            continue;
        }
        if (S_ISREG(st.st_mode)) {
            radial::internal::UniqueFd fd(
                ::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
            struct stat again {};
            if (!fd || ::fstat(fd.get(), &again) != 0) throw unreadable("opening", path);
            if (again.st_ino != st.st_ino || !S_ISREG(again.st_mode))
                throw Error(RADIAL_E_UNAVAILABLE,
                            "'" + path + "' of the box's changes changed while it was read");
            if (!sink.entry(path, RADIAL_CHANGE_FILE) || !give_contents(fd.get(), path, sink))
                return false;
        } else if (S_ISLNK(st.st_mode)) {
            std::vector<char> target(static_cast<std::size_t>(st.st_size) + 1);
            const ssize_t n = ::readlinkat(dir_fd, name.c_str(), target.data(), target.size());
            if (n < 0) throw unreadable("reading the link", path);
            if (!sink.entry(path, RADIAL_CHANGE_SYMLINK) ||
                !sink.data(target.data(), static_cast<std::size_t>(n)))
                return false;
        } else if (!sink.entry(path, RADIAL_CHANGE_OTHER)) {
            return false;
        }
        if (!give_xattrs(at.get(), path, sink)) return false;
    }
    return true;
}

// A size in whole tar blocks, saturating: a box's 16 TiB files, many of them, must not wrap to a
// small sum.
std::uint64_t blocks(std::uint64_t bytes) {
    constexpr std::uint64_t kBlock = 512;
    return bytes > UINT64_MAX - (kBlock - 1) ? UINT64_MAX : (bytes + kBlock - 1) / kBlock * kBlock;
}

void add(std::uint64_t& sum, std::uint64_t bytes) {
    sum = bytes > UINT64_MAX - sum ? UINT64_MAX : sum + bytes;
}

// The bytes of the extended attributes of `name` in `dir_fd` (overlayfs' own excepted), each
// with its name: what a layer's archive carries of them (a PAX record each). Throws as the walk.
std::uint64_t xattr_bytes(int dir_fd, const std::string& name, const std::string& path) {
    // lgetxattr of the entry through the directory's descriptor: the entry itself, not a link's
    // target, and no path the box could swap above it.
    const std::string at = "/proc/self/fd/" + std::to_string(dir_fd) + "/" + name;
    std::vector<char> names(4096);
    ssize_t n;
    while ((n = ::llistxattr(at.c_str(), names.data(), names.size())) < 0 && errno == ERANGE)
        names.resize(names.size() * 4);
    if (n < 0) {
        if (errno == ENOTSUP) return 0;
        throw unreadable("listing the attributes of", path);
    }
    std::uint64_t sum = 0;
    for (ssize_t i = 0; i < n;) {
        const std::string attr(names.data() + i);
        i += static_cast<ssize_t>(attr.size()) + 1;
        if (attr.rfind("trusted.overlay.", 0) == 0) continue;
        const ssize_t v = ::lgetxattr(at.c_str(), attr.c_str(), nullptr, 0);
        if (v < 0) throw unreadable("reading attribute '" + attr + "' of", path);
        add(sum, attr.size() + static_cast<std::uint64_t>(v) + 32);
    }
    return sum;
}

// What the layer's archive (tar, PAX) holds of one entry besides its file's bytes: a header
// block, and an extended header of the records that do not fit the header (a name or link target
// over 100 bytes, extended attributes). A link target's or a long name's cost is the box's to
// choose: a box made 20,000 links of 4 KB targets, no file among them, and an 80 MB layer was
// committed under a 1 MiB bound that counted files alone.
std::uint64_t entry_cost(std::size_t name_bytes, std::uint64_t target_bytes, std::uint64_t xattrs) {
    constexpr std::uint64_t kHeader = 512, kFits = 100, kRecord = 32; // "<len> path=…\n"
    std::uint64_t extended = xattrs;
    if (name_bytes > kFits) add(extended, name_bytes + kRecord);
    if (target_bytes > kFits) add(extended, target_bytes + kRecord);
    return extended == 0 ? kHeader : kHeader + kHeader + blocks(extended);
}

// The names of each file with more than one: how many, and the longest (without its '/').
struct LinkedNames {
    std::uint64_t count = 0;
    std::size_t longest = 0;
};
using LinkedFiles = std::map<std::pair<dev_t, ino_t>, LinkedNames>;

// Adds what a commit of the entries below `dir_fd` writes into `out` (size_upper_dir), but the
// link targets of files with several names: those are in `linked`.
void size_walk(int dir_fd, const std::string& box_path, std::size_t depth, UpperDirSize& out,
               std::size_t most_biggest, LinkedFiles& linked, NamesHeld& names) {
    const HeldNames listed(dir_fd, box_path, depth, names, "are not counted");
    for (const std::string& name : listed.list) {
        const std::string path = (box_path == "/" ? "" : box_path) + "/" + name;
        struct stat st {};
        if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
            throw unreadable("inspecting", path);
        ++out.entries;
        // A second name of a file is a hard link: its header names the first, no bytes again.
        bool again = false;
        if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
            LinkedNames& seen = linked[{st.st_dev, st.st_ino}];
            again = seen.count++ > 0;
            seen.longest = std::max(seen.longest, path.size() - 1);
        }
        const std::uint64_t target =
            S_ISLNK(st.st_mode) ? static_cast<std::uint64_t>(st.st_size) : 0;
        add(out.bytes, entry_cost(path.size() - 1, target, xattr_bytes(dir_fd, name, path)));
        if (S_ISDIR(st.st_mode)) {
            radial::internal::UniqueFd sub(
                ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
            if (!sub) throw unreadable("opening", path);
            size_walk(sub.get(), path, depth + 1, out, most_biggest, linked, names);
            continue;
        }
        if (!S_ISREG(st.st_mode) || st.st_size <= 0 || again) continue;
        const auto size = static_cast<std::uint64_t>(st.st_size);
        add(out.bytes, blocks(size));
        auto& big = out.biggest;
        if (most_biggest == 0 || (big.size() == most_biggest && big.back().second >= size))
            continue;
        auto at = big.begin();
        while (at != big.end() && at->second >= size) ++at;
        big.insert(at, {path, size});
        if (big.size() > most_biggest) big.pop_back();
    }
}

radial::internal::UniqueFd open_changes(const std::string& upper_dir) {
    radial::internal::UniqueFd root(
        ::open(upper_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!root)
        throw Error(RADIAL_E_UNAVAILABLE,
                    "opening the box's changes at '" + upper_dir + "': " + std::strerror(errno));
    return root;
}

} // namespace

UpperDirSize size_upper_dir(const std::string& upper_dir, std::size_t most_biggest,
                            std::size_t most_names_held) {
    const radial::internal::UniqueFd root = open_changes(upper_dir);
    UpperDirSize out;
    LinkedFiles linked;
    NamesHeld names{most_names_held};
    size_walk(root.get(), "/", 0, out, most_biggest, linked, names);
    // Every name but one of a file is a link whose header names another: which one is the
    // engine's walk order, so each is charged the longest (a box gave 1,000 short names to a file
    // under a 3,600-byte path, and each link carried that path).
    for (const auto& [inode, seen] : linked)
        if (seen.count > 1 && seen.longest > 100)
            add(out.bytes, (seen.count - 1) * (512 + blocks(seen.longest + 32)));
    return out;
}

void walk_upper_dir(const std::string& upper_dir, std::uint64_t since_ms, ChangeSink& sink,
                    std::size_t most_names_held) {
    const radial::internal::UniqueFd root = open_changes(upper_dir);
    GivenInodes given;
    NamesHeld names{most_names_held};
    // The root's own change (any entry put in it) does not make every name new: each top-level
    // entry renamed or made is changed itself.
    walk(root.get(), "/", 0, since_ms, sink, given, names, false);
}

} // namespace radial::docker
