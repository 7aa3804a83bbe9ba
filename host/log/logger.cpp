#include "log/logger.h"

#include <unistd.h>

#include <atomic>
#include <mutex>

namespace radial::log {
namespace {
std::atomic<int> g_min_level{static_cast<int>(Level::info)};
std::mutex g_mutex;
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

void set_sink(std::function<void(std::string_view)> sink) {
    std::lock_guard lock(g_mutex);
    g_sink = std::move(sink);
}

void set_filter(std::function<std::string(std::string_view)> filter) {
    std::lock_guard lock(g_mutex);
    g_filter = std::move(filter);
}

void write(Level level, std::string_view component, std::string_view message) noexcept {
    if (static_cast<int>(level) < g_min_level) return;
    try {
        std::string line = fmt::format("radiald[{}] {}: {}", component, level_name(level), message);
        std::lock_guard lock(g_mutex);
        // Redact before folding newlines: a secret that contains a newline must still match.
        if (g_filter) line = g_filter(line);
        // One event, one line: a message with newlines (a CLI's stderr) stays on its line.
        for (auto& c : line)
            if (c == '\n' || c == '\r') c = ' ';
        if (g_sink) {
            g_sink(line);
        } else {
            line.push_back('\n');
            write_all(STDERR_FILENO, line);
        }
    } catch (...) {
    }
}

} // namespace radial::log
