// host/log/logger.h — radiald's one logging path: one line per event, tagged by component
// ("loader", "turn", "plugin:docker"), written to stderr: "radiald[<component>] <level>: <message>"
// by default (journald and grep), or one JSON object per line for log shippers. When stderr is
// systemd's journal (JOURNAL_STREAM names it), each line starts with its syslog priority ("<3>"
// error, "<4>" warning, "<6>" info, "<7>" debug), which journald takes off and keeps as PRIORITY.
//
// Every line goes through a single sink so that redaction (docs/design.md §10) has exactly one
// place to sit; nothing in host/ writes diagnostics to stderr any other way. [thread-safe]
#pragma once

#include <fmt/format.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace radial::log {

enum class Level { debug = 0, info = 1, warn = 2, error = 3 };

// Lines below this level are dropped. Default: info. [thread-safe]
void set_min_level(Level level) noexcept;

// "debug", "info", "warn" or "error"; nullopt for anything else (run.logLevel).
std::optional<Level> parse_level(std::string_view name) noexcept;

// How a line is written. text: "radiald[<component>] <level>: <message>". json: one object per
// line, {"time":"<UTC, RFC 3339, ms>","level":"<level>","component":"<component>",
// "turn":"<turnId>","message":"…"} with keys in that order; "turn" only when the message starts
// "turn <turnId>: ", as every line about a turn does ("check" for a check's, below); invalid UTF-8
// in a message becomes U+FFFD.
// [thread-safe]
enum class Format { text, json };
void set_format(Format format) noexcept;

// "text" or "json"; nullopt for anything else (the --log-format flag).
std::optional<Format> parse_format(std::string_view name) noexcept;

// Replaces where lines go (tests capture them). Passing an empty function restores stderr.
// Not to be called while other threads log.
void set_sink(std::function<void(std::string_view line)> sink);

// Rewrites every line before it is written (the redactor hooks in here): the whole text line, or
// the message alone in the json format. Same threading rule.
void set_filter(std::function<std::string(std::string_view line)> filter);

// Writes one line in the current format; the filter sees the message before it is encoded.
// Never throws. [thread-safe]
void write(Level level, std::string_view component, std::string_view message) noexcept;

// A check runs through the turn layer (docs/design.md §4), whose lines say "turn <id>: " from
// wherever they are logged; while this lives, a line whose message starts so with `id` says
// "check <id>: " instead, its component "turn" becomes "check", and its json key is "check". So a
// check's lines read as a check's, whichever function logged them. Move-only. [thread-safe]
class CheckLines {
public:
    CheckLines() = default;
    explicit CheckLines(std::string id);
    CheckLines(CheckLines&& o) noexcept : id_(std::move(o.id_)) { o.id_.clear(); }
    CheckLines& operator=(CheckLines&&) = delete;
    CheckLines(const CheckLines&) = delete;
    CheckLines& operator=(const CheckLines&) = delete;
    ~CheckLines();

private:
    std::string id_;
};

namespace detail {
// Writes a fixed line to stderr saying a log line was lost (its formatting or the sink threw, e.g.
// out of memory): the logger cannot report its own failure through itself (docs/design.md §14.2).
// Never throws, allocates nothing. [thread-safe]
void report_lost_line() noexcept;
} // namespace detail

template <class... Args>
void info(std::string_view component, fmt::format_string<Args...> f, Args&&... args) noexcept {
    try {
        write(Level::info, component, fmt::format(f, std::forward<Args>(args)...));
    } catch (...) {
        detail::report_lost_line();
    }
}
template <class... Args>
void warn(std::string_view component, fmt::format_string<Args...> f, Args&&... args) noexcept {
    try {
        write(Level::warn, component, fmt::format(f, std::forward<Args>(args)...));
    } catch (...) {
        detail::report_lost_line();
    }
}
template <class... Args>
void error(std::string_view component, fmt::format_string<Args...> f, Args&&... args) noexcept {
    try {
        write(Level::error, component, fmt::format(f, std::forward<Args>(args)...));
    } catch (...) {
        detail::report_lost_line();
    }
}
template <class... Args>
void debug(std::string_view component, fmt::format_string<Args...> f, Args&&... args) noexcept {
    try {
        write(Level::debug, component, fmt::format(f, std::forward<Args>(args)...));
    } catch (...) {
        detail::report_lost_line();
    }
}

} // namespace radial::log
