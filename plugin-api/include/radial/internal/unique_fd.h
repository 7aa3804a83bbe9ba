// radial/internal/unique_fd.h — the one owner of a file descriptor in the tree (docs/design.md
// §14.6), shared by radiald, the runtime plugins and the conformance harness (§2.3). Installed with
// the developer package only because the run support (radial/support/) hands descriptors out in
// it; not an API of its own.
#pragma once

#include <unistd.h>

#include <utility>

namespace radial::internal {

// Owns one file descriptor (or none: -1) and closes it when it goes out of scope. Move-only. Not
// thread-safe: one owner at a time.
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
    explicit operator bool() const noexcept { return valid(); }
    // Gives up ownership and returns the descriptor.
    int release() noexcept { return std::exchange(fd_, -1); }
    // Closes the owned descriptor (if any) and owns `fd` instead. A close error is not reported:
    // the descriptor is released either way (close(2) on Linux), and callers that must know a
    // write reached the disk fsync before (fs/durable_file.h).
    void reset(int fd = -1) noexcept {
        if (fd_ >= 0) ::close(fd_);
        fd_ = fd;
    }

private:
    int fd_ = -1;
};

} // namespace radial::internal
