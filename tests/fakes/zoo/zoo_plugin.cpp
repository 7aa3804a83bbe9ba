// tests/fakes/zoo/zoo_plugin.cpp — the conformance zoo's plugin (docs/design.md §5.11): the
// conforming HostProcessRuntime with exactly one defect, the one its zoo_identity.cpp names
// (zoo::kDefect). This file is compiled once and linked into every zoo plugin, each with its own
// identity; the harness must fail the checks named after the arrow
// (tests/conformance/CMakeLists.txt asserts the verdicts).
//   ZOO_GOOD             no defect                                  -> PASS
//   ZOO_CREATE_THROWS    create lets a C++ exception cross the ABI  -> create-with-config
//   ZOO_HANG_RUN         run ignores timeout_ms, returns when killed -> run-timeout
//   ZOO_DEAF             run never returns, not even when killed    -> hang: exit status 3
//   ZOO_LATE_OUTPUT      output sink called 100 ms after return     -> no-output-after-return
//   ZOO_LIST_EVERYTHING  list_by_label ignores the prefix           -> list-by-label-prefix
//   ZOO_LEAKY_KILL       kill leaves the box listed                 -> kill-during-run
//   ZOO_EXTRA_EXPORTS    built without hidden visibility or a version script -> exports-only-entry
//   ZOO_SIGNAL_TAMPER    run sets SIGPIPE to SIG_IGN (a classic)    -> no-signal-tampering
//   ZOO_REAP_ANY         run reaps any child, waitpid(-1)           -> no-signal-tampering
//   ZOO_LEAKY_FD         create opens a descriptor without O_CLOEXEC and never closes it
//                                                                   -> descriptor-hygiene
//   ZOO_CHATTY           run prints a progress line on stderr      -> no-stdio
//   ZOO_VERSIONED        none; its version script has a named node   -> PASS (exports-only-entry)
//   ZOO_IGNORE_SIGCHLD   run ignores SIGCHLD while it runs, then restores it
//                                                                   -> no-signal-tampering
//   ZOO_KEEP_EXITED      a box whose workload exits by itself is never removed, and list_by_label
//                        lists running boxes only (a podman port's defect)
//                                                                   -> no-box-left (--verify-gone)
//   ZOO_KILL_OWN_ONLY    kill acts only on boxes this instance started (a crashed host's orphan
//                        is never killed)                           -> kill-cross-instance
//   ZOO_SQUASH_EXIT_CODES exit codes 4-255 reported as 1            -> run-exit-codes
//   ZOO_KILL_NOOP        kill returns RADIAL_OK and does nothing    -> kill-during-run, then a
//                        hang; the harness removes its box (--cleanup)
//   ZOO_NO_DESCRIBE      no describe_spec at all                    -> dispositions-complete
//                        (passes with --allow-no-describe-spec)
//   ZOO_HANG_DESTROY     destroy never returns                      -> hang, named destroy
//   ZOO_HANG_LIST        list_by_label never returns                -> hang, named list_by_label
//   ZOO_HANG_CREATE      create never returns                       -> hang, named create
//   ZOO_CLAIM_CONFINEMENT reports user, readOnlyRootfs, tmpfs, network, pidsLimit, memory, cpus
//                        and extraHosts HONOURED and does none of them (its boxes are host
//                        processes)
//                                                                   -> confine-* (each probe)
//   ZOO_LEAK_SESSION_ENV a session's exec also gets the previous exec's variables, secrets too
//                                                                   ->
//                                                                   session-execs-keep-state-not-env
//   ZOO_KEEP_SESSION     session destroy returns OK and the session's box stays listed
//                                                                   ->
//                                                                   session-destroy-leaves-nothing
//   ZOO_LINGER_THREAD    destroy leaves a thread running            -> no-thread-after-destroy
//   ZOO_CRASH_AFTER_DESTROY destroy of an instance that ran a box leaves a thread that crashes
//                        the process 300 ms later                   -> the crash is blamed on a
//                                                                      thread in no plugin call
//   ZOO_STRAY_PROCESS    each run also starts a helper process with the box's env, in a session
//                        of its own, and forgets it: neither kill nor the box file knows it
//                                                                   -> the harness's env mark
//   ZOO_SECRET_FILE      run writes the spec's env, secrets too, to a file in /tmp that stays
//                        until destroy (an OCI bundle's config.json kept too long)
//                                                                   -> secret-env-not-in-files
//   ZOO_CONSTRUCTOR_THREAD the library starts a thread when it is loaded and never stops it
//                                                                   -> no-thread-after-dlclose
//   ZOO_BLOCK_SIGNALS    create blocks SIGTERM on the thread that called it and leaves it blocked
//                                                                   -> no-signal-tampering
//   ZOO_RESET_SIGNALS    run resets SIGUSR1 and SIGQUIT to SIG_DFL   -> no-signal-tampering
//   ZOO_SECRET_SHM       as ZOO_SECRET_FILE, in /dev/shm (shm_open's place)
//                                                                   -> secret-env-not-in-files
//   ZOO_LOAD_FD          the library opens a descriptor without O_CLOEXEC when it is loaded and
//                        keeps it                                   -> descriptor-hygiene
//   ZOO_OOM_EXIT_ZERO    a workload that exits 0 is reported OOM_KILLED too, a contradiction
//                                                                   -> every check that runs one
// Every zoo box also has a file in the config's boxDir, which tests/conformance/zoo_box.sh reads
// as the independent probe (--verify-gone) and removes as --cleanup.
// (The wrong-major and missing-entry plugins are tests/fakes/plugins/zoo_raw.c.)
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "host_process_runtime.h"
#include "zoo_defect.h"

