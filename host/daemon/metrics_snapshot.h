// host/daemon/metrics_snapshot.h — the daemon's figures on disk for `radiald status`
// (docs/design.md §12.6). Status is another process and cannot read the daemon's memory, so the
// daemon writes Metrics::json() to <stateDir>/metrics.json — a temporary file renamed into place,
// so a reader sees a whole snapshot or the previous one — when a figure changed (a turn was
// claimed or ended, a plugin call returned) and at least every `period`, and status shows it with
// its age.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "daemon/metrics.h"
#include "time/clock.h"

namespace radial::daemon {

// <state_dir>/metrics.json.
std::string metrics_snapshot_path(const std::string& state_dir);

// The snapshot: {"writtenAt": RFC 3339, "writtenAtMs": unix ms (both `now`), "pid": the
// daemon's, "metrics": Metrics::json()}.
nlohmann::ordered_json metrics_snapshot(const Metrics& metrics, time::WallPoint now);

// The snapshot in `state_dir`, or nullopt when there is none. Throws std::runtime_error naming the
// file when it cannot be read or is not JSON. [thread-safe]
std::optional<nlohmann::ordered_json> read_metrics_snapshot(const std::string& state_dir);

// Writes snapshots for the daemon's loop. Not thread-safe: one thread calls tick().
class MetricsSnapshotWriter {
public:
    // `metrics` must outlive the writer. Writes nothing yet. `reserve_bytes`: no snapshot is
    // written while the state directory's file system has less than this free (the daemon passes
    // half of run.minFreeBytes plus 1 MiB, as the turns' output logs keep): on a nearly full disk
    // the journal's outcomes come first, and a snapshot's temporary file must not take, even for
    // a moment, the pages a terminal record needs (docs/design.md §12.6). `period` is measured,
    // and snapshots stamped, on `clock` (§12.7), which must outlive the writer.
    MetricsSnapshotWriter(std::string state_dir, const Metrics& metrics,
                          std::chrono::milliseconds period = std::chrono::seconds(30),
                          std::uint64_t reserve_bytes = 1u << 20,
                          const time::Clock& clock = time::system_clock());

    // Writes a snapshot when a figure changed since the last one, or `period` has passed, or
    // `force`. A write that fails, or is skipped for the reserve, is logged (once until one
    // succeeds again), never thrown: the daemon runs turns whether or not status can see its
    // figures.
    void tick(bool force = false) noexcept;

    // When tick() will write even with nothing changed: the latest the loop should wake for it.
    time::SteadyPoint due() const noexcept { return due_; }

private:
    std::string state_dir_;
    const Metrics& metrics_;
    std::chrono::milliseconds period_;
    std::uint64_t reserve_bytes_;
    const time::Clock& clock_;
    std::optional<std::uint64_t> written_; // the generation last written
    time::SteadyPoint due_;
    bool failing_ = false;
};

} // namespace radial::daemon
