#include "daemon/spool.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <radial/internal/unique_fd.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>

#include "fs/durable_file.h"
#include "log/logger.h"
#include "turn/turn_request.h"

namespace radial::daemon {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kSuffix = ".json";

// "<id>.json" with a valid turn id: the only names the daemon acts on.
std::optional<std::string> turn_id_of(const std::string& name) {
    if (name.size() <= kSuffix.size() || !name.ends_with(kSuffix)) return std::nullopt;
    std::string id = name.substr(0, name.size() - kSuffix.size());
    try {
        turn::validate_turn_id(id);
    } catch (const turn::RequestError&) {
        return std::nullopt;
    }
    return id;
}

// Why an entry of queue/ is not one radiald wrote; empty when it is a regular file owned by our
// uid.
std::string foreign_reason(const struct stat& st) {
    if (S_ISLNK(st.st_mode)) return "a symlink";
    if (S_ISFIFO(st.st_mode)) return "a fifo";
    if (S_ISSOCK(st.st_mode)) return "a socket";
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "a device node";
    if (S_ISDIR(st.st_mode)) return "a directory";
    if (!S_ISREG(st.st_mode)) return "not a regular file";
    if (st.st_uid != ::geteuid())
        return fmt::format("owned by uid {}, not radiald's uid {}", st.st_uid, ::geteuid());
    // A file radiald wrote has one name, the one it renamed into place: a second name is a link
    // someone planted to a file elsewhere (docs/design.md §12.1).
    if (st.st_nlink > 1)
        return fmt::format("a hard link ({} names) to a file radiald did not place there",
                           st.st_nlink);
    return {};
}

} // namespace

Spool::Spool(const std::string& state_dir)
    : spool_dir_((fs::path(state_dir) / "spool").string()),
      tmp_dir_((fs::path(spool_dir_) / "tmp").string()),
      queue_dir_((fs::path(spool_dir_) / "queue").string()),
      rejected_dir_((fs::path(spool_dir_) / "rejected").string()) {}

void Spool::ensure_dirs() const {
    for (const auto& dir : {spool_dir_, tmp_dir_, queue_dir_, rejected_dir_}) {
        std::error_code ec;
        if (fs::create_directories(dir, ec)) ::chmod(dir.c_str(), 0700);
        if (ec)
            throw SpoolError(
                fmt::format("creating the spool directory '{}': {}; check run.stateDir "
                            "and its permissions",
                            dir, ec.message()));
    }
}

std::string Spool::request_path(const std::string& turn_id) const {
    return (fs::path(queue_dir_) / (turn_id + std::string(kSuffix))).string();
}

bool Spool::enqueue(const SpooledRequest& r) const {
    const std::string json = turn::request_to_json(r);
    // Never queue what no load will take: the request would be refused only when claimed.
    if (json.size() > kMaxRequestBytes)
        throw SpoolError(fmt::format(
            "turn '{}': its request is {} bytes, more than the {} a request may have; shorten its "
            "argv, env, workdir or mounts",
            r.turn_id, json.size(), kMaxRequestBytes));
    ensure_dirs();
    try {
        return fs_util::publish_file(tmp_dir_, request_path(r.turn_id), json, 0600);
    } catch (const fs_util::FsError& e) {
        throw SpoolError(
            fmt::format("enqueueing turn '{}' into '{}': {}; check the free space and "
                        "permissions of run.stateDir",
                        r.turn_id, queue_dir_, e.what()));
    }
}

void Spool::overwrite(const std::string& turn_id, const std::string& json) const {
    const std::string tmp = fmt::format("{}/{}.overwrite.{}", tmp_dir_, turn_id, ::getpid());
    internal::UniqueFd fd(
        ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    const bool written =
        fd && ::write(fd.get(), json.data(), json.size()) == static_cast<ssize_t>(json.size()) &&
        ::fsync(fd.get()) == 0;
    const int err = errno;
    fd.reset();
    if (!written || ::rename(tmp.c_str(), request_path(turn_id).c_str()) != 0) {
        const int why = written ? errno : err;
        ::unlink(tmp.c_str());
        throw SpoolError(fmt::format("rewriting the request of turn '{}' in '{}': {}", turn_id,
                                     queue_dir_, std::strerror(why)));
    }
    try {
        fs_util::fsync_directory(queue_dir_);
    } catch (const fs_util::FsError& e) {
        throw SpoolError(fmt::format("rewriting the request of turn '{}': {}", turn_id, e.what()));
    }
}

std::vector<std::string> Spool::list() const {
    std::vector<std::string> ids;
    std::vector<std::pair<std::string, std::string>> foreign;
    std::error_code ec;
    fs::directory_iterator it(queue_dir_, ec);
    if (ec == std::errc::no_such_file_or_directory) return ids;
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
        std::string name = it->path().filename().string();
        struct stat st {};
        if (::lstat(it->path().c_str(), &st) != 0) continue; // gone meanwhile
        if (std::string why = foreign_reason(st); !why.empty()) {
            foreign.emplace_back(name, why);
            continue;
        }
        if (auto id = turn_id_of(name))
            ids.push_back(*id);
        else
            foreign.emplace_back(name, fmt::format("named '{}', which is not '<turn id>.json' "
                                                   "(a turn id is [a-z0-9-], at most 64 "
                                                   "characters)",
                                                   name));
    }
    if (ec) throw SpoolError(fmt::format("listing the spool '{}': {}", queue_dir_, ec.message()));
    for (const auto& [name, why] : foreign) reject(name, why);
    std::sort(ids.begin(), ids.end());
    return ids;
}

