// host/turn/record_quota.h — what one turn may post to its socket (docs/design.md §9.6): at most
// run.maxRecordsPerTurn records and run.maxRecordBytesPerTurn bytes of bodies, and nothing that
// would take the state file system below half of run.minFreeBytes — the half kept for the
// terminal records and state changes of every running turn.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace radial::turn {

class RecordQuota {
public:
    // 0 for a cap: none. `min_free_bytes` is run.minFreeBytes; records keep half of it free.
    RecordQuota(std::string state_dir, std::uint64_t max_records, std::uint64_t max_bytes,
                std::uint64_t min_free_bytes);

    // Takes a record of `bytes` into the turn's share, or returns why not (a message for the box:
    // it names the key and its value, never a host path). [thread-safe]
    std::optional<std::string> admit(std::uint64_t bytes);

    // Gives back what admit() took for a record that was then not stored. [thread-safe]
    void release(std::uint64_t bytes);

private:
    std::string state_dir_;
    std::uint64_t max_records_, max_bytes_, floor_bytes_;
    std::mutex mutex_;
    std::uint64_t records_ = 0, bytes_ = 0;
};

} // namespace radial::turn
