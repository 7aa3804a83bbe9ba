#include "call_trace.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

namespace radial::conformance {
namespace {

// Fixed buffers, read by the signal handler: a write racing the handler may tear a name, but
// the last byte is never written, so every read stays within bounds and NUL-terminated.
char g_last_started[200];
char g_last_returned[200];
std::atomic<int> g_in_flight{0};
// The call the current thread is making into the plugin, empty on every other thread: a crash on
// a thread the plugin started itself is then told from a crash inside a call. Static TLS of the
// executable, so the handler reads it without allocating.
thread_local char t_call[200];

void put(const char* s, int fd) {
    std::size_t n = std::strlen(s);
    while (n > 0) {
        ssize_t w = ::write(fd, s, n);
        if (w <= 0) return;
        s += w;
        n -= static_cast<std::size_t>(w);
    }
}

void copy_name(char (&to)[200], const std::string& what) {
    std::size_t n = std::min(what.size(), sizeof to - 1);
    std::memcpy(to, what.data(), n);
    to[n] = 0;
}

std::mutex g_mask_mutex;
std::vector<std::string> g_mask_changes; // guarded by g_mask_mutex

} // namespace

TracedCall::TracedCall(const std::string& what) : what_(what) {
    ::pthread_sigmask(SIG_SETMASK, nullptr, &mask_);
    copy_name(g_last_started, what_);
    copy_name(t_call, what_);
    g_in_flight.fetch_add(1);
}

TracedCall::~TracedCall() {
    sigset_t now;
    ::pthread_sigmask(SIG_SETMASK, nullptr, &now);
    std::string changed;
    for (int s = 1; s < SIGRTMIN; ++s)
        if (::sigismember(&mask_, s) != ::sigismember(&now, s))
            changed += std::string(changed.empty() ? "" : ", ") + "SIG" + ::sigabbrev_np(s) +
                       (::sigismember(&now, s) ? " blocked" : " unblocked");
    if (!changed.empty()) {
        try {
            std::lock_guard lock(g_mask_mutex);
            g_mask_changes.push_back(what_ + ": " + changed);
        } catch (...) {
        }
    }
    t_call[0] = 0;
    copy_name(g_last_returned, what_);
    g_in_flight.fetch_sub(1);
}

std::vector<std::string> signal_mask_changes() {
    std::lock_guard lock(g_mask_mutex);
    return g_mask_changes;
}

void write_call_trace(int fd) {
    if (t_call[0] != 0) {
        put(", inside the plugin call ", fd);
        put(t_call, fd);
        return;
    }
    int n = g_in_flight.load();
    put(", on a thread of the plugin's own, in no plugin call", fd);
    if (n > 0) {
        char num[16], rev[16];
        int i = 0, j = 0;
        do {
            rev[i++] = static_cast<char>('0' + n % 10);
            n /= 10;
        } while (n > 0 && i < 15);
        while (i > 0) num[j++] = rev[--i];
        num[j] = 0;
        put("; plugin calls in flight: ", fd);
        put(num, fd);
        put(", the last started: ", fd);
        put(g_last_started, fd);
    } else {
        put("; no plugin call was in flight: a thread the plugin left running crashed it", fd);
    }
    put("; the last plugin call to return: ", fd);
    put(g_last_returned[0] != 0 ? g_last_returned : "none", fd);
}

} // namespace radial::conformance
