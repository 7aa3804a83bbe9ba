#include "turn/retention_clock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "fs/durable_file.h"
#include "fs/open_no_links.h"
#include "log/logger.h"

namespace radial::turn {
namespace retention_clock {

std::int64_t clock_ms(clockid_t id) {
    timespec ts{};
    ::clock_gettime(id, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

// What the file holds: the boot it was written in, CLOCK_BOOTTIME then, the retention clock then
// and the wall clock then (its offset from the retention clock tells a new step from an old one).
struct Stored {
    std::string boot_id;
    std::int64_t boottime_ms = 0;
    std::int64_t retention_ms = 0;
    std::int64_t wall_ms = 0;
};

constexpr const char* kFile = "retention-clock";
constexpr const char* kVersion = "radial-retention-clock-1";

std::optional<Stored> read_stored(const std::string& path) {
    std::string text;
    try {
        auto fd = fs_util::open_no_links(path, O_RDONLY | O_CLOEXEC);
        char buf[256];
        const ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n <= 0) return std::nullopt;
        text.assign(buf, static_cast<std::size_t>(n));
    } catch (const std::exception&) {
        return std::nullopt; // absent (the first turn's end) or unreadable: the wall clock
    }
    std::istringstream in(text);
    std::string version;
    Stored s;
    if (!(in >> version >> s.boot_id >> s.boottime_ms >> s.retention_ms >> s.wall_ms) ||
        version != kVersion)
        return std::nullopt;
    // Only what this code writes: times after the epoch and before the year 318857, the retention
    // clock never ahead of the wall clock read with it. Anything else (a damaged file) is none,
    // never arithmetic that overflows or a time before the epoch.
    constexpr std::int64_t kMostMs = 10'000'000'000'000'000;
    const auto plausible = [](std::int64_t v) { return v >= 0 && v < kMostMs; };
    if (!plausible(s.boottime_ms) || !plausible(s.retention_ms) || !plausible(s.wall_ms) ||
        s.retention_ms > s.wall_ms)
        return std::nullopt;
    return s;
}

std::string read_boot_id() {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string id;
    in >> id;
    return id;
}

} // namespace retention_clock

namespace {

// What this process last said of a state directory's retention clock: a file it cannot write is
// read the same at every turn's end, and would say the same step, and the same failure, each time.
struct Said {
    std::optional<std::int64_t> step_lead; // the wall clock's lead when a step was said
    std::string write_error;
};

// Whether `step_lead` (or `write_error`) is news for `path`; records it either way.
bool news(const std::string& path, std::optional<std::int64_t> step_lead,
          const std::string& write_error) {
    static std::mutex mutex;
    static std::map<std::string, Said> said;
    std::lock_guard lock(mutex);
    Said& s = said[path];
    bool fresh = false;
    if (step_lead)
        fresh =
            !s.step_lead || *step_lead - *s.step_lead > 1000 || *s.step_lead - *step_lead > 1000;
    else
        fresh = write_error != s.write_error;
    if (step_lead)
        s.step_lead = step_lead;
    else
        s.write_error = write_error;
    return fresh;
}

} // namespace

RetentionClocks RetentionClocks::system() {
    using namespace retention_clock;
    return {[] { return clock_ms(CLOCK_REALTIME); }, [] { return clock_ms(CLOCK_BOOTTIME); },
            read_boot_id};
}

RetentionTime advance_retention_clock(const std::string& state_dir, const RetentionClocks& clocks) {
    using namespace retention_clock;
    const std::string path = state_dir + "/" + kFile;
    const std::int64_t wall = clocks.wall_ms();
    const std::int64_t boot = clocks.boottime_ms();
    const std::string id = clocks.boot_id();
    const auto stored = read_stored(path);
    std::int64_t retention = wall;
    const bool same_boot =
        stored && !id.empty() && stored->boot_id == id && boot >= stored->boottime_ms;
    if (same_boot)
        retention = stored->retention_ms +
                    std::min<std::int64_t>(boot - stored->boottime_ms, 10'000'000'000'000'000);
    else if (stored)
        retention = std::max(wall, stored->retention_ms); // a reboot: the time off is unknown
    // Only within one boot does the offset from the wall clock tell a step.
    const std::int64_t stepped =
        same_boot ? (wall - retention) - (stored->wall_ms - stored->retention_ms) : 0;
    if (same_boot) {
        if ((stepped > 60'000 || stepped < -60'000) && news(path, wall - retention, {}))
            log::warn("journal",
                      "the wall clock stepped {} by {} s since radiald last read it; "
                      "run.journalMaxAge and sessions' maximum lifetimes count the time that "
                      "elapsed on this machine instead, so nothing is removed early "
                      "(docs/design.md §11.6)",
                      stepped > 0 ? "forward" : "backward",
                      (stepped > 0 ? stepped : -stepped) / 1000);
    }
    // Within one boot, with no step and nothing to clamp, the kept file already gives this
    // reading: not written again (every turn's end reads the clock; each write is two fsyncs).
    if (same_boot && retention <= wall && stepped > -1000 && stepped < 1000)
        return {retention, wall};
    // Never ahead of the wall clock, also as kept: after a step backwards a lead kept would let a
    // later step forward, up to that lead, count in full — after a reboot too.
    retention = std::min(retention, wall);
    try {
        fs_util::replace_file(
            state_dir, path,
            fmt::format("{} {} {} {} {}\n", kVersion, id.empty() ? "-" : id, boot, retention, wall),
            0600);
        news(path, std::nullopt, {});
    } catch (const std::exception& e) {
        if (news(path, std::nullopt, e.what()))
            log::warn("journal", "writing the retention clock '{}': {}", path, e.what());
    }
    return {retention, wall};
}

ClockLead current_clock_lead(const std::string& state_dir, const RetentionClocks& clocks) {
    const RetentionTime t = advance_retention_clock(state_dir, clocks);
    return {t.wall_ms - t.now_ms, clocks.boot_id()};
}

std::chrono::system_clock::time_point elapsed_wall_time(const std::string& state_dir,
                                                        std::chrono::system_clock::time_point wall,
                                                        const ClockLead& since,
                                                        const RetentionClocks& clocks) {
    return wall_less_lead(wall, current_clock_lead(state_dir, clocks), since);
}

std::chrono::system_clock::time_point wall_less_lead(std::chrono::system_clock::time_point wall,
                                                     const ClockLead& now, const ClockLead& since) {
    std::int64_t lead = now.lead_ms;
    // Stamped in this boot: only what the lead grew (or shrank, after a step backwards) since.
    if (since.lead_ms >= 0 && !since.boot_id.empty() && since.boot_id == now.boot_id)
        lead -= since.lead_ms;
    return wall - std::chrono::milliseconds(lead);
}

} // namespace radial::turn
