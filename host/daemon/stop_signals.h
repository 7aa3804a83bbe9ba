// host/daemon/stop_signals.h — SIGTERM and SIGINT for the daemon (issue 5 §2), delivered as
// readable bytes on a pipe so the daemon's poll loop sees them beside its other events. The
// handler only write(2)s one byte (async-signal-safe); counting and acting happen on the loop.
// Signal masks are left alone, so the runtime's child processes inherit nothing unusual.
#pragma once

#include "fs/unique_fd.h"

namespace radial::daemon {

class StopSignals {
public:
    // Installs the handlers; the previous ones come back when this is destroyed. One instance per
    // process at a time. Throws std::system_error when the pipe cannot be made.
    StopSignals();
    ~StopSignals();
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;

    // Readable when a signal has arrived since the last take().
    int fd() const noexcept { return read_.get(); }

    // How many signals arrived since the last call (0 when none). Never blocks. [main loop only]
    int take() noexcept;

private:
    fs_util::UniqueFd read_, write_;
};

} // namespace radial::daemon
