#include "box_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace radial::bubblewrap {
namespace {

using plugin::Error;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// How long the output may keep flowing after the box was killed: the kernel ends every process
// of the pid namespace at once, so the pipes close almost immediately.
constexpr auto kDrainAfterKill = 5s;
// bwrap's own stderr (before the box exists) is held back, up to this much, to become the
// error message if bwrap fails; past it, it is treated as the workload's.
constexpr std::size_t kMaxHeldStderr = 64 * 1024;

std::pair<UniqueFd, UniqueFd> make_pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        throw Error(RADIAL_E_INTERNAL, std::string("pipe2 failed: ") + std::strerror(errno));
    return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// A copy of `fd` at 10 or above, close-on-exec: dup2 in the child must never have its source and
// target be the same number (that would keep FD_CLOEXEC set on some libcs).
UniqueFd high_copy(int fd) {
    int c = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
    if (c < 0) throw Error(RADIAL_E_INTERNAL, std::string("fcntl failed: ") + std::strerror(errno));
    return UniqueFd(c);
}

// posix_spawn's attribute and file-action objects, destroyed on scope exit.
struct SpawnSetup {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    SpawnSetup() {
        posix_spawn_file_actions_init(&actions);
        posix_spawnattr_init(&attr);
        sigset_t none, all;
        sigemptyset(&none);
        sigfillset(&all);
        // The host may block or ignore signals (radiald ignores SIGPIPE); bwrap starts clean, in
        // its own process group so a kill reaches nothing of the host's.
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setsigdefault(&attr, &all);
        posix_spawnattr_setpgroup(&attr, 0);
        posix_spawnattr_setflags(
            &attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    }
    ~SpawnSetup() {
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attr);
    }
    SpawnSetup(const SpawnSetup&) = delete;
    SpawnSetup& operator=(const SpawnSetup&) = delete;

    // Maps the child's fd `target` to `source` (which must be >= 10).
    void map(int source, int target) { posix_spawn_file_actions_adddup2(&actions, source, target); }
};

// Spawns argv[0] (PATH searched) with a minimal environment. Returns the pid or throws.
pid_t spawn(SpawnSetup& setup, const std::vector<std::string>& argv_in) {
    std::vector<std::string> args = argv_in;
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // bwrap needs no environment of its own; none of the host's reaches it.
    std::string path = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    char* envp[] = {path.data(), nullptr};
    pid_t pid = -1;
    int rc = ::posix_spawnp(&pid, argv[0], &setup.actions, &setup.attr, argv.data(), envp);
    if (rc != 0)
        throw Error(RADIAL_E_UNAVAILABLE, "binary",
                    "starting '" + args[0] + "' failed: " + std::strerror(rc) +
                        "; install bubblewrap (Debian: apt install bubblewrap) or set "
                        "run.bubblewrap.binary");
    return pid;
}

void wait_reaped(pid_t pid, int& status) {
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
}

// The number after "child-pid": in bwrap's info JSON, once it has fully arrived.
std::optional<pid_t> parse_child_pid(const std::string& info) {
    auto at = info.find("\"child-pid\"");
    if (at == std::string::npos) return std::nullopt;
    at = info.find(':', at);
    if (at == std::string::npos) return std::nullopt;
    ++at;
    while (at < info.size() && info[at] == ' ') ++at;
    std::size_t end = at;
    while (end < info.size() && info[end] >= '0' && info[end] <= '9') ++end;
    if (end == at || end == info.size()) return std::nullopt; // the number may still be arriving
    return static_cast<pid_t>(std::stol(info.substr(at, end - at)));
}

} // namespace

void UniqueFd::reset(int fd) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
}

RunControl::RunControl() {
    auto [r, w] = make_pipe();
    ::fcntl(w.get(), F_SETFL, O_NONBLOCK);
    wake_read = std::move(r);
    wake_write = std::move(w);
}

void RunControl::set_bwrap(const ProcessId& bwrap) {
    std::lock_guard lock(mutex_);
    bwrap_ = bwrap;
}

void RunControl::set_init(const ProcessId& init) {
    std::lock_guard lock(mutex_);
    init_ = init;
}

void RunControl::set_gone() {
    std::lock_guard lock(mutex_);
    gone_ = true;
    changed_.notify_all();
}

