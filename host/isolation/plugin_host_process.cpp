#include "isolation/plugin_host_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "isolation/plugin_wire.h"

extern char** environ;

namespace radial::isolation {

using nlohmann::json;

namespace {

// How long a process that lost its control socket may take to end before it is SIGKILLed.
constexpr int kEndGraceMs = 5000;
// How long after its descriptors closed a crashed process can be reaped, with room for a loaded
// machine (its exit has only its notifications left then).
constexpr int kCrashedByMs = 1000;
// Call sockets kept for later calls: as many as calls usually overlap (runs, kills, listings).
constexpr std::size_t kMaxIdleCalls = 16;
// What one call may report through its sinks; far above what any runtime says (a few errors, a
// disposition per spec field, a listing of its boxes' labels).
constexpr std::size_t kMostErrorReports = 16;
constexpr std::size_t kMostDispositions = 256;
constexpr std::size_t kMostReportBytes = 64u << 10;
constexpr std::size_t kMostNameBytes = 16u << 20;

std::string describe_status(int status) {
    if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);
        const char* name = ::strsignal(sig);
        return "was killed by signal " + std::to_string(sig) + " (" +
               (name != nullptr ? name : "unknown") + ")" +
               (WCOREDUMP(status) ? ", dumping core" : "");
    }
    if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
    return "ended (wait status " + std::to_string(status) + ")";
}

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

} // namespace

PluginHostProcess::PluginHostProcess(const std::string& helper, int plugin_fd,
                                     const std::string& plugin_path, const std::string& plugin_id,
                                     LogFn log) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        throw std::runtime_error(errno_text("making the plugin host's control socket"));
    control_.reset(sv[0]);
    internal::UniqueFd theirs(sv[1]);
    // dup2 onto itself would keep close-on-exec: keep both off fds 3 and 4 first.
    internal::UniqueFd plugin(::fcntl(plugin_fd, F_DUPFD_CLOEXEC, 5));
    if (theirs.get() <= 4) theirs.reset(::fcntl(theirs.get(), F_DUPFD_CLOEXEC, 5));
    if (!plugin || !theirs) throw std::runtime_error(errno_text("passing the plugin file"));
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    ::posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    ::posix_spawn_file_actions_adddup2(&actions, 1, 2);
    ::posix_spawn_file_actions_adddup2(&actions, theirs.get(), 3);
    ::posix_spawn_file_actions_adddup2(&actions, plugin.get(), 4);
    posix_spawnattr_t attr;
    ::posix_spawnattr_init(&attr);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    ::posix_spawnattr_setsigmask(&attr, &none);
    ::posix_spawnattr_setsigdefault(&attr, &all);
    ::posix_spawnattr_setpgroup(&attr, 0);
    ::posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    std::string arg0 = "radial-plugin-host", arg1 = plugin_path, arg2 = plugin_id;
    char* argv[] = {arg0.data(), arg1.data(), arg2.data(), nullptr};
    const int rc = ::posix_spawn(&pid_, helper.c_str(), &actions, &attr, argv, environ);
    ::posix_spawn_file_actions_destroy(&actions);
    ::posix_spawnattr_destroy(&attr);
    if (rc != 0)
        throw std::runtime_error("starting the plugin host '" + helper + "': " + std::strerror(rc) +
                                 "; reinstall radiald (it ships radial-plugin-host beside "
                                 "radial-init) or set run.pluginIsolation = \"in-process\"");
    pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0)));
    reader_ = std::thread([this, log = std::move(log)] { forward_logs(log); });
}

PluginHostProcess::~PluginHostProcess() {
    ::shutdown(control_.get(), SHUT_RDWR); // the process ends at its control socket's end
    if (reader_.joinable()) reader_.join();
    ended();
}

void PluginHostProcess::forward_logs(LogFn log) {
    Frame frame;
    while (read_frame(control_.get(), frame))
        if (frame.type == kLog && !frame.payload.empty() && log)
            log(static_cast<unsigned char>(frame.payload[0]),
                std::string_view(frame.payload).substr(1));
}

