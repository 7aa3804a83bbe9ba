#include "box_process.h"

#include <fcntl.h>
#include <radial/support/cli_capture.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace radial::bubblewrap {
namespace {

using plugin::Error;
using plugin_support::ChildProcess;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// How long the output may keep flowing after the box ended: the kernel ends every process of the
// pid namespace with its init, so the pipes close almost at once.
constexpr auto kDrainAfterEnd = 5s;
// bwrap's own stderr (before the box exists) is held back, up to this much, to become the error
// message if bwrap fails; past it, it is treated as the workload's.
constexpr std::size_t kMaxHeldStderr = 64 * 1024;
// bwrap needs no environment of its own; none of the host's reaches it.
const ChildProcess::Env kBwrapEnv = {
    {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}};
const char* const kInstallFix =
    "install bubblewrap (Debian: apt install bubblewrap) or set run.bubblewrap.binary";

std::filesystem::path program(const std::string& binary) {
    std::filesystem::path found = ChildProcess::find_program(binary);
    if (found.empty())
        throw Error(RADIAL_E_UNAVAILABLE, "binary",
                    "'" + binary + "' is not in PATH; " + std::string(kInstallFix));
    return found;
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

BoxProcess BoxProcess::start(const std::string& binary,
                             const std::function<BwrapCommand(int info_fd)>& command) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        throw Error(RADIAL_E_INTERNAL, std::string("pipe2 failed: ") + std::strerror(errno));
    internal::UniqueFd info_read(fds[0]), info_write(fds[1]);
    const BwrapCommand cmd = command(info_write.get());

    // The options go through a memfd, NUL-separated (bwrap --args): env values, secrets included,
    // never reach bwrap's command line, which every user on the host can read.
    internal::UniqueFd args(::memfd_create("radial-bwrap-args", MFD_CLOEXEC));
    if (!args.valid())
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

    std::vector<std::string> argv = {"--args", std::to_string(args.get()), "--"};
    argv.insert(argv.end(), cmd.command.begin(), cmd.command.end());
    ChildProcess::Options options;
    options.missing_fix = kInstallFix;
    options.inherit.push_back(std::move(args));
    options.inherit.push_back(std::move(info_write));
    ChildProcess child = ChildProcess::start(program(binary), argv, kBwrapEnv, std::move(options));
    return BoxProcess(std::move(child), std::move(info_read));
}

BoxProcess::~BoxProcess() {
    if (child_.reaped()) return;
    kill_box();
    (void)child_.reap_within(kDrainAfterEnd); // the ChildProcess then SIGKILLs and reaps itself
}

void BoxProcess::kill_box() noexcept {
    (void)init_.signal(SIGKILL);
    child_.kill();
}

bool BoxProcess::read_info(const std::function<void(const ProcessId&)>& on_init) {
    ssize_t got = ::read(info_.get(), buffer_.data(), buffer_.size());
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    if (got <= 0) {
        info_.reset();
        return false;
    }
    info_text_.append(buffer_.data(), static_cast<std::size_t>(got));
    if (init_known_) return true;
    if (auto pid = parse_child_pid(info_text_)) {
        init_known_ = true;
        if (auto id = ProcessId::of(*pid)) {
            init_ = *id;
            on_init(init_);
        }
        // The box exists: what bwrap held back on stderr was the workload's after all.
        release_held_err();
    }
    return true;
}

void BoxProcess::deliver(std::uint32_t stream, const char* data, std::size_t size) {
    // Output::write is false also when there is no sink at all: only aborted() ends the run.
    if (!out_->write(stream, data, size) && out_->aborted()) pump_->output_aborted();
}

void BoxProcess::release_held_err() {
    if (held_err_.empty()) return;
    const std::string held = std::move(held_err_);
    held_err_.clear();
    deliver(RADIAL_STREAM_STDERR, held.data(), held.size());
}

bool BoxProcess::read_output(internal::UniqueFd& fd, std::uint32_t stream) {
    ssize_t got = ::read(fd.get(), buffer_.data(), buffer_.size());
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
    if (got <= 0) {
        fd.reset();
        return false;
    }
    const auto size = static_cast<std::size_t>(got);
    if (stream == RADIAL_STREAM_STDERR && !init_known_ &&
        held_err_.size() + size <= kMaxHeldStderr) {
        held_err_.append(buffer_.data(), size);
        return true;
    }
    if (stream == RADIAL_STREAM_STDERR) release_held_err();
    deliver(stream, buffer_.data(), size);
    return true;
}

BoxOutcome BoxProcess::run(plugin::Output& out, std::uint64_t timeout_ms,
                           plugin_support::ActiveRun& active,
                           const std::function<void(const ProcessId&)>& on_init) {
    const auto started = Clock::now();
    plugin_support::PumpOptions options;
    if (timeout_ms != 0) options.deadline = started + std::chrono::milliseconds(timeout_ms);
    // A stop is a SIGKILL of the box's init: nothing to wait for before forcing.
    options.kill_grace = 0ms;
    options.settle_budget = kDrainAfterEnd;
    options.drain_budget = kDrainAfterEnd;
    options.box_fd = child_.exit_fd();
    if (options.box_fd < 0) options.check_every = 100ms; // no pidfd: poll for bwrap's end

    plugin_support::PumpBox box;
    box.ended = [this] { return child_.try_reap().has_value(); };
    box.stop = [this](const plugin_support::StopRequest&) {
        kill_box();
        return true;
    };
    box.force_kill = [this] { kill_box(); };
    plugin_support::RunPump pump(active, options, std::move(box));
    out_ = &out;
    pump_ = &pump;
    pump.watch(child_.stdout_pipe().get(),
               [this] { return read_output(child_.stdout_pipe(), RADIAL_STREAM_STDOUT); });
    pump.watch(child_.stderr_pipe().get(),
               [this] { return read_output(child_.stderr_pipe(), RADIAL_STREAM_STDERR); });
    pump.watch(info_.get(), [&] {
        bool open = read_info(on_init);
        if (init_known_ && active.kill_requested()) kill_box(); // a kill that raced the start
        return open;
    });
    plugin_support::PumpResult r = pump.run();
    out_ = nullptr;
    pump_ = nullptr;

    // The postcondition is "the box is gone": bwrap reaped, its init (and with it its pid
    // namespace) ended.
    if (!r.box_ended) kill_box();
    auto status = child_.reap_within(kDrainAfterEnd);
    for (auto until = Clock::now() + kDrainAfterEnd;
         init_.pid > 0 && init_.alive() && Clock::now() < until;) {
        (void)init_.signal(SIGKILL);
        std::this_thread::sleep_for(10ms);
    }
    if (!status)
        throw Error(RADIAL_E_INTERNAL, "bwrap " + std::to_string(child_.pid()) +
                                           " did not end within 5 s of SIGKILL; report this bug");
    if (!init_known_ && r.ending == plugin_support::Ending::none &&
        !(status->exited && status->code == 0)) {
        while (!held_err_.empty() && (held_err_.back() == '\n' || held_err_.back() == ' '))
            held_err_.pop_back();
        throw Error(
            RADIAL_E_UNAVAILABLE,
            "bwrap could not create the box: " +
                (held_err_.empty() ? std::string("it exited without a message") : held_err_));
    }
    BoxOutcome outcome;
    outcome.ending = r.ending;
    outcome.status = *status;
    outcome.output_aborted = r.output_aborted;
    outcome.duration_ms = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count());
    return outcome;
}

int run_quietly(const std::vector<std::string>& argv, std::chrono::milliseconds budget,
                std::string& output) {
    try {
        plugin_support::CaptureOptions options;
        options.missing_fix = kInstallFix;
        const plugin_support::CliOutput r = plugin_support::capture_cli(
            program(argv.at(0)), {argv.begin() + 1, argv.end()}, kBwrapEnv, budget, options);
        output = (r.out + r.err).substr(0, 4096);
        if (r.timed_out) {
            output = "'" + argv[0] + "' did not finish within " +
                     std::to_string(budget.count() / 1000) + " s";
            return -1;
        }
        if (!r.status.exited) {
            output += r.status.signal != 0
                          ? " (ended by signal " + std::to_string(r.status.signal) + ")"
                          : " (its exit status was lost: another part of the process reaped it)";
            return -1;
        }
        return r.status.code;
    } catch (const Error& e) {
        output = e.what();
        return -1;
    }
}

} // namespace radial::bubblewrap
