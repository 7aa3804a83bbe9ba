#include "daemon/metrics_snapshot.h"

#include <fmt/format.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "fs/durable_file.h"
#include "log/logger.h"
#include "turn/terminal_record.h"

namespace radial::daemon {

std::string metrics_snapshot_path(const std::string& state_dir) {
    return state_dir + "/metrics.json";
}

nlohmann::ordered_json metrics_snapshot(const Metrics& metrics, time::WallPoint now) {
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
    return {{"writtenAt", turn::format_timestamp(now)},
            {"writtenAtMs", ms},
            {"pid", ::getpid()},
            {"metrics", metrics.json()}};
}

std::optional<nlohmann::ordered_json> read_metrics_snapshot(const std::string& state_dir) {
    const std::string path = metrics_snapshot_path(state_dir);
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        if (errno == ENOENT) return std::nullopt;
        throw std::runtime_error(
            fmt::format("cannot read the daemon's metrics '{}': {}", path, std::strerror(errno)));
    }
    std::ostringstream text;
    text << in.rdbuf();
    try {
        return nlohmann::ordered_json::parse(text.str());
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(
            fmt::format("the daemon's metrics '{}' are not JSON: {}", path, e.what()));
    }
}

MetricsSnapshotWriter::MetricsSnapshotWriter(std::string state_dir, const Metrics& metrics,
                                             std::chrono::milliseconds period,
                                             std::uint64_t reserve_bytes, const time::Clock& clock)
    : state_dir_(std::move(state_dir)),
      metrics_(metrics),
      period_(period),
      reserve_bytes_(reserve_bytes),
      clock_(clock),
      due_(clock.steady()) {}

void MetricsSnapshotWriter::tick(bool force) noexcept {
    const auto now = clock_.steady();
    const std::uint64_t generation = metrics_.generation();
    if (!force && written_ == generation && now < due_) return;
    try {
        struct statvfs fs {};
        if (::statvfs(state_dir_.c_str(), &fs) == 0 &&
            static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize < reserve_bytes_)
            throw std::runtime_error(fmt::format(
                "the state directory's file system has less than {} bytes free, which the "
                "journal's records come first for",
                reserve_bytes_));
        // Readable by the state directory's group, like the journal: counts only, no secret.
        fs_util::replace_file(state_dir_, metrics_snapshot_path(state_dir_),
                              metrics_snapshot(metrics_, clock_.wall()).dump(2) + "\n", 0640);
        written_ = generation;
        if (failing_)
            log::info("daemon", "metrics: '{}' is written again",
                      metrics_snapshot_path(state_dir_));
        failing_ = false;
    } catch (const std::exception& e) {
        if (!failing_)
            log::warn("daemon", "metrics: cannot write the snapshot for 'radiald status': {}",
                      e.what());
        failing_ = true;
    }
    due_ = now + period_;
}

} // namespace radial::daemon
