// A scripted in-memory runtime ("fake" by default) for host tests that need no engine. argv[0]
// picks the behaviour:
//   echo WORDS...   -> WORDS joined by spaces and "\n" on stdout, exit 0
//   stderr WORDS... -> the same on stderr, exit 0
//   stderr-n WORDS... -> the same on stderr without the newline, exit 0
//   flood BYTES     -> BYTES of 'x' on stdout in 64 KiB writes, exit 0
//   write-once STREAM BYTES -> one write of BYTES bytes ('y's, the last one '\n') on stream id
//                      STREAM (any number: a raw C plugin may give any), exit 0
//   exit N          -> exit code N
//   result F C S    -> the run result flags F (a number, 0x.. too), exit_code C, term_signal S,
//                      whatever they say (a plugin returning a result the ABI does not allow)
//   env             -> NAME=VALUE lines for every env var, exit 0
//   sleep MS        -> waits MS ms; kill(label) ends it (KILLED), spec.timeout_ms ends it
//   (TIMED_OUT) hang MS         -> like sleep, but ignores spec.timeout_ms (a plugin that fails to
//   enforce it)
//   segv            -> writes through a null pointer (a plugin that segfaults in run)
//   corrupt-heap    -> writes past a heap block and frees it (a plugin that corrupts its heap)
//   spawn-segv S    -> starts `sleep S` inheriting every descriptor, then segfaults
//   mark-segv PATH  -> creates the file PATH, then segfaults
//   fork-segv S     -> forks a child that sleeps S seconds holding every descriptor (no exec, so
//                      close-on-exec closes nothing), then segfaults
//   forge-reply     -> in a radial-plugin-host, writes a reply frame of its own, {"status": 0}
//                      and nothing else, on every call socket (a plugin corrupting the protocol)
//   forge-name      -> the same with a name frame for sink 0xff
//   forge-deep      -> the same with a reply nested a million levels deep
//   forge-errors    -> the same with 17 error reports (more than a call may make)
//   close-calls     -> in a radial-plugin-host, closes every socket above fd 4 (the call sockets:
//                      a plugin closing descriptors it does not own), then exit 0
//   spawn-child PATH -> starts `sleep 600` (in the process's own group), writes its pid to
//                      PATH, exit 0
// list_by_label of a prefix containing "abort-list" calls abort() (a plugin that aborts there).
// Config ([run.<id>]): caps = [capability ids]; refuse = [field names]; supersede = [field names];
// unknown = [field names] (reported with disposition 7, which the ABI does not define);
// failPreflight = "message"; failKills = N (the first N kills fail, as an engine that does not
// answer for a while); failCapabilities = true (capabilities fails); ended = ["LABEL=CODE", ...]
// (inspect reports that box ended with exit CODE; any other label: the helper's "cannot tell");
// contradict = [field names] (each reported REFUSED, then HONOURED: two answers for one field);
// hangCreateWhile = "PATH" (create waits while PATH exists; with mark-segv: a create that hangs
// after a crash); boxRoot = "UID:GID" (answers radial.box-root/1 with those host ids);
// tamperSignals = ["create", "run"] (there it blocks SIGTERM, SIGINT, SIGHUP and SIGQUIT on the
// calling thread and resets SIGUSR1, SIGUSR2, SIGALRM, SIGQUIT and SIGPIPE to SIG_DFL, a plugin
// tampering with the host's signals; RADIAL_FAKE_TAMPER_AT_LOAD=1 in the environment does the
// same when it is loaded).
// Compiled several times with different RADIAL_FAKE_ID values (loader tests: two plugins with one
// id).
#include <dirent.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <radial/plugin/box_root.hpp>
#include <radial/plugin/runtime.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#ifndef RADIAL_FAKE_ID
#define RADIAL_FAKE_ID "fake"
#endif

#ifdef RADIAL_FAKE_RUNPATH_DEP
// A plugin that needs a library found through its runpath (loader tests: where the dynamic linker
// looks is judged as the plugin's own directory is).
extern "C" int radial_runpath_dep(void);
[[maybe_unused]] static const int g_runpath_dep = radial_runpath_dep();
#endif

extern char** environ;

namespace {

void tamper_with_signals() {
    sigset_t block;
    sigemptyset(&block);
    for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&block, s);
    ::pthread_sigmask(SIG_BLOCK, &block, nullptr);
    for (int s : {SIGUSR1, SIGUSR2, SIGALRM, SIGQUIT, SIGPIPE}) ::signal(s, SIG_DFL);
}

