#include "box_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <radial/plugin/runtime.hpp>

namespace radial::docker {

using plugin_support::ExitStatus;
using plugin_support::UniqueFd;

bool is_container_id(std::string_view s) noexcept {
    return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

std::optional<std::string> CidFile::id() {
    std::lock_guard lock(mutex_);
    if (id_) return id_;
    UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return std::nullopt; // not created yet, or removed after a failed create
    char id[65];
    ssize_t n = ::read(fd.get(), id, sizeof id);
    if (n != 64 || !is_container_id(std::string_view(id, 64))) return std::nullopt;
    id_ = std::string(id, 64);
    return id_;
}

bool SharedClient::reaped() {
    std::lock_guard lock(mutex_);
    return child_.reaped();
}

bool SharedClient::exited() {
    if (reaped()) return true;
    pollfd fd{exit_fd_, POLLIN, 0};
    return exit_fd_ >= 0 && ::poll(&fd, 1, 0) > 0;
}

std::optional<ExitStatus> SharedClient::try_reap() {
    std::lock_guard lock(mutex_);
    return child_.try_reap();
}

void SharedClient::kill() {
    std::lock_guard lock(mutex_);
    child_.kill();
}

UniqueFd env_file_memfd(const std::string& content, const std::string& box) {
    auto fail = [&](const char* step) {
        return radial::plugin::Error(
            RADIAL_E_INTERNAL, "preparing the environment of " + box + ": " + step + ": " +
                                   std::strerror(errno) + "; check the kernel's memfd support");
    };
    UniqueFd fd(::memfd_create("radial-docker-env", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (!fd.valid()) throw fail("memfd_create");
    for (std::size_t done = 0; done < content.size();) {
        ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw fail("write");
        done += static_cast<std::size_t>(n);
    }
    constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL;
    if (::fcntl(fd.get(), F_ADD_SEALS, kSeals) != 0) throw fail("sealing");
    if (::lseek(fd.get(), 0, SEEK_SET) != 0) throw fail("lseek");
    return fd;
}

} // namespace radial::docker
