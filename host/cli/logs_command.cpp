#include "cli/logs_command.h"

#include <fmt/format.h>
#include <poll.h>
#include <radial/internal/names.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <radial/units.hpp>
#include <vector>

#include "cli/config_file.h"
#include "cli/exit_status.h"
#include "cli/journal_commands.h"
#include "cli/standard_output.h"
#include "daemon/state_dir_lock.h"
#include "log/logger.h"
#include "turn/turn_output_log.h"

namespace radial::cli {
namespace {

using turn::LogEntry;

// Real time: the commands run in a process of their own and take no clock (docs/design.md §12.7).
std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Writes all of `s` to `fd`; false when the reader is gone (EPIPE) or the write failed. A failed
// write to stdout is noted, for the command's exit to say (cli/standard_output.h).
bool write_all(int fd, std::string_view s) {
    while (!s.empty()) {
        const ssize_t n = ::write(fd, s.data(), s.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (fd == STDOUT_FILENO) note_standard_output_error(n < 0 ? errno : EIO);
            return false;
        }
        s.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

// Prints what the operator asked to see of a log; false once a stream cannot be written. Lines
// of one stream in a row go out in one write (a write per line made a log of short lines slow to
// print); a change of stream, a note of radiald's own and flush() write out what is held, so the
// two streams keep their order.
class Printer {
public:
    Printer(const LogsOptions& o, std::optional<std::int64_t> since_ms)
        : o_(o), since_ms_(since_ms) {}
    bool print(const LogEntry& e) {
        if (since_ms_ && e.time_ms < *since_ms_) return true;
        switch (e.kind) {
            case LogEntry::Kind::output: {
                const int fd = e.is_stderr ? STDERR_FILENO : STDOUT_FILENO;
                if ((fd != fd_ || held_.size() >= (1u << 16)) && !flush()) return false;
                fd_ = fd;
                if (o_.timestamps) held_.append(e.time).append(" ");
                held_.append(e.bytes);
                return true;
            }
            case LogEntry::Kind::truncated:
                if (!flush()) return false;
                log::warn("logs", "turn {}: {}", o_.turn_id, e.reason);
                return true;
            case LogEntry::Kind::end:
                if (!flush()) return false;
                if (e.dropped_bytes > 0)
                    log::warn("logs", "turn {}: {} byte(s) of its output were not kept", o_.turn_id,
                              e.dropped_bytes);
                return true;
            case LogEntry::Kind::off: return true;
        }
        return true;
    }
    bool flush() {
        const bool ok = held_.empty() || write_all(fd_, held_);
        held_.clear();
        return ok;
    }

private:
    const LogsOptions& o_;
    std::optional<std::int64_t> since_ms_;
    std::string held_;
    int fd_ = STDOUT_FILENO;
};

// Joins the pieces the reader gives (each chunk's lines, and a line printed in pieces spans
// chunks) into whole lines per stream, each with the time of the chunk where it started, so that
// --tail counts lines and -t stamps them at their starts (docs/design.md §11.7). A line is passed
// on when its '\n' comes, when an event record or the end of the reading closes it, or at 1 MiB: a
// line that never ends must not take the log's size in memory.
class LineJoiner {
public:
    using Sink = std::function<bool(LogEntry&&)>; // false: stop (the reader is gone)
    bool push(LogEntry&& e, const Sink& sink) {
        if (e.kind != LogEntry::Kind::output) return flush(sink) && sink(std::move(e));
        if (e.bytes.empty()) return true;
        auto& held = held_[e.is_stderr ? 1 : 0];
        if (held)
            held->bytes += e.bytes;
        else
            held = std::move(e);
        if (held->bytes.back() != '\n' && held->bytes.size() < kMaxLine) return true;
        LogEntry line = std::move(*held);
        held.reset();
        return sink(std::move(line));
    }
    // Passes on the lines still open, the one started first first.
    bool flush(const Sink& sink) {
        auto& a = held_[0];
        auto& b = held_[1];
        if (a && b && b->time_ms < a->time_ms) std::swap(a, b);
        for (auto* h : {&a, &b}) {
            if (!*h) continue;
            LogEntry line = std::move(**h);
            h->reset();
            if (!sink(std::move(line))) return false;
        }
        return true;
    }

private:
    static constexpr std::size_t kMaxLine = 1u << 20;
    std::optional<LogEntry> held_[2]; // stdout, stderr: a line begun, its '\n' still to come
};

bool has_end(const std::vector<LogEntry>& entries) {
    for (const auto& e : entries)
        if (e.kind == LogEntry::Kind::end) return true;
    return false;
}

// Whether the journal still holds the turn queued, claimed or started: a turn that may yet print.
// `orphaned` (still true to print: it ends once reclaimed): in flight, but nothing writes its log
// any more — its radiald was killed (the next start reclaims it): its log's lock is free
// (turn_log_being_written), or, before it has a log, no radiald holds the state directory at all.
bool may_print(journal::Journal& journal, const std::string& state_dir, const std::string& id,
               bool& orphaned) {
    const auto in_flight = [&] {
        for (const auto& t : journal.in_flight())
            if (t.turn_id == id) return true;
        return false;
    };
    if (in_flight()) {
        const auto writing = turn::turn_log_being_written(turn::turn_log_path(state_dir, id));
        orphaned = writing ? !*writing : !daemon::StateDirLock::probe(state_dir).has_value();
        // Its radiald may have ended it and exited between the two looks: ended, not orphaned.
        if (orphaned && !in_flight()) {
            orphaned = false;
            return false;
        }
        return true;
    }
    for (const auto& t : journal.queued())
        if (t.turn_id == id) return true;
    return false;
}

// Waits for a change in the logs directory, at most a second: the journal is asked between two
// waits, so a turn whose radiald died is noticed without an end record.
class LogWatch {
public:
    explicit LogWatch(std::string dir)
        : dir_(std::move(dir)), fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {}
    ~LogWatch() {
        if (fd_ >= 0) ::close(fd_);
    }
    LogWatch(const LogWatch&) = delete;
    LogWatch& operator=(const LogWatch&) = delete;
    void wait() {
        if (fd_ < 0) {
            ::poll(nullptr, 0, 1000);
            return;
        }
        // The directory appears with the state directory's first log: watched once it exists.
        if (!watching_)
            watching_ =
                ::inotify_add_watch(fd_, dir_.c_str(),
                                    IN_MODIFY | IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_TO) >= 0;
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 1000) > 0) {
            char buf[4096];
            while (::read(fd_, buf, sizeof buf) > 0) {
            }
        }
    }

private:
    std::string dir_;
    int fd_;
    bool watching_ = false;
};

} // namespace

std::optional<std::int64_t> parse_since(std::string_view text, std::int64_t now) {
    if (auto at = turn::parse_rfc3339_ms(text)) return at;
    // A bare number says no unit: refused rather than guessed (seconds? a unix time?).
    if (text.find_first_not_of("0123456789") == std::string_view::npos) return std::nullopt;
    if (auto ms = units::parse_duration_ms(text))
        return now - static_cast<std::int64_t>(std::min<std::uint64_t>(*ms, now > 0 ? now : 0));
    return std::nullopt;
}

std::optional<std::optional<std::size_t>> parse_tail(std::string_view text) {
    if (text == "all") return std::optional<std::size_t>{};
    if (text.empty() || text.size() > 9) return std::nullopt;
    std::size_t n = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        n = n * 10 + static_cast<std::size_t>(c - '0');
    }
    return std::optional<std::size_t>{n};
}