namespace {

using namespace radial;
using namespace radial::plugin;
using zoo::Defect;
using zoo::kDefect;

zoo::Defects defects() {
    zoo::Defects d;
    d.ignore_timeout = kDefect == Defect::hang_run;
    d.hang_until_killed = kDefect == Defect::hang_run;
    d.deaf = kDefect == Defect::deaf;
    d.list_everything = kDefect == Defect::list_everything;
    d.leave_box_after_kill = kDefect == Defect::leaky_kill;
    d.keep_exited = kDefect == Defect::keep_exited;
    d.kill_own_only = kDefect == Defect::kill_own_only;
    d.squash_exit_codes = kDefect == Defect::squash_exit_codes;
    d.kill_noop = kDefect == Defect::kill_noop;
    d.hang_list = kDefect == Defect::hang_list;
    d.claim_confinement = kDefect == Defect::claim_confinement;
    d.leak_session_env = kDefect == Defect::leak_session_env;
    d.keep_session = kDefect == Defect::keep_session;
    return d;
}

[[noreturn]] void hang_forever() {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

// constructor_thread: a library-wide helper thread, started by a static initialiser, that
// neither destroy nor unloading stops.
// (The library is linked -z nodelete, so dlclose leaves its code mapped: see CMakeLists.txt.)
const bool g_constructor_thread = [] {
    if (kDefect == Defect::constructor_thread) std::thread(hang_forever).detach();
    return true;
}();

// load_fd: a library-wide descriptor, opened by a static initialiser, inheritable and never closed.
const int g_load_fd = kDefect == Defect::load_fd ? ::open("/dev/null", O_RDONLY) : -1;

class ZooRuntime final : public zoo::HostProcessRuntime {
public:
    // The id is each plugin's own (zoo::kId); zoo_descriptor() puts it in the descriptor.
    static constexpr Info info{"zoo", "Conformance zoo: a host-process runtime", "0.0.1"};
    ZooRuntime(const Host& host, Config& config) : HostProcessRuntime(host, config, defects()) {
        if (kDefect == Defect::hang_create) hang_forever();
        if (kDefect == Defect::block_signals) {
            sigset_t term;
            sigemptyset(&term);
            sigaddset(&term, SIGTERM);
            ::pthread_sigmask(SIG_BLOCK, &term, nullptr);
        }
        if (kDefect == Defect::leaky_fd)
            leaked_fd_ = ::open("/dev/null", O_RDONLY); // no O_CLOEXEC, and no destructor closes it
    }

    RunResult run(const ContainerSpec& spec, Output& out) override {
        ran_ = true;
        switch (kDefect) {
            case Defect::stray_process: start_stray(spec); break;
            case Defect::secret_file: write_env_file(spec, "/tmp"); break;
            case Defect::secret_shm: write_env_file(spec, "/dev/shm"); break;
            case Defect::chatty:
                std::fprintf(stderr, "zoo: running %s\n", spec.label.c_str());
                break;
            case Defect::ignore_sigchld: {
                // "Temporarily" ignored and put back: every child that exits meanwhile is
                // discarded.
                struct sigaction ignore {
                }, saved{};
                ignore.sa_handler = SIG_IGN;
                ::sigaction(SIGCHLD, &ignore, &saved);
                RunResult r = HostProcessRuntime::run(spec, out);
                ::sigaction(SIGCHLD, &saved, nullptr);
                return r;
            }
            case Defect::signal_tamper: ::signal(SIGPIPE, SIG_IGN); break;
            case Defect::reset_signals:
                ::signal(SIGUSR1, SIG_DFL);
                ::signal(SIGQUIT, SIG_DFL);
                break;
            case Defect::reap_any:
                while (::waitpid(-1, nullptr, WNOHANG) > 0) {
                }
                break;
            case Defect::oom_exit_zero: {
                RunResult r = HostProcessRuntime::run(spec, out);
                if ((r.flags & RADIAL_RUN_EXITED) && r.exit_code == 0)
                    r.flags |= RADIAL_RUN_OOM_KILLED;
                return r;
            }
            default: break;
        }
        return HostProcessRuntime::run(spec, out);
    }

    ~ZooRuntime() override {
        if (kDefect == Defect::hang_destroy) hang_forever();
        for (const auto& f : env_files_) ::unlink(f.c_str());
        if (kDefect == Defect::linger_thread) std::thread(hang_forever).detach();
        // Only after a run, so that the instances the harness makes to open its gates do not
        // crash it first, elsewhere.
        if (kDefect == Defect::crash_after_destroy && ran_)
            std::thread([] {
                std::this_thread::sleep_for(std::chrono::milliseconds(300));
                ::raise(SIGSEGV); // stands for touching the destroyed instance
            }).detach();
    }

private:
    // A "helper" beside the box: `sleep 600` with the box's environment, in a session of its own
    // (so the box's process-group kill misses it), never recorded, never waited for.
    static void start_stray(const ContainerSpec& spec) {
        std::vector<std::string> env_strings;
        for (const auto& e : spec.env) env_strings.push_back(e.name + "=" + e.value);
        std::vector<char*> envp;
        for (auto& e : env_strings) envp.push_back(e.data());
        envp.push_back(nullptr);
        posix_spawnattr_t attr;
        posix_spawnattr_init(&attr);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
        char sleep[] = "sleep", secs[] = "600";
        char* argv[] = {sleep, secs, nullptr};
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        for (int fd = 0; fd <= 2; ++fd)
            posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_RDWR, 0);
        pid_t pid = 0;
        (void)::posix_spawnp(&pid, "sleep", &actions, &attr, argv, envp.data());
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attr);
    }

