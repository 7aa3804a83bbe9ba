#include <fcntl.h>
#include <poll.h>
#include <radial/support/cli_capture.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <radial/plugin/runtime.hpp>

namespace radial::plugin_support {

namespace {

using radial::plugin::Error;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxOut = 16u << 20;
constexpr std::size_t kMaxErr = 64u << 10;
constexpr auto kDrainAfterExit = std::chrono::seconds(1);

// Reads what is available on `fd` into `sink`; closes `fd` at EOF or on error.
void drain_into(internal::UniqueFd& fd, std::string& sink, std::size_t cap, bool keep_tail) {
    char buf[16384];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n > 0) {
            if (keep_tail) {
                sink.append(buf, static_cast<std::size_t>(n));
                if (sink.size() > cap) sink.erase(0, sink.size() - cap);
            } else if (sink.size() < cap) {
                sink.append(buf, std::min(static_cast<std::size_t>(n), cap - sink.size()));
            }
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        fd.reset(); // EOF or a read error: nothing more will come
        return;
    }
}

} // namespace

extern "C" char** environ;

ChildProcess::Env own_environment() {
    ChildProcess::Env env;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string_view var(*e);
        const auto eq = var.find('=');
        if (eq != std::string_view::npos)
            env.emplace(std::string(var.substr(0, eq)), std::string(var.substr(eq + 1)));
    }
    return env;
}

CliOutput capture_cli(const std::filesystem::path& exe, const std::vector<std::string>& args,
                      const ChildProcess::Env& env, std::chrono::milliseconds budget,
                      const CaptureOptions& options) {
    // A budget past a century is no deadline in effect, and now + it must not overflow the clock.
    const auto deadline = Clock::now() + std::min<std::chrono::milliseconds>(
                                             budget, std::chrono::hours(24 * 365 * 100));
    if (options.cancel_fd >= 0 && ::fcntl(options.cancel_fd, F_GETFD) < 0)
        throw Error(RADIAL_E_INVALID, "running '" + exe.string() + "': cancel_fd " +
                                          std::to_string(options.cancel_fd) +
                                          " is not an open descriptor");
    ChildProcess::Options start_options;
    start_options.missing_fix = options.missing_fix;
    ChildProcess child = ChildProcess::start(exe, args, env, std::move(start_options));
    CliOutput result;
    auto drained_by = Clock::time_point::max();
    // At least a millisecond apart: a zero interval must not make the wait a busy loop.
    const auto tick_every = std::max(options.tick_every, std::chrono::milliseconds(1));
    auto next_tick = Clock::now() + tick_every;
    for (;;) {
        if (options.tick && Clock::now() >= next_tick) {
            options.tick();
            next_tick = Clock::now() + tick_every;
        }
        auto& out = child.stdout_pipe();
        auto& err = child.stderr_pipe();
        bool pipes_open = out.valid() || err.valid();
        if (auto status = child.try_reap()) {
            // Done once the pipes are drained; a grandchild holding them gets a moment, no more.
            if (!pipes_open || Clock::now() >= drained_by) {
                result.status = *status;
                return result;
            }
            if (drained_by == Clock::time_point::max()) drained_by = Clock::now() + kDrainAfterExit;
        }
        // Rounded up: a truncated 0.4 ms would end the budget before its deadline.
        auto left = std::chrono::ceil<std::chrono::milliseconds>(std::min(deadline, drained_by) -
                                                                 Clock::now());
        if (left.count() <= 0) {
            if (!child.reaped()) {
                result.timed_out = true;
                return result; // ~ChildProcess kills and reaps the client
            }
            // The client ended within the budget; whatever still holds its pipes (a process of
            // another session) keeps them, and the call ends with what arrived.
            result.status = *child.try_reap();
            return result;
        }
        pollfd fds[4];
        nfds_t n = 0;
        if (out.valid()) fds[n++] = {out.get(), POLLIN, 0};
        if (err.valid()) fds[n++] = {err.get(), POLLIN, 0};
        int cancel_at = -1;
        if (options.cancel_fd >= 0) {
            cancel_at = static_cast<int>(n);
            fds[n++] = {options.cancel_fd, POLLIN, 0};
        }
        int wait_ms = static_cast<int>(std::clamp<long long>(left.count(), 0, 1000));
        if (options.tick)
            wait_ms = std::min<int>(
                wait_ms,
                static_cast<int>(std::max<long long>(
                    0, std::chrono::ceil<std::chrono::milliseconds>(next_tick - Clock::now())
                           .count())));
        // The client's end is watched while its pipes are open too: a process it left behind may
        // hold them, and the one more second starts when the client ends, not when poll next
        // wakes.
        if (!child.reaped()) {
            if (child.exit_fd() >= 0)
                fds[n++] = {child.exit_fd(), POLLIN, 0};
            else
                wait_ms = std::min(wait_ms, pipes_open ? 50 : 5);
        }
        if (::poll(fds, n, wait_ms) < 0 && errno != EINTR)
            throw Error(RADIAL_E_INTERNAL, std::string("waiting for '") + exe.string() +
                                               "': poll: " + std::strerror(errno) +
                                               "; report this bug");
        if (cancel_at >= 0 && (fds[cancel_at].revents & POLLNVAL) != 0)
            throw Error(RADIAL_E_INVALID, "waiting for '" + exe.string() + "': cancel_fd " +
                                              std::to_string(options.cancel_fd) +
                                              " is not an open descriptor");
        if (out.valid()) drain_into(out, result.out, kMaxOut, false);
        if (err.valid()) drain_into(err, result.err, kMaxErr, true);
        if (cancel_at >= 0 && fds[cancel_at].revents != 0) {
            // A client that already ended is reported as it ended; the cancel only ends the wait
            // for its pipes.
            if (auto status = child.try_reap())
                result.status = *status;
            else
                result.cancelled = true; // ~ChildProcess kills and reaps the client
            return result;
        }
    }
}

std::filesystem::path find_executable(const std::string& binary, std::string_view tool,
                                      std::string_view key, std::string_view setting) {
    const std::filesystem::path path = ChildProcess::find_program(binary);
    std::error_code ec;
    if (path.empty() || !std::filesystem::is_regular_file(path, ec) ||
        ::access(path.c_str(), X_OK) != 0)
        throw Error(RADIAL_E_UNAVAILABLE, std::string(key),
                    "starting the " + std::string(tool) + " '" + binary + "': " +
                        (path.empty() ? std::string("not found in PATH")
                                      : "'" + path.string() + "' is not an executable file") +
                        "; install the " + std::string(tool) + " or set " + std::string(setting));
    return path;
}

} // namespace radial::plugin_support
