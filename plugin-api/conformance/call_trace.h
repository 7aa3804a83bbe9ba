// plugin-api/conformance/call_trace.h — which plugin call is in flight and which returned last,
// kept where the crash handler can read it without allocating (docs/design.md §5.11: a crash is
// blamed on the call that made it, not on whichever check happened to be running).
//
// A plugin thread left running after destroy (the ABI header forbids it: destroy "joins every
// plugin thread") crashes the process later, while no plugin call is in flight; without this
// trace the verdict would name the check running at that moment.
#pragma once

#include <string>

namespace radial::conformance {

// Marks one plugin call as in flight for its lifetime. [thread-safe]
class TracedCall {
public:
    explicit TracedCall(const std::string& what);
    ~TracedCall();
    TracedCall(const TracedCall&) = delete;
    TracedCall& operator=(const TracedCall&) = delete;

private:
    std::string what_;
};

// Writes, with write(2) only (async-signal-safe), where the crashing thread was: ", inside the
// plugin call run('x')" when it was making a call; else that it was a thread of the plugin's own,
// which calls were in flight (or that none was: a thread left running crashed it), and which
// call returned last.
void write_call_trace(int fd);

} // namespace radial::conformance
