// host/daemon/signal_watch.cpp — see signal_watch.h.
#include "daemon/signal_watch.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "daemon/daemon_error.h"

namespace radial::daemon {

SignalWatch::SignalWatch(StopSignals& signals, std::function<void(int)> on_signal)
    : signals_(signals), on_signal_(std::move(on_signal)) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        throw DaemonError("creating the pipe that ends the signal thread", errno);
    done_read_.reset(fds[0]);
    done_write_.reset(fds[1]);
    thread_ = std::thread([this] {
        for (;;) {
            pollfd p[2] = {{signals_.fd(), POLLIN, 0}, {done_read_.get(), POLLIN, 0}};
            if (::poll(p, 2, -1) < 0) {
                if (errno == EINTR) continue;
                return;
            }
            // Stopped: what is still on the pipe is left to its next reader (the daemon's loop).
            if (p[1].revents != 0) return;
            for (const int signo : signals_.take_each()) on_signal_(signo);
        }
    });
}

SignalWatch::~SignalWatch() { stop(); }

void SignalWatch::stop() noexcept {
    if (!thread_.joinable()) return;
    done_write_.reset(); // EOF wakes the thread
    thread_.join();
}

std::string signal_name(int signo) {
    const char* abbrev = ::sigabbrev_np(signo);
    return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(signo);
}

void die_of(int signo) {
    ::signal(signo, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    ::raise(signo);
    ::_exit(128 + signo); // a signal whose default action does not end the process
}

} // namespace radial::daemon
