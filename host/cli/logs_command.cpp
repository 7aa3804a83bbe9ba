#include "cli/logs_command.h"

#include <fmt/format.h>
#include <poll.h>
#include <radial/internal/names.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <radial/units.hpp>
#include <vector>

#include "cli/config_file.h"
#include "cli/exit_status.h"
#include "cli/journal_commands.h"
#include "log/logger.h"
#include "turn/turn_output_log.h"

namespace radial::cli {
namespace {

using turn::LogEntry;

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Writes all of `s` to `fd`; false when the reader is gone (EPIPE) or the write failed.
bool write_all(int fd, std::string_view s) {
    while (!s.empty()) {
        const ssize_t n = ::write(fd, s.data(), s.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        s.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

// Prints what the operator asked to see of `entries`; false once a stream cannot be written.
struct Printer {
    const LogsOptions& o;
    std::optional<std::int64_t> since_ms;
    bool print(const LogEntry& e) const {
        if (since_ms && e.time_ms < *since_ms) return true;
        switch (e.kind) {
            case LogEntry::Kind::output: {
                const int fd = e.is_stderr ? STDERR_FILENO : STDOUT_FILENO;
                if (o.timestamps) return write_all(fd, e.time + " " + e.bytes);
                return write_all(fd, e.bytes);
            }
            case LogEntry::Kind::truncated:
                log::warn("logs", "turn {}: {}", o.turn_id, e.reason);
                return true;
            case LogEntry::Kind::end:
                if (e.dropped_bytes > 0)
                    log::warn("logs", "turn {}: {} byte(s) of its output were not kept", o.turn_id,
                              e.dropped_bytes);
                return true;
            case LogEntry::Kind::off: return true;
        }
        return true;
    }
};

bool has_end(const std::vector<LogEntry>& entries) {
    for (const auto& e : entries)
        if (e.kind == LogEntry::Kind::end) return true;
    return false;
}

// Whether the journal still holds the turn queued, claimed or started: a turn that may yet print.
bool may_print(journal::Journal& journal, const std::string& id) {
    for (const auto& t : journal.in_flight())
        if (t.turn_id == id) return true;
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
    cmd->add_flag("-t,--timestamps", o.timestamps, "Put each line's time before it");
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
        std::vector<LogEntry> entries;
        bool exists = reader.read_new(entries);
        const bool known = journal->turn(o.turn_id).has_value();
        if (!exists && !known) {
            log::error("logs",
                       "no turn '{}' in the journal of '{}'; 'radiald turns' lists the "
                       "known ones",
                       o.turn_id, cfg.state_dir);
            return kExitFailed;
        }
        if (!entries.empty() && entries.front().kind == LogEntry::Kind::off) {
            log::error("logs", "turn '{}' kept no output log: it ran with run.turnLogMaxBytes = 0",
                       o.turn_id);
            return kExitFailed;
        }
        const Printer printer{o, since_ms};
        // --tail counts output lines from the end; what follows the first one shown is shown.
        std::size_t first = 0;
        if (*tail) {
            std::size_t seen = 0;
            first = entries.size();
            while (first > 0 && seen < **tail) {
                --first;
                if (entries[first].kind == LogEntry::Kind::output &&
                    (!since_ms || entries[first].time_ms >= *since_ms))
                    ++seen;
            }
            if (seen < **tail) first = 0;
        }
        for (std::size_t i = first; i < entries.size(); ++i)
            if (!printer.print(entries[i])) return kExitOk; // the reader is gone
        if (o.follow && !has_end(entries)) {
            LogWatch watch(turn::turn_log_dir(cfg.state_dir));
            auto last_check = std::chrono::steady_clock::now() - std::chrono::seconds(2);
            for (;;) {
                // Asked before the last read: a turn that ended has written all of its log.
                bool in_flight = true;
                if (std::chrono::steady_clock::now() - last_check >= std::chrono::seconds(1)) {
                    in_flight = may_print(*journal, o.turn_id);
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
                for (const auto& e : more)
                    if (!printer.print(e)) return kExitOk;
                if (has_end(more) || !in_flight) break;
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
