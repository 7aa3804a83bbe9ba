// tests/plugins/docker/preload_marker.cpp — a library that, once loaded into any process (e.g.
// through LD_PRELOAD), creates the file named by RADIAL_TEST_MARKER: proof that the process ran
// code chosen by whoever set its environment. Only libc calls, in a constructor.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

namespace {

__attribute__((constructor)) void mark_loaded() {
    const char* path = ::getenv("RADIAL_TEST_MARKER");
    if (path == nullptr) return;
    int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    [[maybe_unused]] ssize_t n = ::write(fd, "loaded\n", 7);
    ::close(fd);
}

} // namespace
