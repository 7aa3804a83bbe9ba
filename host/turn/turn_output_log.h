// host/turn/turn_output_log.h — a turn's whole output as the operator may see it (redacted), kept
// in the state directory while the turn runs and after it ended, for `radiald logs`
// (docs/design.md §11.7). The terminal record keeps only the last 4 KiB of each stream
// (output_tail.h); this keeps the head, where the causal first line is.
//
// Format: JSON Lines in <stateDir>/logs/<turnId>.log, 0600 in a 0700 directory. One record per
// chunk of output as the runtime delivered it, in the order the box printed them:
//   {"time":"2024-05-01T12:00:00.123Z","stream":"stdout","log":"text\nmore text\n"}
// plus "base64" with the exact bytes when they are not valid UTF-8 ("log" then shows U+FFFD);
//   {"time":…,"event":"truncated","reason":…}   the cap was reached (or the disk's floor);
//   {"time":…,"event":"end","keptBytes":N,"droppedBytes":M}   the last record: the output ended;
//   {"time":…,"event":"off","reason":…}          the only record: the turn kept no log.
// Every write(2) carries whole records, appended (O_APPEND); a reader ignores an incomplete
// trailing line, which only a crash can leave for good. The file is not fsynced: a crash of the
// host may lose its last lines, never the journal's outcome.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "time/clock.h"

namespace radial::turn {

// <state_dir>/logs, and the log of turn `turn_id` in it.
std::string turn_log_dir(const std::string& state_dir);
std::string turn_log_path(const std::string& state_dir, std::string_view turn_id);

// Whether a radiald writes the log at `path` now: a TurnOutputLog holds a shared flock on it from
// its open to its end, and a process that dies lets it go. nullopt when there is no log to ask.
// [thread-safe]
std::optional<bool> turn_log_being_written(const std::string& path);

// Writes one turn's log. A failure to write (a full disk, …) never reaches the turn: it is logged
// once as a warning and the log stops there, without a half record. [thread-safe]
class TurnOutputLog {
public:
    // Creates (or empties) the turn's log. `max_bytes` is run.turnLogMaxBytes: the most bytes of
    // output kept (the records' framing comes on top); 0 leaves a file whose one record says the
    // log is off, and returns nullptr. `min_free_bytes` is run.minFreeBytes: the log stops before
    // it would take the state file system below half of it (the half record_quota.h keeps for
    // the outcomes of running turns). nullptr, after a warning, when the file cannot be created.
    // Records are stamped with `clock`'s wall time (docs/design.md §12.7); it must outlive the log.
    static std::unique_ptr<TurnOutputLog> open(const std::string& state_dir,
                                               const std::string& turn_id, std::uint64_t max_bytes,
                                               std::uint64_t min_free_bytes,
                                               const time::Clock& clock = time::system_clock());
    // Writes the end record (the log's close: `radiald logs -f` stops there).
    ~TurnOutputLog();
    TurnOutputLog(const TurnOutputLog&) = delete;
    TurnOutputLog& operator=(const TurnOutputLog&) = delete;

    // Appends `bytes` of `stream` (RADIAL_STREAM_STDOUT or _STDERR), already redacted: up to the
    // cap, then one "truncated" record, then nothing but a count of the bytes dropped.
    void write(std::uint32_t stream, std::string_view bytes) noexcept;

    // Bytes of output kept, and dropped (past the cap, the disk's floor or a write failure).
    std::uint64_t kept_bytes() const;
    std::uint64_t dropped_bytes() const;

private:
    TurnOutputLog(int fd, std::string path, std::string turn_id, std::string state_dir,
                  std::uint64_t max_bytes, std::uint64_t floor_bytes, const time::Clock& clock);
    std::string now_text() const;
    // Appends whole records with as many write(2) as it takes; on a failure cuts the file back to
    // its last whole record, warns and stops the log. Called with mutex_ held.
    bool append(const std::string& records) noexcept;
    bool below_floor(std::uint64_t more) noexcept;

    mutable std::mutex mutex_;
    int fd_;
    std::string path_, turn_id_, state_dir_;
    std::uint64_t max_bytes_, floor_bytes_;
    std::uint64_t size_ = 0, kept_ = 0, dropped_ = 0, since_space_check_ = 0;
    bool truncated_ = false, failed_ = false;
    const time::Clock& clock_;
};

// One record of a turn's log, as read back.
struct LogEntry {
    enum class Kind { output, truncated, end, off };
    Kind kind = Kind::output;
    std::string time;                // as written: RFC 3339, UTC, milliseconds
    std::int64_t time_ms = 0;        // the same, in unix milliseconds
    bool is_stderr = false;          // output: which stream
    std::string bytes;               // output: the exact bytes (from "base64" when present)
    std::string reason;              // truncated, off: why
    std::uint64_t dropped_bytes = 0; // end: output not kept
};

// One line of a log (without its '\n'); nullopt when it is no record this version writes.
// [thread-safe]
std::optional<LogEntry> parse_log_line(std::string_view line);

// "2024-05-01T12:00:00Z", with an optional fraction and a 'Z' or ±HH:MM offset, in unix
// milliseconds; nullopt for anything else. [thread-safe]
std::optional<std::int64_t> parse_rfc3339_ms(std::string_view text);

// Reads a log as it grows. [thread-compatible]
class TurnLogReader {
public:
    explicit TurnLogReader(std::string path);
    ~TurnLogReader();
    TurnLogReader(const TurnLogReader&) = delete;
    TurnLogReader& operator=(const TurnLogReader&) = delete;

    // Appends to `out` every whole record written since the last call, an output record as one
    // entry per line of it (a line printed in pieces may take several); an incomplete last line
    // of the file waits for the next call. Reads about `max_bytes` at most (a 64 KiB piece more),
    // so a large log can be taken in parts; caught_up() then says whether it read to the end.
    // False while the file does not exist. Throws std::system_error when it cannot be opened or
    // read.
    bool read_new(std::vector<LogEntry>& out, std::size_t max_bytes = SIZE_MAX);
    bool caught_up() const noexcept { return caught_up_; }

private:
    std::string path_;
    int fd_ = -1;
    std::string pending_;
    bool caught_up_ = false;
};

// Retention of the logs (docs/design.md §11.7): removes the logs of `pruned_turns` (turns the
// journal no longer holds), then, while the logs directory holds more than `max_total_bytes` (0:
// no bound), the logs modified longest ago first — never one `running` names (a turn in flight,
// whose file is still written). Returns how many files it removed; a failure is logged and ends
// the pass (it costs no turn anything).
std::uint64_t prune_turn_logs(const std::string& state_dir,
                              const std::vector<std::string>& pruned_turns,
                              std::uint64_t max_total_bytes,
                              const std::function<bool(const std::string& turn_id)>& running);

} // namespace radial::turn
