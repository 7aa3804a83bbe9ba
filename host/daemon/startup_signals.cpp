// host/daemon/startup_signals.cpp — see startup_signals.h.
#include "daemon/startup_signals.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "daemon/daemon_error.h"
#include "log/logger.h"

namespace radial::daemon {
namespace {

std::string signal_name(int signo) {
    const char* abbrev = ::sigabbrev_np(signo);
    return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(signo);
}

} // namespace

StartupSignals::StartupSignals(StopSignals& signals) : signals_(signals) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        throw DaemonError("creating the pipe that ends the startup's signal thread", errno);
    done_read_.reset(fds[0]);
    done_write_.reset(fds[1]);
    thread_ = std::thread([this] { watch(); });
}

StartupSignals::~StartupSignals() { done(); }

void StartupSignals::done() noexcept {
    if (!thread_.joinable()) return;
    done_write_.reset(); // EOF wakes the thread
    thread_.join();
    // The handler writes it to the pipe again, where the loop reads it.
    if (reload_.exchange(false)) ::raise(SIGHUP);
}

void StartupSignals::watch() {
    for (;;) {
        pollfd p[2] = {{signals_.fd(), POLLIN, 0}, {done_read_.get(), POLLIN, 0}};
        if (::poll(p, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return;
        }
        // The signals first: one that came before the start ended is still the start's.
        for (const int signo : signals_.take_each()) {
            if (signo == SIGHUP) {
                if (!reload_.exchange(true))
                    log::info("daemon",
                              "SIGHUP received while starting: the config is read again once "
                              "the daemon serves");
            } else if (signo == SIGTERM || signo == SIGINT) {
                log::warn("daemon",
                          "{} received while starting: radiald stops before it serves (nothing "
                          "was claimed; the next start takes up whatever this one left)",
                          signal_name(signo));
                ::signal(signo, SIG_DFL);
                sigset_t set;
                sigemptyset(&set);
                sigaddset(&set, signo);
                ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
                ::raise(signo);
                ::_exit(128 + signo); // not reached: both end the process by default
            } else {
                log::info("daemon", "{} received while starting: ignored", signal_name(signo));
            }
        }
        if (p[1].revents != 0) return;
    }
}

} // namespace radial::daemon