bool RunControl::kill_and_wait(std::chrono::milliseconds budget) {
    killed = true;
    (void)!::write(wake_write.get(), "k", 1);
    auto deadline = Clock::now() + budget;
    std::unique_lock lock(mutex_);
    for (;;) {
        if (gone_) return true;
        bool init_alive = init_.pid > 0 && init_.alive();
        bool bwrap_alive = bwrap_.pid > 0 && bwrap_.alive();
        if (init_alive) ::kill(init_.pid, SIGKILL);
        if (bwrap_alive) ::kill(bwrap_.pid, SIGKILL);
        // Before bwrap exists the pump sees `killed` and never starts the box.
        if (bwrap_.pid > 0 && !init_alive && !bwrap_alive) return true;
        if (Clock::now() >= deadline) return false;
        changed_.wait_for(lock, 20ms);
    }
}

BoxProcess BoxProcess::start(const std::string& binary, const BwrapCommand& cmd) {
    // The options go through a memfd, NUL-separated (bwrap --args): env values, secrets included,
    // never reach bwrap's command line, which every user on the host can read.
    UniqueFd args(::memfd_create("radial-bwrap-args", MFD_CLOEXEC));
    if (args.get() < 0)
        throw Error(RADIAL_E_INTERNAL, std::string("memfd_create failed: ") + std::strerror(errno));
    std::string blob;
    for (const auto& o : cmd.options) blob.append(o).push_back('\0');
    for (std::size_t done = 0; done < blob.size();) {
        ssize_t n = ::write(args.get(), blob.data() + done, blob.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw Error(RADIAL_E_INTERNAL, "writing bwrap's arguments failed");
        done += static_cast<std::size_t>(n);
    }
    ::lseek(args.get(), 0, SEEK_SET);

    BoxProcess p;
    auto [out_r, out_w] = make_pipe();
    auto [err_r, err_w] = make_pipe();
    auto [info_r, info_w] = make_pipe();
    UniqueFd c_out = high_copy(out_w.get()), c_err = high_copy(err_w.get()),
             c_args = high_copy(args.get()), c_info = high_copy(info_w.get());
    SpawnSetup setup;
    posix_spawn_file_actions_addopen(&setup.actions, 0, "/dev/null", O_RDONLY, 0);
    setup.map(c_out.get(), 1);
    setup.map(c_err.get(), 2);
    setup.map(c_args.get(), 3);
    setup.map(c_info.get(), 4);
    std::vector<std::string> argv = {binary, "--args", "3", "--"};
    argv.insert(argv.end(), cmd.command.begin(), cmd.command.end());
    p.pid_ = spawn(setup, argv);
    p.out_ = std::move(out_r);
    p.err_ = std::move(err_r);
    p.info_ = std::move(info_r);
    return p;
}

BoxProcess::BoxProcess(BoxProcess&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      reaped_(o.reaped_),
      init_(o.init_),
      out_(std::move(o.out_)),
      err_(std::move(o.err_)),
      info_(std::move(o.info_)) {}

BoxProcess::~BoxProcess() {
    if (pid_ <= 0 || reaped_) return;
    kill_box();
    int status = 0;
    wait_reaped(pid_, status);
}

void BoxProcess::kill_box() noexcept {
    if (init_.pid > 0 && init_.alive()) ::kill(init_.pid, SIGKILL);
    if (pid_ > 0 && !reaped_) ::kill(pid_, SIGKILL);
}

plugin::RunResult BoxProcess::pump(plugin::Output& out, std::uint64_t timeout_ms,
                                   RunControl& control,
                                   const std::function<void(const ProcessId&)>& on_init) {
    const auto started = Clock::now();
    const bool timed = timeout_ms != 0;
    const auto deadline = started + std::chrono::milliseconds(timeout_ms);
    std::uint32_t flags = 0;
    std::optional<Clock::time_point> ended_at;
    auto end_box = [&](std::uint32_t why) {
        if (ended_at) return;
        flags |= why;
        ended_at = Clock::now();
        kill_box();
    };
    bool out_open = true, err_open = true, info_open = true, init_known = false;
    std::string info, held_err;
    auto deliver_err = [&](const char* data, std::size_t n) {
        if (!out.write(RADIAL_STREAM_STDERR, data, n)) end_box(RADIAL_RUN_OUTPUT_ABORTED);
    };
    std::vector<char> buf(64 * 1024);

    if (control.killed) end_box(RADIAL_RUN_KILLED);
    while (out_open || err_open) {
        int wait_ms = -1;
        auto now = Clock::now();
        if (ended_at) {
            if (now - *ended_at > kDrainAfterKill) break;
            wait_ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                           *ended_at + kDrainAfterKill - now)
                                           .count());
        } else if (timed) {
            wait_ms = static_cast<int>(std::max<std::int64_t>(
                0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()));
        }
        pollfd fds[4] = {{out_open ? out_.get() : -1, POLLIN, 0},
                         {err_open ? err_.get() : -1, POLLIN, 0},
                         {info_open && !init_known ? info_.get() : -1, POLLIN, 0},
                         {control.wake_read.get(), POLLIN, 0}};
        int n = ::poll(fds, 4, wait_ms);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            throw Error(RADIAL_E_INTERNAL, std::string("poll failed: ") + std::strerror(errno));
        if (n == 0) {
            if (!ended_at && timed && Clock::now() >= deadline) end_box(RADIAL_RUN_TIMED_OUT);
            continue;
        }
        if (fds[3].revents != 0) {
            (void)!::read(control.wake_read.get(), buf.data(), buf.size());
            if (control.killed) end_box(RADIAL_RUN_KILLED);
        }
        if (fds[2].revents != 0) {
            ssize_t got = ::read(info_.get(), buf.data(), buf.size());
            if (got <= 0) {
                info_open = false;
            } else {
                info.append(buf.data(), static_cast<std::size_t>(got));
                if (auto child = parse_child_pid(info)) {
                    init_known = true;
                    if (auto id = ProcessId::of(*child)) {
                        init_ = *id;
                        on_init(init_);
                    }
                    if (control.killed) kill_box(); // a kill that raced the start
                    if (!held_err.empty()) deliver_err(held_err.data(), held_err.size());
                    held_err.clear();
                }
            }
        }
        for (int i = 0; i < 2; ++i) {
            if (fds[i].revents == 0) continue;
            ssize_t got = ::read(fds[i].fd, buf.data(), buf.size());
            if (got <= 0) {
                (i == 0 ? out_open : err_open) = false;
                continue;
            }
            auto size = static_cast<std::size_t>(got);
            if (i == 1 && !init_known && held_err.size() + size <= kMaxHeldStderr) {
                held_err.append(buf.data(), size);
            } else if (i == 1) {
                if (!held_err.empty()) deliver_err(held_err.data(), held_err.size());
                held_err.clear();
                deliver_err(buf.data(), size);
            } else if (!out.write(RADIAL_STREAM_STDOUT, buf.data(), size)) {
                end_box(RADIAL_RUN_OUTPUT_ABORTED);
            }
        }
    }
    if (ended_at) kill_box();
    int status = 0;
    wait_reaped(pid_, status);
    reaped_ = true;
    // The postcondition is "the box is gone": its init, and with it its pid namespace.
    for (auto until = Clock::now() + kDrainAfterKill;
         init_.pid > 0 && init_.alive() && Clock::now() < until;) {
        ::kill(init_.pid, SIGKILL);
        std::this_thread::sleep_for(10ms);
    }
    if (!init_known && !ended_at && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        while (!held_err.empty() && (held_err.back() == '\n' || held_err.back() == ' '))
            held_err.pop_back();
        throw Error(RADIAL_E_UNAVAILABLE,
                    "bwrap could not create the box: " +
                        (held_err.empty() ? std::string("it exited without a message") : held_err));
    }
    plugin::RunResult r;
    r.flags = flags;
    if (WIFEXITED(status)) {
        r.flags |= RADIAL_RUN_EXITED;
        r.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        r.flags |= RADIAL_RUN_SIGNALED;
        r.term_signal = WTERMSIG(status);
    }
    r.duration_ms = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count());
    return r;
}

