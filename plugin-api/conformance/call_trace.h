// plugin-api/conformance/call_trace.h — which plugin call is in flight and which returned last,
// kept where the crash handler can read it without allocating (docs/design.md §5.11: a crash is
// blamed on the call that made it, not on whichever check happened to be running).
//
// A plugin thread left running after destroy (the ABI header forbids it: destroy "joins every
// plugin thread") crashes the process later, while no plugin call is in flight; without this
// trace the verdict would name the check running at that moment.
#pragma once

#include <signal.h>

#include <string>
#include <vector>

namespace radial::conformance {

// Marks one plugin call as in flight for its lifetime, and notes what the call left changed of
// its thread's blocked signal mask (signal_mask_changes). [thread-safe]
class TracedCall {
public:
    explicit TracedCall(const std::string& what);
    ~TracedCall();
    TracedCall(const TracedCall&) = delete;
    TracedCall& operator=(const TracedCall&) = delete;

private:
    std::string what_;
    sigset_t mask_{}; // the thread's blocked mask when the call started
};

// Every traced call (the load too) that returned with its thread's blocked signal mask changed,
// each as "create: SIGTERM blocked", since the process started: in a host that call's thread is
// the host's own, and the threads it starts later inherit the mask (docs/design.md §5.8).
// [thread-safe]
std::vector<std::string> signal_mask_changes();

// Writes, with write(2) only (async-signal-safe), where the crashing thread was: ", inside the
// plugin call run('x')" when it was making a call; else that it was a thread of the plugin's own,
// which calls were in flight (or that none was: a thread left running crashed it), and which
// call returned last.
void write_call_trace(int fd);

} // namespace radial::conformance
