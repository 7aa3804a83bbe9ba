#include "fs/pinned_directory.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "fs/file_kind.h"
#include "fs/fs_error.h"

namespace radial::fs_util {
namespace {

[[noreturn]] void fail(const std::string& what, int err) { throw FsError(what, err); }

std::string random_suffix() {
    unsigned char b[8];
    std::size_t got = 0;
    while (got < sizeof b) {
        const ssize_t n = ::getrandom(b + got, sizeof b - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail("drawing a temporary file name", errno);
        got += static_cast<std::size_t>(n);
    }
    std::string s;
    for (unsigned char c : b) s += fmt::format("{:02x}", c);
    return s;
}

} // namespace

PinnedDirectory PinnedDirectory::open(const std::string& dir) {
    // Resolved now, before any box runs: links the operator's path goes through (/var/run -> /run)
    // are theirs; from here on the resolved path must lead to this very directory.
    std::error_code ec;
    const std::string resolved = std::filesystem::canonical(dir, ec).string();
    if (ec) fail(fmt::format("opening the directory '{}'", dir), ec.value());
    internal::UniqueFd fd(
        ::open(resolved.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) fail(fmt::format("opening the directory '{}'", dir), errno);
    if (::faccessat(fd.get(), ".", W_OK, AT_EACCESS) != 0)
        fail(fmt::format("the directory '{}' is not writable", dir), errno);
    return PinnedDirectory(resolved, std::move(fd));
}

void PinnedDirectory::publish(std::string_view name, std::string_view content,
                              unsigned mode) const {
    const std::string dest = path_ + "/" + std::string(name);
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string_view::npos)
        throw FsError(fmt::format("writing '{}': not a file name", dest));
    // The name must still lead to the directory opened before: otherwise the file would land in a
    // directory nobody can reach any more, or be reported written where it is not.
    struct stat pinned {
    }, now{};
    if (::fstat(fd_.get(), &pinned) != 0) fail(fmt::format("writing '{}'", dest), errno);
    if (::lstat(path_.c_str(), &now) != 0 || now.st_dev != pinned.st_dev ||
        now.st_ino != pinned.st_ino)
        throw FsError(fmt::format(
            "writing '{}': the directory '{}' was removed or replaced (by a symlink?) after it was "
            "checked; nothing was written, so that no file is created where the path now leads",
            dest, path_));

    const std::string temp = "." + std::string(name) + "." + random_suffix();
    internal::UniqueFd fd(::openat(fd_.get(), temp.c_str(),
                                   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
    if (!fd) fail(fmt::format("writing '{}': creating a temporary file", dest), errno);
    int err = 0;
    for (std::string_view rest = content; !rest.empty() && err == 0;) {
        const ssize_t n = ::write(fd.get(), rest.data(), rest.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            err = n < 0 ? errno : EIO;
        else
            rest.remove_prefix(static_cast<std::size_t>(n));
    }
    if (err == 0 && ::fchmod(fd.get(), mode) != 0) err = errno; // the umask must not narrow it
    if (err == 0 && ::fsync(fd.get()) != 0) err = errno;
    // Checked last, as close to the rename as it gets: what is at the name may have changed
    // while the box ran, and a rename would put the file in the place of a device, a fifo or a
    // socket some other program uses (docs/design.md §11.4).
    struct stat there {};
    if (err == 0 &&
        ::fstatat(fd_.get(), std::string(name).c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0 &&
        !S_ISREG(there.st_mode) && !S_ISLNK(there.st_mode)) {
        ::unlinkat(fd_.get(), temp.c_str(), 0);
        throw FsError(
            fmt::format("writing '{}': it is now {}, which radiald does not replace; "
                        "nothing was written",
                        dest, file_kind(there.st_mode)));
    }
    if (err == 0 && ::renameat(fd_.get(), temp.c_str(), fd_.get(), std::string(name).c_str()) != 0)
        err = errno;
    if (err != 0) {
        ::unlinkat(fd_.get(), temp.c_str(), 0);
        fail(fmt::format("writing '{}'", dest), err);
    }
    if (::fsync(fd_.get()) != 0)
        fail(fmt::format("writing '{}': fsync of its directory", dest), errno);
}

} // namespace radial::fs_util
