#include "turn/record_quota.h"

#include <fmt/format.h>
#include <sys/statvfs.h>

namespace radial::turn {

RecordQuota::RecordQuota(std::string state_dir, std::uint64_t max_records, std::uint64_t max_bytes,
                         std::uint64_t min_free_bytes)
    : state_dir_(std::move(state_dir)),
      max_records_(max_records),
      max_bytes_(max_bytes),
      floor_bytes_(min_free_bytes / 2) {}

std::optional<std::string> RecordQuota::admit(std::uint64_t bytes) {
    std::lock_guard lock(mutex_);
    if (max_records_ > 0 && records_ + 1 > max_records_)
        return fmt::format(
            "this turn has posted run.maxRecordsPerTurn ({}) records; no more are kept",
            max_records_);
    if (max_bytes_ > 0 && bytes_ + bytes > max_bytes_)
        return fmt::format(
            "this record ({} bytes) would take the turn past run.maxRecordBytesPerTurn ({} bytes, "
            "{} used); it was not kept",
            bytes, max_bytes_, bytes_);
    if (floor_bytes_ > 0) {
        struct statvfs st {};
        if (::statvfs(state_dir_.c_str(), &st) == 0) {
            const std::uint64_t free_bytes = static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
            if (free_bytes < floor_bytes_ + bytes)
                return fmt::format(
                    "the host's state file system keeps half of run.minFreeBytes ({} bytes) for "
                    "the outcomes of running turns, and this record would use it; it was not kept",
                    floor_bytes_);
        }
    }
    ++records_;
    bytes_ += bytes;
    return std::nullopt;
}

void RecordQuota::release(std::uint64_t bytes) {
    std::lock_guard lock(mutex_);
    if (records_ > 0) --records_;
    bytes_ -= std::min(bytes_, bytes);
}

} // namespace radial::turn