bool PluginHostProcess::alive() {
    if (!pidfd_) {
        std::lock_guard lock(reap_mutex_);
        return !reaped_;
    }
    pollfd p{pidfd_.get(), POLLIN, 0};
    return ::poll(&p, 1, 0) == 0;
}

std::string PluginHostProcess::ended() {
    std::lock_guard lock(reap_mutex_);
    if (reaped_) return how_ended_;
    bool gone = false;
    if (pidfd_) {
        pollfd p{pidfd_.get(), POLLIN, 0};
        int r;
        do {
            r = ::poll(&p, 1, kEndGraceMs);
        } while (r < 0 && errno == EINTR);
        gone = r > 0;
    }
    if (!gone) {
        if (pidfd_)
            ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
        else
            ::kill(pid_, SIGKILL); // not reaped yet (only here), so the pid is still its own
    }
    // What it left in its process group (it leads one: the plugin's children that did not leave
    // it) goes with it, as a child's does (docs/design.md §5.3), before the reap, while the pid
    // cannot be another process's group.
    ::kill(-pid_, SIGKILL);
    int status = 0;
    pid_t r;
    do {
        r = ::waitpid(pid_, &status, 0);
    } while (r < 0 && errno == EINTR);
    how_ended_ = r != pid_                 ? "ended with its status lost"
                 : killed_because_.empty() ? describe_status(status)
                                           : killed_because_ + " and was killed";
    reaped_ = true;
    return how_ended_;
}

void PluginHostProcess::kill_for(std::string why) {
    std::lock_guard lock(reap_mutex_);
    if (reaped_) return;
    killed_because_ = std::move(why);
    if (pidfd_)
        ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
    else
        ::kill(pid_, SIGKILL); // not reaped yet (ended() holds the same lock), so still its own
}

