#include "daemon/spool.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "fs/durable_file.h"
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

} // namespace

Spool::Spool(const std::string& state_dir)
    : spool_dir_((fs::path(state_dir) / "spool").string()),
      tmp_dir_((fs::path(spool_dir_) / "tmp").string()),
      queue_dir_((fs::path(spool_dir_) / "queue").string()) {}

void Spool::ensure_dirs() const {
    for (const auto& dir : {spool_dir_, tmp_dir_, queue_dir_}) {
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
    ensure_dirs();
    try {
        return fs_util::publish_file(tmp_dir_, request_path(r.turn_id), to_json(r), 0600);
    } catch (const std::system_error& e) {
        throw SpoolError(
            fmt::format("enqueueing turn '{}' into '{}': {}; check the free space and "
                        "permissions of run.stateDir",
                        r.turn_id, queue_dir_, e.what()));
    }
}

std::vector<std::string> Spool::list() const {
    std::vector<std::string> ids;
    std::error_code ec;
    fs::directory_iterator it(queue_dir_, ec);
    if (ec == std::errc::no_such_file_or_directory) return ids;
    for (; !ec && it != fs::directory_iterator(); it.increment(ec))
        if (auto id = turn_id_of(it->path().filename().string())) ids.push_back(*id);
    if (ec) throw SpoolError(fmt::format("listing the spool '{}': {}", queue_dir_, ec.message()));
    std::sort(ids.begin(), ids.end());
    return ids;
}

std::optional<SpooledRequest> Spool::load(const std::string& turn_id) const {
    std::string path = request_path(turn_id);
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::error_code ec;
        if (!fs::exists(path, ec)) return std::nullopt;
        throw SpoolError(fmt::format("reading the queued request '{}': cannot open it", path));
    }
    std::string text((std::istreambuf_iterator<char>(in)), {});
    try {
        SpooledRequest r = spooled_request_from_json(text);
        if (r.turn_id != turn_id)
            throw std::runtime_error(fmt::format("it names turn '{}'", r.turn_id));
        return r;
    } catch (const std::exception& e) {
        throw SpoolError(
            fmt::format("reading the queued request '{}': {}; requests are written by "
                        "'radiald submit'",
                        path, e.what()));
    }
}

void Spool::remove(const std::string& turn_id) const {
    std::string path = request_path(turn_id);
    std::error_code ec;
    if (!fs::remove(path, ec) && ec)
        throw SpoolError(fmt::format("removing the request '{}': {}", path, ec.message()));
    try {
        fs_util::fsync_directory(queue_dir_);
    } catch (const std::system_error& e) {
        throw SpoolError(fmt::format("removing the request '{}': {}", path, e.what()));
    }
}

std::size_t Spool::remove_stale_temp_files(std::chrono::seconds age) const noexcept {
    std::size_t removed = 0;
    std::error_code ec;
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
