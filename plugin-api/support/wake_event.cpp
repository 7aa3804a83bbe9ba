#include <radial/support/wake_event.h>
#include <sys/eventfd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <radial/plugin/runtime.hpp>
#include <string>

namespace radial::plugin_support {

WakeEvent::WakeEvent() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (!fd_.valid())
        throw radial::plugin::Error(RADIAL_E_INTERNAL, std::string("creating a wake-up eventfd: ") +
                                                           std::strerror(errno) +
                                                           "; raise the open-file limit");
}

void WakeEvent::notify() noexcept {
    std::uint64_t one = 1;
    // EAGAIN means the counter is saturated: the fd is readable already, which is all we need.
    [[maybe_unused]] auto n = ::write(fd_.get(), &one, sizeof one);
}

void WakeEvent::drain() noexcept {
    std::uint64_t value = 0;
    [[maybe_unused]] auto n = ::read(fd_.get(), &value, sizeof value);
}

} // namespace radial::plugin_support
