// host/log/logger.h — radiald's one logging path: one line per event, tagged by component
// ("loader", "turn", "plugin:docker"), written to stderr.
//
// Every line goes through a single sink so that redaction (issue 4) has exactly one place to sit;
// nothing in host/ writes diagnostics to stderr any other way. [thread-safe]
#pragma once

#include <fmt/format.h>

#include <functional>
#include <string>
#include <string_view>

namespace radial::log {

enum class Level { debug = 0, info = 1, warn = 2, error = 3 };

// Lines below this level are dropped. Default: info. [thread-safe]
void set_min_level(Level level) noexcept;

// Replaces where lines go (tests capture them). Passing an empty function restores stderr.
// Not to be called while other threads log.
void set_sink(std::function<void(std::string_view line)> sink);

// Rewrites every line before it is written (the redactor hooks in here). Same threading rule.
void set_filter(std::function<std::string(std::string_view line)> filter);

// Writes "radiald[<component>] <level>: <message>" as one line. Never throws. [thread-safe]
void write(Level level, std::string_view component, std::string_view message) noexcept;

template <class... Args>
void info(std::string_view component, fmt::format_string<Args...> f, Args&&... args) noexcept {
    try {
        write(Level::info, component, fmt::format(f, std::forward<Args>(args)...));
    } catch (...) {
    }
}
template <class... Args>
void warn(std::string_view component, fmt::format_string<Args...> f, Args&&... args) noexcept {
    try {
        write(Level::warn, component, fmt::format(f, std::forward<Args>(args)...));
    } catch (...) {
    }
}
template <class... Args>
void error(std::string_view component, fmt::format_string<Args...> f, Args&&... args) noexcept {
    try {
        write(Level::error, component, fmt::format(f, std::forward<Args>(args)...));
    } catch (...) {
    }
}
template <class... Args>
void debug(std::string_view component, fmt::format_string<Args...> f, Args&&... args) noexcept {
    try {
        write(Level::debug, component, fmt::format(f, std::forward<Args>(args)...));
    } catch (...) {
    }
}

} // namespace radial::log
