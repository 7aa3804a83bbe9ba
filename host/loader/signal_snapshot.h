// host/loader/signal_snapshot.h — radiald's signal handling as it was before a plugin's code ran
// on this thread (its library's constructors at load, its create), to be put back after: a mask
// that code left blocked would be inherited by every thread radiald starts later, and a handler
// it reset would let a signal radiald means to survive end it (docs/design.md §5.8, §12.3).
#pragma once

#include <signal.h>

#include <string>
#include <vector>

namespace radial::loader {

class SignalSnapshot {
public:
    // The calling thread's blocked mask and the disposition of every signal below SIGRTMIN.
    SignalSnapshot();

    // Puts back what differs, on the calling thread (the one the snapshot was taken on), and
    // names each thing put back ("SIGTERM blocked", "SIGUSR1's handler"); empty when nothing
    // changed.
    std::vector<std::string> restore() const;

private:
    static constexpr int kSignals = 32; // 1..31: the standard signals
    sigset_t mask_{};
    struct sigaction actions_[kSignals] {};
    bool known_[kSignals] = {};
};

} // namespace radial::loader