CLI::App* add_logs_command(CLI::App& app, LogsOptions& o) {
    auto* cmd = app.add_subcommand(
        "logs", "Print a turn's output (stdout and stderr), as it runs or after it ended");
    cmd->add_option("--config", o.config_file, "Config file (TOML)")->check(CLI::ExistingFile);
    cmd->add_flag("-f,--follow", o.follow, "Keep printing the turn's output until it ends");
    cmd->add_option("--since", o.since,
                    "Only output since then: a duration back from now (10m) or an RFC 3339 time");
    cmd->add_option("-n,--tail", o.tail, "Only the last N lines, or 'all'")->capture_default_str();
    cmd->add_flag("-t,--timestamps", o.timestamps,
                  "Put each line's time (when it started) before it");
    cmd->add_option("turn_id", o.turn_id, "The turn's id")->required();
    return cmd;
}

int run_logs_command(const LogsOptions& o) {
    try {
        std::optional<std::int64_t> since_ms;
        if (o.since) {
            since_ms = parse_since(*o.since, now_ms());
            if (!since_ms) {
                log::error("logs",
                           "--since: '{}' is neither a duration (\"10m\") nor an RFC 3339 time "
                           "(\"2024-05-01T12:00:00Z\")",
                           *o.since);
                return kExitUsage;
            }
        }
        const auto tail = parse_tail(o.tail);
        if (!tail) {
            log::error("logs", "--tail: '{}' is neither a number of lines nor 'all'", o.tail);
            return kExitUsage;
        }
        if (!internal::is_turn_id(o.turn_id)) {
            log::error("logs", "'{}' is not a turn id; 'radiald turns' lists the known ones",
                       o.turn_id);
            return kExitFailed;
        }
        const auto cfg = load_config(o.config_file);
        auto journal = open_existing_journal(cfg);
        if (!journal) return kExitFailed;
        const std::string path = turn::turn_log_path(cfg.state_dir, o.turn_id);
        turn::TurnLogReader reader(path);
        Printer printer(o, since_ms);
        LineJoiner lines;
        // The log read a MiB at a time: with --tail only the last lines are held, without it
        // each part is printed as it is read, so a large log does not take its size in memory.
        std::deque<LogEntry> window;  // --tail: from the Nth output line from the end on
        std::size_t window_lines = 0; // output lines in `window`
        const LineJoiner::Sink take = [&](LogEntry&& e) {
            if (since_ms && e.time_ms < *since_ms) return true;
            if (!*tail) return printer.print(e);
            // Held, not printed: the last N lines are known only at the end.
            window_lines += e.kind == LogEntry::Kind::output;
            window.push_back(std::move(e));
            while (window_lines > **tail) {
                window_lines -= window.front().kind == LogEntry::Kind::output;
                window.pop_front();
            }
            return true;
        };
        bool exists = false, ended = false, first = true;
        do {
            std::vector<LogEntry> part;
            exists = reader.read_new(part, 1u << 20);
            if (!exists) break;
            if (first && !part.empty()) {
                first = false;
                if (part.front().kind == LogEntry::Kind::off) {
                    log::error("logs",
                               "turn '{}' kept no output log: it ran with run.turnLogMaxBytes = 0",
                               o.turn_id);
                    return kExitFailed;
                }
            }
            ended = ended || has_end(part);
            for (auto& e : part)
                if (!lines.push(std::move(e), take)) return kExitOk; // the reader is gone
        } while (!reader.caught_up());
        if (!exists && !journal->turn(o.turn_id)) {
            log::error("logs",
                       "no turn '{}' in the journal of '{}'; 'radiald turns' lists the known ones",
                       o.turn_id, cfg.state_dir);
            return kExitFailed;
        }
        // A last line without its '\n' is a line too; -f waits for the rest of it instead.
        if ((!o.follow || ended) && !lines.flush(take)) return kExitOk;
        for (const auto& e : window)
            if (!printer.print(e)) return kExitOk;
        if (!printer.flush()) return kExitOk;
        if (o.follow && !ended) {
            LogWatch watch(turn::turn_log_dir(cfg.state_dir));
            // Real time: the commands run in a process of their own and take no clock
            // (docs/design.md §12.7).
            auto last_check = std::chrono::steady_clock::now() - std::chrono::seconds(2);
            bool orphaned = false, said_orphaned = false;
            for (;;) {
                // Asked before the last read: a turn that ended has written all of its log.
                bool in_flight = true;
                if (std::chrono::steady_clock::now() - last_check >= std::chrono::seconds(1)) {
                    in_flight = may_print(*journal, cfg.state_dir, o.turn_id, orphaned);
                    last_check = std::chrono::steady_clock::now();
                }
                std::vector<LogEntry> more;
                exists = reader.read_new(more) || exists;
                if (!more.empty() && more.front().kind == LogEntry::Kind::off) {
                    log::error("logs",
                               "turn '{}' keeps no output log: it runs with run.turnLogMaxBytes "
                               "= 0",
                               o.turn_id);
                    return kExitFailed;
                }
                const LineJoiner::Sink print = [&](LogEntry&& e) { return printer.print(e); };
                for (auto& e : more)
                    if (!lines.push(std::move(e), print)) return kExitOk;
                const bool done = has_end(more) || !in_flight;
                if ((done && !lines.flush(print)) || !printer.flush()) return kExitOk;
                if (done) break;
                // Said once, not silently waited out: nothing more comes until the turn is
                // reclaimed, which ends this follower too (docs/design.md §11.7).
                if (orphaned && !said_orphaned) {
                    said_orphaned = true;
                    log::warn("logs",
                              "turn '{}' is no longer run by any radiald (the one running it was "
                              "killed): nothing more will be printed; waiting until it is "
                              "reclaimed by the next start or 'radiald reconcile' (Ctrl-C stops "
                              "waiting)",
                              o.turn_id);
                }
                watch.wait();
            }
        }
        if (!exists) {
            log::error("logs",
                       "turn '{}' has no output log: its box never ran{}, or "
                       "run.turnLogsMaxBytes removed the log to make room",
                       o.turn_id, o.follow ? "" : " (yet: -f waits for it)");
            return kExitFailed;
        }
        return kExitOk;
    } catch (const std::exception& e) {
        return report_error(e, CommandKind::other, "logs");
    }
}

} // namespace radial::cli
