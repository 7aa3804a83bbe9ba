// host/turn/retention_clock.h — the time run.journalMaxAge is measured on. A step of the wall
// clock (an operator's `date -s`, a clock set right by NTP, a virtual machine's clock catching up)
// must not age the journal: measured on the wall clock alone, one step forward of a month removed
// every finished turn at the next turn's end (docs/design.md §11.6).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace radial::turn {

// Where the retention clock reads the time. Tests inject their own.
struct RetentionClocks {
    std::function<std::int64_t()> wall_ms;     // CLOCK_REALTIME, ms since the epoch
    std::function<std::int64_t()> boottime_ms; // CLOCK_BOOTTIME, ms since this boot
    std::function<std::string()> boot_id;      // this boot's id; "" when unknown
    // The system's clocks and /proc/sys/kernel/random/boot_id.
    static RetentionClocks system();
};

// One reading: `now_ms` is the time retention measures ages against (ms since the epoch), never
// later than `wall_ms`, the wall clock read with it.
struct RetentionTime {
    std::int64_t now_ms = 0;
    std::int64_t wall_ms = 0;
};

// Reads the retention clock kept in `<state_dir>/retention-clock`, advances it, and writes it back
// unless the file already gives this reading (the same boot, no step, nothing clamped).
// Within one boot it advances by the time CLOCK_BOOTTIME says elapsed since it was last written,
// whatever the wall clock did meanwhile; after a reboot (another boot id) or with no readable file
// it starts again from the wall clock, never earlier than it was. The reading is the earlier of
// that and the wall clock, so a step backwards removes nothing either. A step of more than a
// minute since the file was written is logged as a warning. A file that cannot be written costs
// nothing but the next reading's memory of this one (logged).
// [thread-safe; concurrent callers on one state directory: the last write wins, each reading is
// one that could have been made]
RetentionTime advance_retention_clock(const std::string& state_dir,
                                      const RetentionClocks& clocks = RetentionClocks::system());

// The wall clock's lead on the retention clock (ms, at least 0) at one moment, and the boot it was
// read in: kept beside a time stamped on the wall clock, it tells later how much of the lead came
// after the stamp. A lead_ms of -1: none kept.
struct ClockLead {
    std::int64_t lead_ms = -1;
    std::string boot_id;
};

// The lead now. Advances the retention clock as advance_retention_clock does. [thread-safe]
ClockLead current_clock_lead(const std::string& state_dir,
                             const RetentionClocks& clocks = RetentionClocks::system());

// `wall` (a time read from the caller's clock, which tests inject) less what the wall clock gained
// on the retention clock by steps since the deadline's start was stamped (`since`, read then; in
// another boot, or none kept: the whole lead now): the time a deadline set on the wall clock — a
// session's maximum lifetime from its creation — is compared with, so that a step moves its end
// neither way. Advances the retention clock as advance_retention_clock does. [thread-safe]
std::chrono::system_clock::time_point elapsed_wall_time(
    const std::string& state_dir, std::chrono::system_clock::time_point wall,
    const ClockLead& since = {}, const RetentionClocks& clocks = RetentionClocks::system());

// elapsed_wall_time with the lead `now` read already (current_clock_lead): for a caller that
// compares many deadlines with one reading. Pure.
std::chrono::system_clock::time_point wall_less_lead(std::chrono::system_clock::time_point wall,
                                                     const ClockLead& now, const ClockLead& since);

} // namespace radial::turn
