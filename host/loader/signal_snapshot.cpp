#include "loader/signal_snapshot.h"

#include <fmt/format.h>
#include <string.h>

namespace radial::loader {

namespace {

// SA_RESTORER is set by glibc's sigaction itself, so it says nothing about who installed it.
constexpr int kRestorer = 0x04000000;

bool same(const struct sigaction& a, const struct sigaction& b) {
    const bool a_info = (a.sa_flags & SA_SIGINFO) != 0, b_info = (b.sa_flags & SA_SIGINFO) != 0;
    if (a_info != b_info) return false;
    if (a_info ? a.sa_sigaction != b.sa_sigaction : a.sa_handler != b.sa_handler) return false;
    // SIG_DFL and SIG_IGN mean the same whatever flags came with them (signal(2) adds SA_RESTART).
    if (!a_info && (a.sa_handler == SIG_DFL || a.sa_handler == SIG_IGN)) return true;
    return (a.sa_flags & ~kRestorer) == (b.sa_flags & ~kRestorer);
}

} // namespace

SignalSnapshot::SignalSnapshot() {
    ::pthread_sigmask(SIG_SETMASK, nullptr, &mask_);
    for (int s = 1; s < kSignals; ++s)
        if (s != SIGKILL && s != SIGSTOP) known_[s] = ::sigaction(s, nullptr, &actions_[s]) == 0;
}

std::vector<std::string> SignalSnapshot::restore() const {
    std::vector<std::string> changed;
    sigset_t now;
    ::pthread_sigmask(SIG_SETMASK, nullptr, &now);
    for (int s = 1; s < kSignals; ++s) {
        const int was = ::sigismember(&mask_, s), is = ::sigismember(&now, s);
        if (was != is)
            changed.push_back(
                fmt::format("SIG{} {}", ::sigabbrev_np(s), is ? "blocked" : "unblocked"));
    }
    ::pthread_sigmask(SIG_SETMASK, &mask_, nullptr);
    for (int s = 1; s < kSignals; ++s) {
        struct sigaction act {};
        if (!known_[s] || ::sigaction(s, nullptr, &act) != 0 || same(act, actions_[s])) continue;
        ::sigaction(s, &actions_[s], nullptr);
        changed.push_back(fmt::format("SIG{}'s handler", ::sigabbrev_np(s)));
    }
    return changed;
}

} // namespace radial::loader
