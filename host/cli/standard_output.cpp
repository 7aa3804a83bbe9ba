#include "cli/standard_output.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ext/stdio_sync_filebuf.h>
#include <iostream>

#include "cli/exit_status.h"

namespace radial::cli {
namespace {

// Rationale: stdio keeps only a flag when a write fails, and glibc drops the buffer it could not
// write, so a flush at exit may succeed with nothing left to write and the cause be gone — the
// errno is kept here, by the one function that writes descriptor 1 for stdio.
std::atomic<int> first_error{0};

void keep(int err) noexcept {
    int none = 0;
    first_error.compare_exchange_strong(none, err);
}

ssize_t write_out(void*, const char* bytes, std::size_t size) {
    std::size_t done = 0;
    while (done < size) {
        const ssize_t n = ::write(STDOUT_FILENO, bytes + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            keep(n < 0 ? errno : EIO);
            return done > 0 ? static_cast<ssize_t>(done) : -1;
        }
        done += static_cast<std::size_t>(n);
    }
    return static_cast<ssize_t>(size);
}

} // namespace

void watch_standard_output() {
    FILE* out =
        ::fopencookie(nullptr, "w", cookie_io_functions_t{nullptr, write_out, nullptr, nullptr});
    if (out == nullptr) return; // stdio's own stdout stays; only the errno's text may be lost
    // As stdio buffers descriptor 1: by line on a terminal, in blocks elsewhere.
    ::setvbuf(out, nullptr, ::isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
    stdout = out; // glibc's stdout is a variable; fmt::print and printf read it at each call
    // Never destroyed: iostreams flush std::cout once more after every static destructor of this
    // program has run (ios_base::Init's), and a buffer gone by then is read freed.
    static auto* const cout_buffer = new __gnu_cxx::stdio_sync_filebuf<char>(out);
    std::cout.rdbuf(cout_buffer);
}

void note_standard_output_error(int err) noexcept { keep(err); }

int finish_standard_output(int status) noexcept {
    std::cout.flush();
    if (std::fflush(stdout) != 0) keep(errno);
    int err = first_error.load();
    if (err == 0 && std::ferror(stdout) == 0) return status;
    if (err == 0) err = EIO; // stdio's own stdout, which keeps no errno of an earlier write
    if (err == EPIPE) return status;
    std::fprintf(stderr, "radiald: writing standard output: %s\n", std::strerror(err));
    // A failure the command already reports keeps its own status, which says more.
    return status == kExitOk ? kExitFailed : status;
}

void exit_now(int status) noexcept { std::_Exit(finish_standard_output(status)); }

} // namespace radial::cli
