// radial/support/wake_event.h — an eventfd that lets one thread wake another's poll() loop.
#pragma once

#include <radial/internal/unique_fd.h>

namespace radial::plugin_support {

// A level-triggered wake-up for a poll() loop: `notify` makes `fd()` readable until `drain`.
// The descriptor is O_CLOEXEC and non-blocking. [thread-safe] notify; drain and fd from the
// polling thread.
class WakeEvent {
public:
    // Creates the eventfd. Throws radial::plugin::Error(RADIAL_E_INTERNAL) when the kernel refuses.
    WakeEvent();

    // Makes fd() readable. Never blocks, never throws; callable from any thread and from inside
    // an output callback.
    void notify() noexcept;
    // Consumes pending notifications so fd() is no longer readable.
    void drain() noexcept;
    int fd() const noexcept { return fd_.get(); }

private:
    internal::UniqueFd fd_;
};

} // namespace radial::plugin_support
