#include "cli/command_signals.h"

#include <signal.h>
#include <string.h>

#include <initializer_list>
#include <optional>

#include "log/logger.h"

namespace radial::cli {

CommandSignals::CommandSignals()
    : signals_(std::initializer_list<int>{SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {}

int CommandSignals::stop_asked() {
    if (first_ == 0) {
        const auto came = signals_.take_each();
        if (!came.empty()) first_ = came.front();
    }
    return first_;
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