const bool g_tampered_at_load = [] {
    const char* v = std::getenv("RADIAL_FAKE_TAMPER_AT_LOAD");
    if (v != nullptr && std::string(v) == "1") tamper_with_signals();
    return true;
}();

using namespace radial;
using namespace radial::plugin;

class FakeRuntime final : public Runtime, public BoxRoot {
public:
    static constexpr Info info{RADIAL_FAKE_ID, "Fake runtime for tests", "9.9.9"};

    FakeRuntime(const Host& host, Config& config) : host_(host) {
        caps_ = config.strings("caps").value_or(std::vector<std::string>{});
        for (const auto& f : config.strings("refuse").value_or(std::vector<std::string>{}))
            refuse_.insert(f);
        for (const auto& f : config.strings("supersede").value_or(std::vector<std::string>{}))
            supersede_.insert(f);
        for (const auto& f : config.strings("unknown").value_or(std::vector<std::string>{}))
            unknown_.insert(f);
        for (const auto& f : config.strings("contradict").value_or(std::vector<std::string>{}))
            contradict_.insert(f);
        fail_preflight_ = config.string("failPreflight").value_or("");
        fail_kills_ = config.integer("failKills").value_or(0);
        fail_capabilities_ = config.boolean("failCapabilities").value_or(false);
        box_root_ = config.string("boxRoot").value_or("");
        for (const auto& t : config.strings("tamperSignals").value_or(std::vector<std::string>{}))
            tamper_.insert(t);
        if (tamper_.count("create")) tamper_with_signals();
        for (const auto& e : config.strings("ended").value_or(std::vector<std::string>{})) {
            const auto eq = e.find('=');
            if (eq == std::string::npos) throw Error(RADIAL_E_INVALID, "ended", "LABEL=CODE");
            ended_[e.substr(0, eq)] = std::stoi(e.substr(eq + 1));
        }
        // A plugin whose create hangs after a crash (an engine probe that does not answer).
        if (const auto mark = config.string("hangCreateWhile")) {
            std::error_code ec;
            while (std::filesystem::exists(*mark, ec))
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }

    BoxState inspect(std::string_view label) override {
        const auto it = ended_.find(std::string(label));
        if (it == ended_.end()) return Runtime::inspect(label);
        return BoxState{RADIAL_BOX_ENDED, RADIAL_RUN_EXITED, it->second, 0};
    }

    // radial.box-root/1 with boxRoot = "UID:GID": boxes are root in a user namespace whose root
    // is those host ids, whatever they are (a plugin answering ids that are someone else's).
    const void* extension(std::string_view id) override {
        return id == RADIAL_BOX_ROOT_EXTENSION_ID && !box_root_.empty() ? box_root_extension()
                                                                        : nullptr;
    }
    BoxRootIds root_ids() override {
        const auto colon = box_root_.find(':');
        return BoxRootIds{static_cast<std::uint32_t>(std::stoul(box_root_.substr(0, colon))),
                          static_cast<std::uint32_t>(std::stoul(box_root_.substr(colon + 1)))};
    }

    void preflight() override {
        if (!fail_preflight_.empty()) throw Error(RADIAL_E_UNAVAILABLE, fail_preflight_);
    }

    std::vector<std::string> capabilities() override {
        host_.debug("fake capabilities");
        if (fail_capabilities_) throw Error(RADIAL_E_UNAVAILABLE, "the engine did not answer");
        return caps_;
    }

    std::vector<Disposition> describe(const ContainerSpec& spec) override {
        host_.debug("fake describe of '" + spec.label + "'");
        std::vector<Disposition> out;
        for (auto f : carried_fields(spec)) {
            std::string name = field_name(f);
            if (contradict_.count(name)) // refused, then honoured after all
                out.push_back({f, RADIAL_DISP_REFUSED, "refused by test config"});
            if (refuse_.count(name))
                out.push_back({f, RADIAL_DISP_REFUSED, "refused by test config"});
            else if (supersede_.count(name))
                out.push_back({f, RADIAL_DISP_SUPERSEDED, "superseded by test config"});
            else if (unknown_.count(name))
                out.push_back({f, 7u, "a value of its own"});
            else
                out.push_back({f, RADIAL_DISP_HONOURED, {}});
        }
        return out;
    }

    RunResult run(const ContainerSpec& spec, Output& out) override {
        if (tamper_.count("run")) tamper_with_signals();
        host_.info("fake run of '" + spec.label + "'");
        {
            std::lock_guard lock(mutex_);
            if (killed_.erase(spec.label)) return RunResult{RADIAL_RUN_KILLED, 0, 0, 0};
            active_.insert(spec.label);
        }
        struct Done {
            FakeRuntime* self;
            std::string label;
            ~Done() {
                std::lock_guard lock(self->mutex_);
                self->active_.erase(label);
                self->killed_.erase(label);
            }
        } done{this, spec.label};

        const auto& cmd = spec.argv[0];
        auto joined = [&] {
            std::string s;
            for (std::size_t i = 1; i < spec.argv.size(); ++i)
                s += (i > 1 ? " " : "") + spec.argv[i];
            return s + "\n";
        };
        if (cmd == "echo" || cmd == "stderr") {
            std::string s = joined();
            out.write(cmd == "echo" ? RADIAL_STREAM_STDOUT : RADIAL_STREAM_STDERR, s.data(),
                      s.size());
            return RunResult{RADIAL_RUN_EXITED, 0, 0, 1};
        }
        if (cmd == "stderr-n") {
            std::string s = joined();
            out.write(RADIAL_STREAM_STDERR, s.data(), s.size() - 1);
            return RunResult{RADIAL_RUN_EXITED, 0, 0, 1};
        }
        if (cmd == "flood") {
            const std::string chunk(64 * 1024, 'x');
            for (auto left = std::stoull(spec.argv.at(1)); left > 0;) {
                const auto n = std::min<unsigned long long>(left, chunk.size());
                if (!out.write(RADIAL_STREAM_STDOUT, chunk.data(), n))
                    return RunResult{RADIAL_RUN_OUTPUT_ABORTED | RADIAL_RUN_KILLED, 0, 0, 1};
                left -= n;
            }
            return RunResult{RADIAL_RUN_EXITED, 0, 0, 1};
        }
        if (cmd == "write-once") {
            std::string bytes(std::stoull(spec.argv.at(2)), 'y');
            if (!bytes.empty()) bytes.back() = '\n';
            if (!out.write(static_cast<std::uint32_t>(std::stoul(spec.argv.at(1))), bytes.data(),
                           bytes.size()))
                return RunResult{RADIAL_RUN_OUTPUT_ABORTED | RADIAL_RUN_KILLED, 0, 0, 1};
            return RunResult{RADIAL_RUN_EXITED, 0, 0, 1};
        }
        if (cmd == "exit") return RunResult{RADIAL_RUN_EXITED, std::stoi(spec.argv.at(1)), 0, 1};
        if (cmd == "result")
            return RunResult{static_cast<std::uint32_t>(std::stoul(spec.argv.at(1), nullptr, 0)),
                             std::stoi(spec.argv.at(2)), std::stoi(spec.argv.at(3)), 1};
        if (cmd == "env") {
            for (const auto& e : spec.env) {
                std::string line = e.name + "=" + e.value + "\n";
                out.write(RADIAL_STREAM_STDOUT, line.data(), line.size());
            }
            return RunResult{RADIAL_RUN_EXITED, 0, 0, 1};
        }
        if (cmd == "sleep" || cmd == "hang") {
            auto ms = std::chrono::milliseconds(std::stoll(spec.argv.at(1)));
            auto limit =
                spec.timeout_ms && cmd == "sleep" ? std::chrono::milliseconds(spec.timeout_ms) : ms;
            std::unique_lock lock(mutex_);
            bool killed = cv_.wait_for(lock, std::min(ms, limit),
                                       [&] { return killed_.count(spec.label) > 0; });
            if (killed) return RunResult{RADIAL_RUN_KILLED, 0, 0, 0};
            if (limit < ms) return RunResult{RADIAL_RUN_TIMED_OUT, 0, 0, 0};
            return RunResult{RADIAL_RUN_EXITED, 0, 0, static_cast<std::uint64_t>(ms.count())};
        }
        if (cmd == "spawn-segv") {
            // A child that outlives the crash holding whatever the process had open.
            const std::string seconds = spec.argv.at(1);
            char* args[] = {const_cast<char*>("sleep"), const_cast<char*>(seconds.c_str()),
                            nullptr};
            pid_t child = 0;
            ::posix_spawn(&child, "/bin/sleep", nullptr, nullptr, args, environ);
        }
        if (cmd.starts_with("forge-")) {
            // A frame: its type, its payload's length (4 bytes, little-endian), the payload. In a
            // radial-plugin-host fds 0-4 are its own; the sockets above them carry calls.
            auto frame_of = [](char type, const std::string& payload) {
                std::string frame(1, type);
                for (int i = 0; i < 4; ++i)
                    frame += static_cast<char>((payload.size() >> (8 * i)) & 0xff);
                return frame + payload;
            };
            std::string frame;
            if (cmd == "forge-reply")
                frame = frame_of('R', std::string("\xa1\x66status\x00", 9)); // CBOR
            else if (cmd == "forge-name")
                frame = frame_of('N', "\xffname");
            else if (cmd == "forge-deep")
                frame = frame_of('R', std::string(1'000'000, '\x81') + '\xf6');
            else // forge-errors: {"code": 1, "key": "", "message": "flood"}, 17 times
                for (int i = 0; i < 17; ++i)
                    frame += frame_of('E', std::string("\xa3\x64"
                                                       "code\x01\x63key\x60\x67message\x65"
                                                       "flood",
                                                       26));
            if (DIR* d = ::opendir("/proc/self/fd")) {
                while (const dirent* e = ::readdir(d)) {
                    const int fd = std::atoi(e->d_name);
                    struct stat st {};
                    if (fd > 4 && fd != ::dirfd(d) && ::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode))
                        [[maybe_unused]]
                        auto n = ::write(fd, frame.data(), frame.size());
                }
                ::closedir(d);
            }
            return RunResult{RADIAL_RUN_EXITED, 0, 0, 1};
        }
        if (cmd == "close-calls") {
            std::vector<int> sockets;
            if (DIR* d = ::opendir("/proc/self/fd")) {
                while (const dirent* e = ::readdir(d)) {
                    const int fd = std::atoi(e->d_name);
                    struct stat st {};
                    if (fd > 4 && fd != ::dirfd(d) && ::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode))
                        sockets.push_back(fd);
                }
                ::closedir(d);
            }
            for (const int fd : sockets) ::close(fd);
            return RunResult{RADIAL_RUN_EXITED, 0, 0, 1};
        }
        if (cmd == "spawn-child") {
            char* args[] = {const_cast<char*>("sleep"), const_cast<char*>("600"), nullptr};
            pid_t child = 0;
            if (::posix_spawn(&child, "/bin/sleep", nullptr, nullptr, args, environ) != 0)
                throw Error(RADIAL_E_INTERNAL, "argv", "fake runtime: cannot start sleep");
            std::ofstream(spec.argv.at(1)) << child << "\n";
            return RunResult{RADIAL_RUN_EXITED, 0, 0, 1};
        }
        if (cmd == "fork-segv") {
            const unsigned seconds = static_cast<unsigned>(std::stoul(spec.argv.at(1)));
            if (::fork() == 0) {
                ::sleep(seconds);
                ::_exit(0);
            }
        }
        if (cmd == "mark-segv") std::ofstream(spec.argv.at(1)) << "crashed\n";
        if (cmd == "segv" || cmd == "spawn-segv" || cmd == "fork-segv" || cmd == "mark-segv") {
            volatile int* nowhere = nullptr;
            *nowhere = 1;
        }
        if (cmd == "corrupt-heap") {
            // Over the allocator's own bookkeeping in front of a block (its size), then freed:
            // the allocator (or a sanitizer) ends the process, wherever the block came from (a
            // write past a block hit a neighbour only when the two were made side by side).
            // Through a volatile pointer so the compiler neither drops nor flags it.
            char* block = static_cast<char*>(std::malloc(24));
            char* volatile over = block - sizeof(std::size_t);
            std::memset(over, 0x41, sizeof(std::size_t));
            std::free(block);
        }
        throw Error(RADIAL_E_INVALID, "argv", "fake runtime: unknown command '" + cmd + "'");
    }

    std::vector<std::string> list_by_label(std::string_view prefix) override {
        if (prefix.find("abort-list") != std::string_view::npos) std::abort();
        std::lock_guard lock(mutex_);
        std::vector<std::string> out;
        for (const auto& l : active_)
            if (l.compare(0, prefix.size(), prefix) == 0) out.push_back(l);
        return out;
    }

    void kill(std::string_view label) override {
        std::lock_guard lock(mutex_);
        if (fail_kills_ > 0) {
            --fail_kills_;
            throw Error(RADIAL_E_UNAVAILABLE, "the engine did not answer (failKills)");
        }
        killed_.insert(std::string(label));
        cv_.notify_all();
    }

private:
    Host host_;
    std::vector<std::string> caps_;
    std::set<std::string> refuse_, supersede_, unknown_, contradict_, tamper_;
    std::string fail_preflight_;
    std::int64_t fail_kills_ = 0; // guarded by mutex_
    bool fail_capabilities_ = false;
    std::string box_root_;
    std::map<std::string, int> ended_;
    std::mutex mutex_;
    std::condition_variable cv_;
    std::set<std::string> active_, killed_;
};

} // namespace

RADIAL_EXPORT_RUNTIME(FakeRuntime)