int run_quietly(const std::vector<std::string>& argv, std::chrono::milliseconds budget,
                std::string& output) {
    auto [r, w] = make_pipe();
    UniqueFd c_w = high_copy(w.get());
    SpawnSetup setup;
    posix_spawn_file_actions_addopen(&setup.actions, 0, "/dev/null", O_RDONLY, 0);
    setup.map(c_w.get(), 1);
    setup.map(c_w.get(), 2);
    pid_t pid;
    try {
        pid = spawn(setup, argv);
    } catch (const Error& e) {
        output = e.what();
        return -1;
    }
    w.reset();
    c_w.reset();
    auto deadline = Clock::now() + budget;
    char buf[4096];
    bool overran = false;
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) {
            overran = true;
            break;
        }
        pollfd fd{r.get(), POLLIN, 0};
        int n = ::poll(&fd, 1, static_cast<int>(left.count()));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) continue;
        ssize_t got = ::read(r.get(), buf, sizeof buf);
        if (got <= 0) break;
        if (output.size() < 4096) output.append(buf, static_cast<std::size_t>(got));
    }
    // The whole group (the child leads its own, see SpawnSetup): whatever a hung call started must
    // not outlive it. Still unreaped here, so the group's id cannot have been reused.
    if (overran) ::kill(-pid, SIGKILL);
    int status = 0;
    wait_reaped(pid, status);
    if (overran) {
        output = "'" + argv[0] + "' did not finish within " +
                 std::to_string(budget.count() / 1000) + " s";
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

} // namespace radial::bubblewrap
