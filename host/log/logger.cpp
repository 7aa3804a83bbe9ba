#include "log/logger.h"

#include <radial/internal/names.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "text/printable.h"

namespace radial::log {
namespace {
std::atomic<int> g_min_level{static_cast<int>(Level::info)};
std::atomic<Format> g_format{Format::text};
std::mutex g_mutex;
// The ids of the checks now running (CheckLines), each as often as it is named.
std::mutex g_checks_mutex;
std::multiset<std::string, std::less<>> g_checks;

bool is_check(std::string_view id) {
    std::lock_guard lock(g_checks_mutex);
    return g_checks.find(id) != g_checks.end();
}
std::function<void(std::string_view)> g_sink;
std::function<std::string(std::string_view)> g_filter;

constexpr std::string_view level_name(Level l) noexcept {
    switch (l) {
        case Level::debug: return "debug";
        case Level::info: return "info";
        case Level::warn: return "warning";
        case Level::error: return "error";
    }
    return "info";
}

// "2026-12-01T01:02:03.456Z": shippers sort and join on it; journald keeps its own time anyway.
// Real time: the logger serves every command, in the daemon or not (docs/design.md §12.7).
std::string utc_now() {
    using namespace std::chrono;
    const auto now = system_clock::now();
    const std::time_t secs = system_clock::to_time_t(now);
    const auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    ::gmtime_r(&secs, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    return fmt::format("{}.{:03}Z", buf, ms);
}

// The id a message starting "<prefix><id>: " is about (an id as internal::is_turn_id says), or
// empty.
std::string_view id_after(std::string_view message, std::string_view prefix) noexcept {
    if (message.substr(0, prefix.size()) != prefix) return {};
    const std::string_view rest = message.substr(prefix.size());
    const std::size_t colon = rest.find(": ");
    if (colon == std::string_view::npos || !internal::is_turn_id(rest.substr(0, colon))) return {};
    return rest.substr(0, colon);
}

// The turn a message is about, by the convention every turn's log line follows: it starts with
// "turn <turnId>: ".
std::string_view turn_of(std::string_view message) noexcept { return id_after(message, "turn "); }

// As turn_of, for a line CheckLines rewrote.
std::string_view check_of(std::string_view message) noexcept { return id_after(message, "check "); }

std::string json_line(Level level, std::string_view component, std::string_view message) {
    nlohmann::ordered_json j;
    j["time"] = utc_now();
    j["level"] = level_name(level);
    j["component"] = component;
    if (auto turn = turn_of(message); !turn.empty()) j["turn"] = turn;
    if (auto check = check_of(message); !check.empty()) j["check"] = check;
    j["message"] = message;
    // A message is whatever a CLI printed: replace bytes that are not UTF-8 rather than lose the
    // line.
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Whether stderr is systemd's journal: JOURNAL_STREAM ("<device>:<inode>") names the stream
// systemd connected, and it is still ours (not a redirect a child inherited the variable across).
// Asked once: neither changes while radiald runs.
bool stderr_is_journal() noexcept {
    static const bool is = [] {
        const char* stream = std::getenv("JOURNAL_STREAM");
        struct stat st {};
        if (stream == nullptr || ::fstat(STDERR_FILENO, &st) != 0) return false;
        return fmt::format("{}:{}", st.st_dev, st.st_ino) == stream;
    }();
    return is;
}

// The syslog priority journald reads off the start of a line ("<3>" err … "<7>" debug, as
// sd-daemon(3) says), so `journalctl -p warning` ranks radiald's lines.
constexpr std::string_view priority_prefix(Level l) noexcept {
    switch (l) {
        case Level::debug: return "<7>";
        case Level::info: return "<6>";
        case Level::warn: return "<4>";
        case Level::error: return "<3>";
    }
    return "<6>";
}

void write_all(int fd, std::string_view s) noexcept {
    while (!s.empty()) {
        ssize_t n = ::write(fd, s.data(), s.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return;
        }
        s.remove_prefix(static_cast<std::size_t>(n));
    }
}
} // namespace

void set_min_level(Level level) noexcept { g_min_level = static_cast<int>(level); }

void set_format(Format format) noexcept { g_format = format; }

std::optional<Level> parse_level(std::string_view name) noexcept {
    if (name == "debug") return Level::debug;
    if (name == "info") return Level::info;
    if (name == "warn") return Level::warn;
    if (name == "error") return Level::error;
    return std::nullopt;
}

std::optional<Format> parse_format(std::string_view name) noexcept {
    if (name == "text") return Format::text;
    if (name == "json") return Format::json;
    return std::nullopt;
}

void set_sink(std::function<void(std::string_view)> sink) {
    std::lock_guard lock(g_mutex);
    g_sink = std::move(sink);
}

void set_filter(std::function<std::string(std::string_view)> filter) {
    std::lock_guard lock(g_mutex);
    g_filter = std::move(filter);
}

CheckLines::CheckLines(std::string id) : id_(std::move(id)) {
    std::lock_guard lock(g_checks_mutex);
    g_checks.insert(id_);
}

CheckLines::~CheckLines() {
    if (id_.empty()) return;
    std::lock_guard lock(g_checks_mutex);
    if (auto it = g_checks.find(id_); it != g_checks.end()) g_checks.erase(it);
}

void write(Level level, std::string_view component, std::string_view message) noexcept {
    if (static_cast<int>(level) < g_min_level) return;
    try {
        // A check's line, written by the turn layer: named as the check's (CheckLines).
        std::string as_check;
        if (const auto id = turn_of(message); !id.empty() && is_check(id)) {
            as_check = "check " + std::string(message.substr(5));
            message = as_check;
            if (component == "turn") component = "check";
        }
        std::string line;
        std::lock_guard lock(g_mutex);
        if (g_format == Format::json) {
            // Redact the message itself, before it is escaped: the redactor then sees the bytes the
            // secret was made of. JSON escapes newlines, so the object stays on one line.
            line = json_line(level, component, g_filter ? g_filter(message) : std::string(message));
        } else {
            line = fmt::format("radiald[{}] {}: {}", component, level_name(level), message);
            // Redact before folding newlines: a secret that contains a newline must still match.
            if (g_filter) line = g_filter(line);
            // One event, one line: a message with newlines (a CLI's stderr) stays on its line.
            for (auto& c : line)
                if (c == '\n' || c == '\r') c = ' ';
            // Names a box or a request controls (a file name with ESC sequences) reach a
            // terminal or journald as visible escapes, never as controls (docs/design.md §14.7).
            line = text::printable(line);
        }
        // The journal strips it; a shipper reading the journal sees the line as it was.
        if (stderr_is_journal()) line.insert(0, priority_prefix(level));
        if (g_sink) {
            g_sink(line);
        } else {
            line.push_back('\n');
            write_all(STDERR_FILENO, line);
        }
    } catch (...) {
        detail::report_lost_line();
    }
}

void detail::report_lost_line() noexcept {
    static constexpr std::string_view kLost =
        "radiald[log] error: a log line was lost (out of "
        "memory, or the log sink failed)\n";
    write_all(STDERR_FILENO, kLost);
}

} // namespace radial::log