std::optional<json> PluginHostProcess::call(const json& request, const CallSinks& sinks) {
    internal::UniqueFd ours;
    {
        std::lock_guard lock(send_mutex_);
        if (!idle_.empty()) {
            ours = std::move(idle_.back());
            idle_.pop_back();
        }
    }
    if (!ours) {
        int sv[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
            throw std::runtime_error(errno_text("making a socket for a plugin call"));
        ours.reset(sv[0]);
        internal::UniqueFd theirs(sv[1]);
        std::lock_guard lock(send_mutex_);
        if (!send_fd(control_.get(), theirs.get())) return std::nullopt;
    }
    if (!write_frame(ours.get(), kRequest, to_cbor(request))) return std::nullopt;
    // Waits for the call's next frame; false once the process ended with nothing more written.
    // The socket's end alone does not say so: a child the plugin forked holds it open after its
    // parent died, and the call would wait for that child (docs/design.md §5.13).
    auto next_frame_or_end = [&] {
        for (;;) {
            pollfd p[2] = {{ours.get(), POLLIN, 0}, {pidfd_ ? pidfd_.get() : -1, POLLIN, 0}};
            const int n = ::poll(p, 2, -1);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 || p[0].revents != 0) return true; // read_frame says what there is
            if (p[1].revents != 0) {
                pollfd left{ours.get(), POLLIN, 0}; // what it wrote before it ended is there now
                return ::poll(&left, 1, 0) > 0;
            }
        }
    };
    // What one call's reports may add up to: more is a plugin flooding radiald's memory through
    // its sinks, which the in-process collectors would keep whole (docs/design.md §5.13).
    std::size_t errors = 0, dispositions = 0, name_bytes = 0;
    auto bound = [](std::size_t& seen, std::size_t add, std::size_t most, const char* what) {
        seen += add;
        if (seen > most)
            throw std::runtime_error(std::string("more ") + what + " than a call may report");
    };
    Frame f;
    try {
        while (next_frame_or_end() && read_frame(ours.get(), f)) {
            const std::string_view p = f.payload;
            switch (f.type) {
                case kReturn: {
                    json reply = from_cbor(p);
                    // Every reply carries its status (plugin_host_main.cpp): one without it is a
                    // helper whose plugin broke the protocol, as a malformed frame is.
                    if (!reply.is_object() || !reply.contains("status") ||
                        !reply["status"].is_number_integer())
                        throw std::runtime_error("a reply without an integer status");
                    std::lock_guard lock(send_mutex_);
                    if (idle_.size() < kMaxIdleCalls) idle_.push_back(std::move(ours));
                    return reply;
                }
                case kError: {
                    bound(errors, 1, kMostErrorReports, "error reports");
                    if (p.size() > kMostReportBytes)
                        throw std::runtime_error("an error report over 64 KiB");
                    const json e = from_cbor(p);
                    const std::string key = e.at("key").get<std::string>();
                    const std::string message = e.at("message").get<std::string>();
                    if (sinks.err != nullptr)
                        sinks.err->report(sinks.err->ctx, e.at("code").get<std::int32_t>(),
                                          {key.data(), key.size()},
                                          {message.data(), message.size()});
                    break;
                }
                case kName: {
                    // Unsigned: a byte of 0x80 or more is no index below 0 (char is signed here).
                    const auto which = p.empty() ? 2u : static_cast<unsigned char>(p[0]);
                    const auto* sink = which > 1 ? nullptr : sinks.names[which];
                    if (sink == nullptr) throw std::runtime_error("a name for no sink");
                    bound(name_bytes, p.size(), kMostNameBytes, "bytes of names");
                    sink->add(sink->ctx, {p.data() + 1, p.size() - 1});
                    break;
                }
                case kDisposition: {
                    if (sinks.dispositions == nullptr)
                        throw std::runtime_error("a stray disposition");
                    bound(dispositions, 1, kMostDispositions, "dispositions");
                    if (p.size() > kMostReportBytes)
                        throw std::runtime_error("a disposition over 64 KiB");
                    const json d = from_cbor(p);
                    const std::string note = d.at("note").get<std::string>();
                    sinks.dispositions->field(
                        sinks.dispositions->ctx, d.at("field").get<std::uint32_t>(),
                        d.at("disposition").get<std::uint32_t>(), {note.data(), note.size()});
                    break;
                }
                case kOutput: {
                    if (sinks.output == nullptr || p.size() < 4)
                        throw std::runtime_error("stray output");
                    const std::int32_t rc = sinks.output->write(
                        sinks.output->ctx, read_wire_u32(p),
                        reinterpret_cast<const std::uint8_t*>(p.data() + 4), p.size() - 4);
                    if (!write_frame(ours.get(), kAck, std::string(1, rc == 0 ? '\0' : '\1')))
                        return std::nullopt;
                    break;
                }
                case kChangeEntry:
                case kChangeData: {
                    if (sinks.changes == nullptr || (f.type == kChangeEntry && p.size() < 4))
                        throw std::runtime_error("a stray change");
                    std::int32_t rc;
                    if (f.type == kChangeEntry) {
                        rc = sinks.changes->entry(sinks.changes->ctx, {p.data() + 4, p.size() - 4},
                                                  read_wire_u32(p));
                    } else {
                        rc = sinks.changes->data(sinks.changes->ctx,
                                                 reinterpret_cast<const std::uint8_t*>(p.data()),
                                                 p.size());
                    }
                    if (!write_frame(ours.get(), kAck, std::string(1, rc == 0 ? '\0' : '\1')))
                        return std::nullopt;
                    break;
                }
                default: throw std::runtime_error("an unknown frame");
            }
        }
    } catch (const std::exception& e) {
        // A host process that breaks the protocol has a plugin that corrupted it: it is ended,
        // as one that crashed.
        abandon(e.what());
        return std::nullopt;
    }
    // The call's socket ended without a reply. A process that crashed closes its descriptors just
    // before it can be reaped; one still running after kCrashedByMs closed the socket itself (a
    // plugin closing descriptors it does not own) and is ended for it at once, said as such —
    // not waited for and then reported as killed by a signal from nowhere.
    if (pidfd_) {
        pollfd p{pidfd_.get(), POLLIN, 0};
        int r;
        do {
            r = ::poll(&p, 1, kCrashedByMs);
        } while (r < 0 && errno == EINTR);
        if (r == 0) abandon("closed the call's socket without a reply, and kept running");
    }
    return std::nullopt;
}

} // namespace radial::isolation
