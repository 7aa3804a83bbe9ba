#include <poll.h>
#include <radial/support/run_pump.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <radial/plugin/runtime.hpp>
#include <string>

namespace radial::plugin_support {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// `from` + `d`, or time_point::max() (never) when that is past what the clock can represent: a
// grace or budget taken from a uint64 setting must never wrap into the past.
Clock::time_point after(Clock::time_point from, milliseconds d) {
    if (d.count() <= 0) return from;
    const auto room = std::chrono::floor<milliseconds>(Clock::time_point::max() - from);
    if (d >= room) return Clock::time_point::max();
    return from + d;
}

} // namespace

RunPump::RunPump(ActiveRun& active, PumpOptions options, PumpBox box)
    : active_(active), options_(options), box_(std::move(box)) {}

void RunPump::watch(int fd, std::function<bool()> on_readable) {
    sources_.push_back({fd, std::move(on_readable)});
}

void RunPump::output_aborted() noexcept {
    aborted_ = true;
    news_.notify();
}

void RunPump::box_ended() noexcept {
    ended_ = true;
    news_.notify();
}

PumpResult RunPump::run() {
    PumpResult result;
    bool seen_ended = false;
    bool stop_done = false;
    bool first_stop = true;
    bool draining = false;
    bool graceful = false; // terminate() was called
    Clock::time_point force_at{}, next_stop{}, settle_until{}, drain_until{};
    std::vector<pollfd> fds;
    // Ended after the SIGTERM and before any stop: the command stopped in the grace.
    auto saw_end = [&] {
        seen_ended = true;
        if (graceful && first_stop) {
            result.ended_in_grace = true;
            in_grace_ = true;
        }
    };
    for (;;) {
        auto now = Clock::now();
        // 1. A box already seen ended ended on its own: a reason arriving with it changes nothing.
        if (!seen_ended && ended_) saw_end();
        // 2. The first reason to stop fixes the ending: kill > output aborted > timeout.
        if (!seen_ended && result.ending == Ending::none) {
            Ending why = active_.kill_requested()   ? Ending::killed
                         : aborted_                 ? Ending::aborted
                         : now >= options_.deadline ? Ending::timed_out
                                                    : Ending::none;
            if (why != Ending::none) {
                result.ending = why;
                ending_ = why;
                next_stop = now;
                if (options_.stop_grace.count() > 0 && box_.terminate) {
                    // SIGTERM first; the first stop waits out the grace (docs/design.md §13.1).
                    box_.terminate();
                    graceful = true;
                    next_stop = after(Clock::now(), options_.stop_grace);
                }
                force_at = after(next_stop, options_.kill_grace);
            }
        }
        // 3. Escalation: stop (repeated until it needs no repeating), force_kill after the grace.
        if (!seen_ended && result.ending != Ending::none) {
            if (!stop_done && now >= next_stop) {
                milliseconds budget = options_.stop_budget;
                if (!result.forced)
                    budget =
                        std::min(budget, std::max(milliseconds(200),
                                                  std::chrono::ceil<milliseconds>(force_at - now)));
                stop_done = box_.stop({result.ending, budget, result.forced, first_stop});
                first_stop = false;
                next_stop = after(Clock::now(), options_.stop_every);
            }
            if (!result.forced && !ended_ && Clock::now() >= force_at) {
                box_.force_kill();
                result.forced = true;
                settle_until = after(Clock::now(), options_.settle_budget);
            }
        }
        // 4. Ask the box.
        if (!seen_ended && (ended_ || (box_.ended && box_.ended()))) saw_end();

        now = Clock::now();
        if (seen_ended) {
            if (!draining) {
                draining = true;
                drain_until = after(now, options_.drain_budget);
            }
            if (sources_.empty() || now >= drain_until) {
                if (box_.drain) box_.drain(result.ending);
                result.box_ended = true;
                result.output_aborted = aborted_;
                return result;
            }
        } else if (result.forced && now >= settle_until) {
            result.output_aborted = aborted_;
            return result;
        }

        fds.clear();
        for (const Source& s : sources_) fds.push_back({s.fd, POLLIN, 0});
        const std::size_t wake_at = fds.size();
        fds.push_back({active_.wake().fd(), POLLIN, 0});
        fds.push_back({news_.fd(), POLLIN, 0});
        if (!seen_ended && options_.box_fd >= 0) fds.push_back({options_.box_fd, POLLIN, 0});

        auto wake = Clock::time_point::max();
        if (seen_ended) {
            wake = drain_until;
        } else {
            if (result.ending == Ending::none) wake = std::min(wake, options_.deadline);
            if (result.ending != Ending::none && !stop_done) wake = std::min(wake, next_stop);
            if (result.ending != Ending::none && !result.forced) wake = std::min(wake, force_at);
            if (result.forced) wake = std::min(wake, settle_until);
            if (options_.check_every.count() > 0)
                wake = std::min(wake, after(now, options_.check_every));
        }
        int timeout_ms = -1;
        if (wake != Clock::time_point::max())
            timeout_ms = static_cast<int>(std::clamp<long long>(
                std::chrono::ceil<milliseconds>(wake - now).count(), 0, 60'000));

        if (::poll(fds.data(), fds.size(), timeout_ms) < 0) {
            if (errno == EINTR) continue;
            throw radial::plugin::Error(
                RADIAL_E_INTERNAL, std::string("waiting for a run: poll: ") + std::strerror(errno) +
                                       "; report this bug");
        }
        // Level-triggered wake-ups: kill_requested() and the flags are the state, so draining
        // the events loses nothing.
        if (fds[wake_at].revents != 0) active_.wake().drain();
        if (fds[wake_at + 1].revents != 0) news_.drain();
        std::vector<std::size_t> ended_sources;
        for (std::size_t i = 0; i < wake_at; ++i)
            if (fds[i].revents != 0 && !sources_[i].on_readable()) ended_sources.push_back(i);
        for (auto it = ended_sources.rbegin(); it != ended_sources.rend(); ++it)
            sources_.erase(sources_.begin() + static_cast<std::ptrdiff_t>(*it));
    }
}

} // namespace radial::plugin_support
