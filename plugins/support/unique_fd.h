// plugins/support/unique_fd.h — an owned file descriptor, closed when its owner goes out of scope.
#pragma once

#include <unistd.h>

#include <utility>

namespace radial::plugin_support {

// Owns one file descriptor (or none: -1). Move-only. Not thread-safe: one owner at a time.
class UniqueFd {
public:
    UniqueFd() noexcept = default;
    // Takes ownership of `fd` (-1: none).
    explicit UniqueFd(int fd) noexcept : fd_(fd) {}
    UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    UniqueFd& operator=(UniqueFd&& other) noexcept {
        if (this != &other) reset(std::exchange(other.fd_, -1));
        return *this;
    }
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    ~UniqueFd() { reset(); }

    int get() const noexcept { return fd_; }
    bool valid() const noexcept { return fd_ >= 0; }
    // Gives up ownership and returns the descriptor.
    int release() noexcept { return std::exchange(fd_, -1); }
    // Closes the owned descriptor (if any) and owns `fd` instead.
    void reset(int fd = -1) noexcept {
        if (fd_ >= 0) ::close(fd_);
        fd_ = fd;
    }

private:
    int fd_ = -1;
};

} // namespace radial::plugin_support