    // The spec's env as a bundle's config.json would hold it, in `dir`, left until destroy.
    void write_env_file(const ContainerSpec& spec, const std::string& dir) {
        std::string path = dir + "/zoo-secret-file-" + spec.label + ".json", text = "{\"env\": [";
        for (const auto& e : spec.env) text += "\"" + e.name + "=" + e.value + "\", ";
        text += "]}\n";
        int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) return;
        (void)::write(fd, text.data(), text.size());
        ::close(fd);
        std::lock_guard lock(env_files_mutex_);
        env_files_.push_back(path);
    }

    std::atomic<bool> ran_{false};
    std::mutex env_files_mutex_;
    std::vector<std::string> env_files_;
    int leaked_fd_ = -1;
};

const radial_runtime_descriptor* helper_descriptor() {
    return radial::plugin::detail::descriptor<ZooRuntime>();
}

// create_throws: not noexcept, not caught: the exception unwinds into the host, which the ABI
// forbids.
std::int32_t throwing_create(const radial_host*, const radial_config*, radial_runtime**,
                             const radial_error_sink*) {
    throw std::runtime_error("zoo: create exploded");
}

// late_output: the helper's run, then one more chunk from a detached thread after it returned.
std::int32_t late_run(radial_runtime* rt, const radial_spec* spec, const radial_output_sink* out,
                      radial_run_result* result, const radial_error_sink* err) {
    std::int32_t status = helper_descriptor()->run(rt, spec, out, result, err);
    if (out != nullptr) {
        radial_output_sink copy = *out;
        std::thread([copy] {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            static const std::uint8_t late[] = "late\n";
            copy.write(copy.ctx, RADIAL_STREAM_STDOUT, late, sizeof late - 1);
        }).detach();
    }
    return status;
}

const radial_runtime_descriptor* zoo_descriptor() {
    static const radial_runtime_descriptor d = [] {
        radial_runtime_descriptor x = *helper_descriptor();
        x.id = {zoo::kId, std::strlen(zoo::kId)};
        if (kDefect == Defect::create_throws) x.create = &throwing_create;
        if (kDefect == Defect::late_output) x.run = &late_run;
        if (kDefect == Defect::no_describe) x.describe_spec = nullptr;
        return x;
    }();
    return &d;
}

} // namespace

extern "C" RADIAL_RT_EXPORT const radial_runtime_descriptor* radial_runtime_plugin_entry(void) {
    return zoo_descriptor();
}
