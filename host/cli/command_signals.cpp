#include "cli/command_signals.h"

#include <signal.h>

#include <initializer_list>
#include <optional>
#include <utility>

#include "log/logger.h"

namespace radial::cli {

CommandSignals::CommandSignals(Options options)
    : options_(std::move(options)),
      signals_(
          std::initializer_list<int>{SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM}),
      watch_(signals_, [this](int signo) { heard(signo); }) {}

CommandSignals::~CommandSignals() { watch_.stop(); }

void CommandSignals::heard(int signo) {
    const std::string& component = options_.component;
    if (signo == SIGUSR1 || signo == SIGUSR2 || signo == SIGALRM) {
        log::info(component, "{}{} received and ignored (this command gives it no meaning)",
                  options_.subject, name(signo));
        return;
    }
    int none = 0;
    if (first_.compare_exchange_strong(none, signo)) { // the safe points see it
        if (options_.on_first_stop)
            options_.on_first_stop(signo);
        else
            log::warn(component,
                      "{}{} received: stopping at the end of this step, undoing what the command "
                      "made (a second one stops it at once)",
                      options_.subject, name(signo));
        return;
    }
    if (!options_.second_stop_ends) return;
    log::error(component,
               "{}{} again: stopping now, between two steps; what the command made so far may be "
               "left for 'radiald reconcile' to remove",
               options_.subject, name(signo));
    daemon::die_of(signo);
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
