// radial/internal/proc_file.h — reading a small /proc file of a process that may exit meanwhile,
// shared by the conformance harness and the tests (docs/design.md §2.3).
#pragma once

#include <fcntl.h>
#include <radial/internal/unique_fd.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace radial::internal {

// The bytes of a /proc file, or what could be read before its process vanished ("" when it was
// already gone). Plain read(2)s: an ifstream throws from underflow() when the process exits
// mid-read. Throws only std::bad_alloc. [thread-safe]
inline std::string read_proc_file(const std::filesystem::path& path) {
    std::string out;
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return out;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd.get(), buf, sizeof buf)) > 0;)
        out.append(buf, static_cast<std::size_t>(n));
    return out;
}

} // namespace radial::internal
