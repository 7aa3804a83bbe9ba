// host/daemon/startup_signals.cpp — see startup_signals.h.
#include "daemon/startup_signals.h"

#include <signal.h>
#include <unistd.h>

#include "log/logger.h"

namespace radial::daemon {

StartupSignals::StartupSignals(StopSignals& signals)
    : watch_(signals, [this](int signo) {
          if (signo == SIGHUP) {
              if (!reload_.exchange(true))
                  log::info("daemon",
                            "SIGHUP received while starting: the config is read again once the "
                            "daemon serves");
          } else if (signo == SIGTERM || signo == SIGINT) {
              log::warn("daemon",
                        "{} received while starting: radiald stops before it serves (nothing was "
                        "claimed; the next start takes up whatever this one left)",
                        signal_name(signo));
              die_of(signo);
          } else {
              log::info("daemon", "{} received while starting: ignored", signal_name(signo));
          }
      }) {}

StartupSignals::~StartupSignals() { done(); }

void StartupSignals::done() noexcept {
    watch_.stop();
    // The handler writes it to the pipe again, where the loop reads it. To the process, not this
    // thread (raise): a plugin may have left SIGHUP blocked here, and the keeper thread has it
    // unblocked.
    if (reload_.exchange(false)) ::kill(::getpid(), SIGHUP);
}

} // namespace radial::daemon
