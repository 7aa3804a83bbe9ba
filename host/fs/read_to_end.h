// host/fs/read_to_end.h — what is left to read at a descriptor, whole: the read loop of every
// reader of a small file radiald opened itself (a config, a turn file, Codex auth).
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <string>

namespace radial::fs_util {

// Appends everything `fd` gives until its end to `out`, retrying reads a signal interrupted.
// False, with errno set, when a read fails, or (EFBIG) once `out` holds more than `most` bytes;
// what was read stays in `out`. [thread-safe]
inline bool read_to_end(int fd, std::string& out, std::size_t most = std::string::npos) {
    char buf[16384];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return false;
        if (n == 0) return true;
        out.append(buf, static_cast<std::size_t>(n));
        if (out.size() > most) {
            errno = EFBIG;
            return false;
        }
    }
}

} // namespace radial::fs_util
