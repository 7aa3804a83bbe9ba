#include "daemon/stop_signals.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <stdexcept>

#include "daemon/daemon_error.h"
#include "log/logger.h"

namespace radial::daemon {

namespace {

std::atomic<int> g_write_fd{-1};
struct sigaction g_previous[StopSignals::kMaxSignals];

extern "C" void on_stop_signal(int signo) {
    int saved = errno; // the interrupted code may be about to read errno
    // Every signal number fits a byte (SIGRTMAX is 64 on Linux).
    auto b = static_cast<unsigned char>(signo);
    [[maybe_unused]] ssize_t n = ::write(g_write_fd.load(), &b, 1);
    errno = saved;
}

} // namespace

StopSignals::StopSignals(std::initializer_list<int> signals) : signals_(signals) {
    if (signals_.size() > kMaxSignals)
        throw std::invalid_argument("StopSignals: more than kMaxSignals signals");
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
        throw DaemonError("creating the signal pipe", errno);
    read_.reset(fds[0]);
    write_.reset(fds[1]);
    g_write_fd = write_.get();
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigemptyset(&set_);
    for (std::size_t i = 0; i < signals_.size(); ++i) {
        ::sigaction(signals_[i], &sa, &g_previous[i]);
        sigaddset(&set_, signals_[i]);
    }
    struct sigaction pipe {};
    keep_pipe_ignored_ = ::sigaction(SIGPIPE, nullptr, &pipe) == 0 &&
                         !(pipe.sa_flags & SA_SIGINFO) && pipe.sa_handler == SIG_IGN;
    // A plugin's load or create may have blocked them on this thread, which every later thread
    // inherits: nothing would hear them (docs/design.md §12.3).
    ::pthread_sigmask(SIG_UNBLOCK, &set_, nullptr);
    keeper_ = std::thread([this] { keeper(); });
}

std::vector<int> StopSignals::keep() const {
    ::pthread_sigmask(SIG_UNBLOCK, &set_, nullptr);
    std::vector<int> put_back;
    for (const int s : signals_) {
        struct sigaction now {};
        if (::sigaction(s, nullptr, &now) != 0) continue;
        if (!(now.sa_flags & SA_SIGINFO) && now.sa_handler == on_stop_signal) continue;
        struct sigaction sa {};
        sa.sa_handler = on_stop_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        ::sigaction(s, &sa, nullptr);
        put_back.push_back(s);
    }
    struct sigaction pipe {};
    if (keep_pipe_ignored_ && ::sigaction(SIGPIPE, nullptr, &pipe) == 0 &&
        ((pipe.sa_flags & SA_SIGINFO) || pipe.sa_handler != SIG_IGN)) {
        ::signal(SIGPIPE, SIG_IGN);
        put_back.push_back(SIGPIPE);
    }
    return put_back;
}

void StopSignals::keeper() {
    std::unique_lock lock(mutex_);
    do {
        for (const int s : keep())
            log::warn("signals",
                      "SIG{}'s handling was changed by code in radiald's process (a runtime "
                      "plugin's, which must leave signals alone: docs/design.md §5.8); radiald's "
                      "own is back",
                      ::sigabbrev_np(s));
    } while (!stop_cv_.wait_for(lock, kKeepInterval, [this] { return stop_; }));
}

StopSignals::~StopSignals() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    stop_cv_.notify_all();
    keeper_.join();
    for (std::size_t i = 0; i < signals_.size(); ++i)
        ::sigaction(signals_[i], &g_previous[i], nullptr);
    g_write_fd = -1;
}

int StopSignals::take() noexcept {
    int n = 0;
    char buf[16];
    for (;;) {
        ssize_t got = ::read(read_.get(), buf, sizeof(buf));
        if (got > 0) {
            n += static_cast<int>(got);
            continue;
        }
        if (got < 0 && errno == EINTR) continue;
        return n;
    }
}

std::vector<int> StopSignals::take_each() {
    std::vector<int> out;
    unsigned char buf[16];
    for (;;) {
        ssize_t got = ::read(read_.get(), buf, sizeof(buf));
        if (got > 0) {
            out.insert(out.end(), buf, buf + got);
            continue;
        }
        if (got < 0 && errno == EINTR) continue;
        return out;
    }
}

} // namespace radial::daemon