namespace {

// A request that could not be read for `err`: SpoolBusy when the system was short of something
// it lends (the turn waits), SpoolError otherwise (the turn is refused; also EIO, which a retry
// would most likely meet again).
[[noreturn]] void throw_read_error(const std::string& path, int err) {
    const std::string what =
        fmt::format("reading the queued request '{}': {}", path, std::strerror(err));
    switch (err) {
        case EMFILE:
        case ENFILE:
        case ENOMEM:
        case ENOBUFS:
        case EAGAIN:
        case EINTR: throw SpoolBusy(what + "; it stays queued and is read again");
        default: throw SpoolError(what);
    }
}

} // namespace

std::optional<SpooledRequest> Spool::load(const std::string& turn_id) const {
    std::string path = request_path(turn_id);
    std::string name = fs::path(path).filename().string();
    // Judged before it is opened too: opening a device can act on it.
    struct stat before {};
    if (::lstat(path.c_str(), &before) == 0) {
        if (std::string why = foreign_reason(before); !why.empty()) {
            reject(name, why);
            return std::nullopt;
        }
    }
    // O_NONBLOCK: a fifo opens at once instead of waiting for a writer; O_NOFOLLOW: a symlink
    // fails with ELOOP instead of being followed with radiald's rights. Swapped in after the
    // lstat, either is caught by the fstat below.
    internal::UniqueFd fd(
        ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (!fd) {
        int err = errno;
        if (err == ENOENT) return std::nullopt;
        if (err == ELOOP) {
            reject(name, "a symlink");
            return std::nullopt;
        }
        throw_read_error(path, err);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) throw_read_error(path, errno);
    if (std::string why = foreign_reason(st); !why.empty()) {
        reject(name, why);
        return std::nullopt;
    }
    if (static_cast<std::uint64_t>(st.st_size) > kMaxRequestBytes)
        throw SpoolError(
            fmt::format("reading the queued request '{}': it is {} bytes, more than "
                        "the {} a request may have",
                        path, st.st_size, kMaxRequestBytes));
    std::string text;
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof(buf));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw_read_error(path, errno);
        if (n == 0) break;
        text.append(buf, static_cast<std::size_t>(n));
        if (text.size() > kMaxRequestBytes)
            throw SpoolError(
                fmt::format("reading the queued request '{}': it grew past the {} "
                            "bytes a request may have",
                            path, kMaxRequestBytes));
    }
    auto refused = [&](const std::string& cause) {
        return SpoolError(
            fmt::format("reading the queued request '{}': {}; requests are written "
                        "by 'radiald submit'",
                        path, cause));
    };
    std::optional<SpooledRequest> r;
    try {
        r.emplace(turn::request_from_json(text));
    } catch (const std::exception& e) {
        throw refused(e.what());
    }
    if (r->turn_id != turn_id) throw refused(fmt::format("it names turn '{}'", r->turn_id));
    return std::move(*r);
}

std::string Spool::move_to_rejected(const std::string& name, int& err) const noexcept {
    try {
        const std::string from = (fs::path(queue_dir_) / name).string();
        std::error_code ec;
        fs::create_directories(rejected_dir_, ec);
        if (!ec) ::chmod(rejected_dir_.c_str(), 0700);
        err = 0;
        for (int n = 0; n < 1000; ++n) {
            const std::string to =
                (fs::path(rejected_dir_) / (n == 0 ? name : fmt::format("{}.{}", name, n)))
                    .string();
            // rename() moves a symlink itself, never its target; RENAME_NOREPLACE keeps earlier
            // ones.
            if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0)
                return to;
            err = errno;
            if (err != EEXIST) break;
        }
    } catch (...) {
        err = ENOMEM;
    }
    return {};
}

void Spool::reject(const std::string& name, const std::string& why) const noexcept {
    const std::string from = (fs::path(queue_dir_) / name).string();
    int err = 0;
    if (const auto to = move_to_rejected(name, err); !to.empty()) {
        log::warn("spool",
                  "moved '{}' to '{}' unread: it is {}, and the spool only takes the "
                  "regular files radiald wrote (use 'radiald submit')",
                  from, to, why);
        return;
    }
    if (err == ENOENT) return; // gone meanwhile
    log::error("spool", "'{}' is {} and could not be moved to '{}': {}; remove it by hand", from,
               why, rejected_dir_, std::strerror(err));
}

void Spool::set_aside(const std::string& turn_id, const std::string& why) const noexcept {
    const std::string from = request_path(turn_id);
    const std::string name = fs::path(from).filename().string();
    int err = 0;
    if (const auto to = move_to_rejected(name, err); !to.empty()) {
        log::error("spool", "turn {}: request moved to '{}': {}", turn_id, to, why);
        return;
    }
    if (err == ENOENT) return;
    log::error("spool", "turn {}: request '{}' {}, and could not be moved to '{}': {}", turn_id,
               from, why, rejected_dir_, std::strerror(err));
}

void Spool::remove(const std::string& turn_id) const {
    std::string path = request_path(turn_id);
    std::error_code ec;
    if (!fs::remove(path, ec) && ec)
        throw SpoolError(fmt::format("removing the request '{}': {}", path, ec.message()));
    try {
        fs_util::fsync_directory(queue_dir_);
    } catch (const fs_util::FsError& e) {
        throw SpoolError(fmt::format("removing the request '{}': {}", path, e.what()));
    }
}

std::size_t Spool::remove_stale_temp_files(std::chrono::seconds age) const noexcept {
    std::size_t removed = 0;
    std::error_code ec;
    // The file system's clock: compared with the files' modification times (docs/design.md §12.7).
    auto now = fs::file_time_type::clock::now();
    fs::directory_iterator it(tmp_dir_, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
        std::error_code e2;
        auto written = fs::last_write_time(it->path(), e2);
        if (!e2 && now - written > age && fs::remove(it->path(), e2)) ++removed;
    }
    return removed;
}

} // namespace radial::daemon
