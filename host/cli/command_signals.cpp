#include "cli/command_signals.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cerrno>
#include <initializer_list>
#include <optional>
#include <utility>

#include "daemon/daemon_error.h"
#include "log/logger.h"

namespace radial::cli {

CommandSignals::CommandSignals(Options options)
    : options_(std::move(options)),
      signals_(
          std::initializer_list<int>{SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM}) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        throw daemon::DaemonError("creating the pipe that ends the signal thread", errno);
    done_read_.reset(fds[0]);
    done_write_.reset(fds[1]);
    thread_ = std::thread([this] { watch(); });
}

CommandSignals::~CommandSignals() {
    done_write_.reset(); // EOF wakes the thread
    thread_.join();
}

void CommandSignals::watch() {
    for (;;) {
        pollfd p[2] = {{signals_.fd(), POLLIN, 0}, {done_read_.get(), POLLIN, 0}};
        if (::poll(p, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return;
        }
        if (p[1].revents != 0) return;
        for (const int signo : signals_.take_each()) {
            const std::string& component = options_.component;
            if (signo == SIGUSR1 || signo == SIGUSR2 || signo == SIGALRM) {
                log::info(component, "{}{} received and ignored (this command gives it no meaning)",
                          options_.subject, name(signo));
                continue;
            }
            int none = 0;
            if (first_.compare_exchange_strong(none, signo)) { // the safe points see it
                if (options_.on_first_stop)
                    options_.on_first_stop(signo);
                else
                    log::warn(component,
                              "{}{} received: stopping at the end of this step, undoing what the "
                              "command made (a second one stops it at once)",
                              options_.subject, name(signo));
                continue;
            }
            if (!options_.second_stop_ends) continue;
            log::error(component,
                       "{}{} again: stopping now, between two steps; what the command made so far "
                       "may be left for 'radiald reconcile' to remove",
                       options_.subject, name(signo));
            ::signal(signo, SIG_DFL);
            sigset_t set;
            sigemptyset(&set);
            sigaddset(&set, signo);
            ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
            ::raise(signo);
            ::_exit(128 + signo); // a signal whose default action does not end the process
        }
    }
}

std::string CommandSignals::name(int signo) {
    const char* abbrev = ::sigabbrev_np(signo);
    return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(signo);
}

void stop_if_asked(CommandSignals& signals) {
    if (const int signo = signals.stop_asked()) throw Interrupted(signo);
}

int finish_despite_signals(const std::string& what, CommandKind kind,
                           const std::function<int()>& command) {
    std::optional<CommandSignals> signals;
    try {
        signals.emplace();
    } catch (const std::exception& e) {
        return report_error(e, kind, "session");
    }
    const int status = command();
    if (const int signo = signals->stop_asked())
        log::warn("session", "{} came while {}: that was finished first",
                  CommandSignals::name(signo), what);
    return status;
}

} // namespace radial::cli
