#include "fs/durable_file.h"

#include <fcntl.h>
#include <radial/internal/unique_fd.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <string>

#include "fs/fs_error.h"

namespace radial::fs_util {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(int err, const std::string& what) { throw FsError(what, err); }

// Moves `from` to `to` unless `to` exists. Returns false when it does.
bool move_no_replace(const fs::path& from, const fs::path& to) {
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0)
        return true;
    if (errno == EEXIST) return false;
    if (errno != EINVAL && errno != ENOSYS)
        fail(errno, "moving '" + from.string() + "' to '" + to.string() + "'");
    // A file system without RENAME_NOREPLACE: link(2) never replaces either.
    if (::link(from.c_str(), to.c_str()) != 0) {
        if (errno == EEXIST) return false;
        fail(errno, "linking '" + from.string() + "' to '" + to.string() + "'");
    }
    ::unlink(from.c_str());
    return true;
}

} // namespace

void append_line(const fs::path& path, std::string_view line) {
    constexpr int kFlags = O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW;
    internal::UniqueFd fd(::open(path.c_str(), kFlags));
    // Made here: its directory entry is synced too, or a crash could lose the whole log.
    const bool made = !fd && errno == ENOENT;
    if (made) fd = internal::UniqueFd(::open(path.c_str(), kFlags | O_CREAT, 0600));
    if (!fd) fail(errno, "opening '" + path.string() + "'");
    const ssize_t n = ::write(fd.get(), line.data(), line.size());
    if (n < 0) fail(errno, "appending to '" + path.string() + "'");
    if (static_cast<std::size_t>(n) != line.size())
        throw FsError("appending to '" + path.string() +
                      "': the file system took only part of "
                      "the line (full?)");
    if (::fsync(fd.get()) != 0) fail(errno, "syncing '" + path.string() + "'");
    if (made) fsync_directory(path.parent_path());
}

void fsync_directory(const fs::path& dir) {
    internal::UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) fail(errno, "opening directory '" + dir.string() + "'");
    if (::fsync(fd.get()) != 0) fail(errno, "syncing directory '" + dir.string() + "'");
}

namespace {

enum class Place { no_replace, replace };

bool write_and_place(const fs::path& temp_dir, const fs::path& dest, std::string_view content,
                     mode_t mode, Place place) {
    std::string tmpl = (temp_dir / ("." + dest.filename().string() + ".XXXXXX")).string();
    internal::UniqueFd fd(::mkostemp(tmpl.data(), O_CLOEXEC));
    if (!fd) fail(errno, "creating a temporary file in '" + temp_dir.string() + "'");
    struct Cleanup {
        const std::string& path;
        bool armed = true;
        ~Cleanup() {
            if (armed) ::unlink(path.c_str());
        }
    } cleanup{tmpl};

    if (::fchmod(fd.get(), mode) != 0) fail(errno, "setting the mode of '" + tmpl + "'");
    std::string_view rest = content;
    while (!rest.empty()) {
        ssize_t n = ::write(fd.get(), rest.data(), rest.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail(n < 0 ? errno : EIO, "writing '" + tmpl + "'");
        rest.remove_prefix(static_cast<std::size_t>(n));
    }
    if (::fsync(fd.get()) != 0) fail(errno, "syncing '" + tmpl + "'");
    fd.reset();
    if (place == Place::replace) {
        if (::rename(tmpl.c_str(), dest.c_str()) != 0)
            fail(errno, "moving '" + tmpl + "' to '" + dest.string() + "'");
    } else if (!move_no_replace(tmpl, dest)) {
        return false;
    }
    cleanup.armed = false;
    fsync_directory(dest.parent_path());
    return true;
}

} // namespace

std::size_t remove_abandoned_temp_files(const fs::path& dir,
                                        const std::function<bool(std::string_view)>& ours,
                                        std::chrono::system_clock::time_point now) noexcept {
    std::size_t removed = 0;
    try {
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(dir, ec)) {
            // write_and_place's names: ".", the file's name, "." and mkostemp's six characters.
            const std::string name = entry.path().filename().string();
            const auto dot = name.rfind('.');
            if (name.size() < 9 || name[0] != '.' || dot == 0 || dot != name.size() - 7 ||
                !std::all_of(name.begin() + static_cast<long>(dot) + 1, name.end(),
                             [](unsigned char c) { return std::isalnum(c) != 0; }) ||
                !ours(std::string_view(name).substr(1, dot - 1)))
                continue;
            struct stat st {};
            if (::lstat(entry.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
                st.st_uid != ::geteuid())
                continue;
            const auto written = std::chrono::system_clock::from_time_t(st.st_mtime);
            if (now - written < kAbandonedTempFileAge) continue;
            if (::unlink(entry.path().c_str()) == 0) ++removed;
        }
    } catch (const std::exception&) {
    }
    return removed;
}

bool publish_file(const fs::path& temp_dir, const fs::path& dest, std::string_view content,
                  mode_t mode) {
    return write_and_place(temp_dir, dest, content, mode, Place::no_replace);
}

void replace_file(const fs::path& temp_dir, const fs::path& dest, std::string_view content,
                  mode_t mode) {
    write_and_place(temp_dir, dest, content, mode, Place::replace);
}

} // namespace radial::fs_util
