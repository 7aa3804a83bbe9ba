// Checks that a plugin is a good guest in the host process: it exports nothing but its entry,
// leaves the host's signal dispositions and other children alone, and keeps no descriptor a
// child could inherit or that outlives its instance (docs/design.md §5.11).
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include "call_trace.h"
#include "checks.h"

namespace radial::conformance {
namespace {

// What the plugin's .dynsym defines and exports, read from the file (not through dlsym, which
// only answers for names one already knows).
struct DynamicExports {
    std::vector<std::string> names;  // defined global or weak symbols, toolchain ones excluded
    std::vector<std::string> unique; // of those, STB_GNU_UNIQUE ones (they pin the library)
    std::string problem;             // why the file could not be read
};

DynamicExports read_dynamic_exports(const std::string& path) {
    DynamicExports out;
    if (::elf_version(EV_CURRENT) == EV_NONE) {
        out.problem = "libelf is unusable: " + std::string(::elf_errmsg(-1));
        return out;
    }
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        out.problem = "opening '" + path + "': " + std::strerror(errno);
        return out;
    }
    Elf* elf = ::elf_begin(fd, ELF_C_READ, nullptr);
    static const std::set<std::string> toolchain = {"_init", "_fini", "__bss_start", "_edata",
                                                    "_end"};
    // A named version node in a version script ("PLUGIN_1 { global: ...; local: *; };") puts an
    // absolute symbol of that name in .dynsym: it is not an export anyone can bind to.
    std::set<std::string> version_names;
    for (Elf_Scn* scn = elf ? ::elf_nextscn(elf, nullptr) : nullptr; scn != nullptr;
         scn = ::elf_nextscn(elf, scn)) {
        GElf_Shdr shdr;
        if (::gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_GNU_verdef) continue;
        Elf_Data* data = ::elf_getdata(scn, nullptr);
        for (std::size_t at = 0, n = 0; data != nullptr && n < shdr.sh_info; ++n) {
            GElf_Verdef def;
            GElf_Verdaux aux;
            if (::gelf_getverdef(data, static_cast<int>(at), &def) == nullptr ||
                ::gelf_getverdaux(data, static_cast<int>(at + def.vd_aux), &aux) == nullptr)
                break;
            if (const char* name = ::elf_strptr(elf, shdr.sh_link, aux.vda_name))
                version_names.insert(name);
            if (def.vd_next == 0) break;
            at += def.vd_next;
        }
    }
    bool found = false;
    for (Elf_Scn* scn = elf ? ::elf_nextscn(elf, nullptr) : nullptr; scn != nullptr;
         scn = ::elf_nextscn(elf, scn)) {
        GElf_Shdr shdr;
        if (::gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_DYNSYM) continue;
        found = true;
        Elf_Data* data = ::elf_getdata(scn, nullptr);
        const std::size_t count = shdr.sh_entsize != 0 ? shdr.sh_size / shdr.sh_entsize : 0;
        for (std::size_t i = 0; data != nullptr && i < count; ++i) {
            GElf_Sym sym;
            if (::gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) continue;
            const int bind = GELF_ST_BIND(sym.st_info);
            if (sym.st_shndx == SHN_UNDEF ||
                (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE))
                continue;
            const char* name = ::elf_strptr(elf, shdr.sh_link, sym.st_name);
            if (name == nullptr || *name == '\0' || toolchain.count(name) != 0 ||
                (sym.st_shndx == SHN_ABS && version_names.count(name) != 0))
                continue;
            out.names.emplace_back(name);
            if (bind == STB_GNU_UNIQUE) out.unique.emplace_back(name);
        }
    }
    if (elf == nullptr)
        out.problem = "reading '" + path + "' as ELF: " + ::elf_errmsg(-1);
    else if (!found)
        out.problem = "'" + path + "' has no dynamic symbol table";
    if (elf != nullptr) ::elf_end(elf);
    ::close(fd);
    return out;
}

// Every signal radiald sets a disposition for (docs/design.md §12.3), and SIGCHLD.
constexpr std::array kWatchedSignals{SIGCHLD, SIGPIPE, SIGINT,  SIGTERM, SIGHUP,
                                     SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM};
// Of those, the ones radiald handles: the harness handles them too, as a host does, so that a
// plugin resetting one to SIG_DFL shows.
constexpr std::array kHostHandled{SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM};

// The harness's handler: SIGUSR1, SIGUSR2 and SIGALRM are ignored, as radiald logs and ignores
// them; the others end the harness as their default action would.
extern "C" void on_host_signal(int signo) {
    if (signo == SIGUSR1 || signo == SIGUSR2 || signo == SIGALRM) return;
    ::signal(signo, SIG_DFL);
    ::raise(signo); // delivered once the handler returns
}

using Dispositions = std::array<struct sigaction, kWatchedSignals.size()>;

Dispositions current_dispositions() {
    Dispositions d{};
    for (std::size_t i = 0; i < kWatchedSignals.size(); ++i)
        ::sigaction(kWatchedSignals[i], nullptr, &d[i]);
    return d;
}

Dispositions install_host_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_host_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int s : kHostHandled) ::sigaction(s, &sa, nullptr);
    return current_dispositions();
}

// As the harness started, before the plugin was loaded: what the plugin found. Taken at static
// initialisation, because a plugin that changes a disposition in an earlier check (or in the
// gates' create) would otherwise have set the baseline itself.
const Dispositions g_dispositions_at_start = install_host_handlers();

// Set by glibc's sigaction itself on x86-64, so it says nothing about the caller.
constexpr int kRestorer = 0x04000000; // SA_RESTORER

std::string handler_text(const struct sigaction& a) {
    std::string s = !(a.sa_flags & SA_SIGINFO) && a.sa_handler == SIG_DFL   ? "SIG_DFL"
                    : !(a.sa_flags & SA_SIGINFO) && a.sa_handler == SIG_IGN ? "SIG_IGN"
                                                                            : "a handler";
    if (int flags = a.sa_flags & ~kRestorer; flags != 0)
        s += " (sa_flags " + std::to_string(flags) + ")";
    return s;
}

// Descriptors open in this process now, each with whether it is close-on-exec and what it is:
// its file's identity, and its path for messages (an inherited file removed meanwhile, as a test
// runner's log replaced by another run, reads "(deleted)" yet is the same descriptor).
struct OpenFd {
    bool cloexec;
    std::string target;
    bool identified = false;
    dev_t dev = 0;
    ino_t ino = 0;
    bool same_file(const OpenFd& o) const {
        return identified && o.identified ? dev == o.dev && ino == o.ino : target == o.target;
    }
};

std::map<int, OpenFd> open_fds() {
    std::vector<int> numbers;
    std::error_code ec;
    for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
         it.increment(ec))
        numbers.push_back(std::atoi(it->path().filename().c_str()));
    std::map<int, OpenFd> fds;
    for (int fd : numbers) {
        int flags = ::fcntl(fd, F_GETFD);
        if (flags < 0) continue; // the listing's own descriptor, closed by now
        std::error_code link_ec;
        auto target = std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(fd), link_ec);
        OpenFd info{(flags & FD_CLOEXEC) != 0, link_ec ? std::string("?") : target.string()};
        if (struct stat st{}; ::fstat(fd, &st) == 0) {
            info.identified = true;
            info.dev = st.st_dev;
            info.ino = st.st_ino;
        }
        fds[fd] = std::move(info);
    }
    return fds;
}

std::vector<std::string> opened_since(const std::map<int, OpenFd>& before,
                                      const std::map<int, OpenFd>& now, bool only_inheritable) {
    std::vector<std::string> out;
    for (const auto& [fd, info] : now) {
        auto was = before.find(fd);
        if (was != before.end() && was->second.same_file(info)) continue;
        if (only_inheritable && info.cloexec) continue;
        out.push_back("fd " + std::to_string(fd) + " (" + info.target + ")");
    }
    return out;
}

// As the harness started, before the plugin was loaded: an inheritable descriptor its library
// opens at load, or its instance at the first create, and keeps is not part of any later baseline.
const std::map<int, OpenFd> g_fds_at_start = open_fds();

} // namespace

CONFORMANCE_CHECK(exports_only_entry, Gate::loaded,
                  "The library's dynamic symbol table exports radial_runtime_plugin_entry and "
                  "nothing else (no C++ symbols a host could bind to by accident, no "
                  "STB_GNU_UNIQUE symbol pinning the library).") {
    DynamicExports d = read_dynamic_exports(Harness::get().library.path);
    ASSERT_TRUE(d.problem.empty()) << d.problem;
    std::vector<std::string> extra;
    for (const auto& n : d.names)
        if (n != "radial_runtime_plugin_entry") extra.push_back(n);
    EXPECT_TRUE(extra.empty())
        << "the library exports " << extra.size() << " symbol(s) besides "
        << "radial_runtime_plugin_entry: " << join(extra, 8)
        << "; build it with radial_add_runtime_plugin (hidden visibility and a version script), "
           "or -fvisibility=hidden and a version script of your own";
    EXPECT_TRUE(d.unique.empty())
        << "the library has STB_GNU_UNIQUE symbols (" << join(d.unique, 8)
        << "), which keep it loaded for the process's life; compile with -fno-gnu-unique";
}

CONFORMANCE_CHECK(no_signal_tampering, Gate::ready,
                  "The dispositions of SIGCHLD, SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, "
                  "SIGUSR1, SIGUSR2 and SIGALRM stay as the host set them whatever the plugin was "
                  "asked to do, no call (the load included) returns with its thread's signal mask "
                  "changed, and a child the host started is still the host's to reap after "
                  "create, run and destroy.") {
    const Dispositions& before = g_dispositions_at_start;
    // Two canaries, children of the host the plugin must leave to it. The first has exited
    // (WNOWAIT: still unreaped) before the plugin is called: a plugin that reaps any child
    // (waitpid(-1)) takes it. The second exits while the box runs, when its first output
    // arrives: a plugin that ignores SIGCHLD or sets SA_NOCLDWAIT meanwhile, even if it
    // restores the disposition afterwards, has the kernel discard it.
    const pid_t exited = ::fork();
    ASSERT_GE(exited, 0) << "fork: " << std::strerror(errno);
    if (exited == 0) ::_exit(7);
    siginfo_t info{};
    ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(exited), &info, WEXITED | WNOWAIT), 0)
        << "waiting for the first canary child to exit: " << std::strerror(errno);
    int release[2];
    ASSERT_EQ(::pipe2(release, O_CLOEXEC), 0) << "pipe2: " << std::strerror(errno);
    const pid_t during = ::fork();
    ASSERT_GE(during, 0) << "fork: " << std::strerror(errno);
    if (during == 0) {
        char c;
        ::close(release[1]);
        [[maybe_unused]] auto n = ::read(release[0], &c, 1); // EOF once the host closes it
        ::_exit(7);
    }
    ::close(release[0]);
    auto released = std::make_shared<std::atomic<int>>(release[1]);
    auto let_go = [released] {
        if (int fd = released->exchange(-1); fd >= 0) ::close(fd);
    };

    auto capture = std::make_shared<OutputCapture>();
    capture->hook = [let_go](std::uint32_t, std::string_view) {
        let_go();
        return true;
    };
    RunObservation o = run(shell_spec(label("box"), "echo started; sleep 1"), capture);
    expect_ran(o, "a box running 'echo started; sleep 1'");
    let_go(); // in case no output arrived
    destroy_instance();

    const Dispositions after = current_dispositions();
    for (std::size_t i = 0; i < kWatchedSignals.size(); ++i) {
        const bool same = before[i].sa_handler == after[i].sa_handler &&
                          (before[i].sa_flags & ~kRestorer) == (after[i].sa_flags & ~kRestorer);
        EXPECT_TRUE(same) << "the disposition of SIG" << ::sigabbrev_np(kWatchedSignals[i])
                          << " was " << handler_text(before[i])
                          << " when the harness started and is " << handler_text(after[i])
                          << " after the plugin's calls; a plugin must leave signal "
                             "dispositions to the host (\"Process rules\" in "
                             "radial/runtime_plugin.h)";
        if (!same) ::sigaction(kWatchedSignals[i], &before[i], nullptr); // for the later checks
    }
    const std::vector<std::string> masks = signal_mask_changes();
    EXPECT_TRUE(masks.empty())
        << "plugin calls returned with their thread's signal mask changed (" << join(masks, 8)
        << "); in a host that thread is the host's, and every thread it starts later inherits "
           "the mask, so a blocked SIGTERM is never heard: a plugin must leave signal masks "
           "alone (block signals only on threads of its own)";
    for (auto [canary, when] : {std::pair{exited, "that had exited before the plugin's calls"},
                                std::pair{during, "that exited while the box ran"}}) {
        int status = 0;
        pid_t reaped = ::waitpid(canary, &status, 0);
        EXPECT_EQ(reaped, canary)
            << "the host's own child " << when << " (pid " << canary
            << ") could no longer be reaped by the host (" << std::strerror(errno)
            << "): the plugin reaped a child it did not start, or made the kernel discard it "
               "(SIGCHLD ignored, SA_NOCLDWAIT); wait only for your own pids";
        if (reaped == canary) {
            EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 7)
                << "the exit status of the host's child " << when << " was lost (raw status "
                << status << ")";
        }
    }
}

CONFORMANCE_CHECK(descriptor_hygiene, Gate::ready,
                  "Every descriptor the plugin keeps open between calls, from its load on, is "
                  "close-on-exec, so no child the host starts inherits it, and none is left open "
                  "after destroy.") {
    // A warm-up instance first: what libraries open once per process and keep (a resolver's
    // socket, a log connection) is then part of the baseline, not blamed on destroy. Not for
    // inheritance: one kept since the harness started (the load, the first create, the warm-up)
    // reaches every child the host starts as surely as one opened now.
    RunObservation warm =
        run(shell_spec(label("warm-up"), "exit 0"), std::make_shared<OutputCapture>());
    expect_ran(warm, "a warm-up box running 'exit 0'");
    destroy_instance();
    const auto baseline = open_fds();
    RunObservation o = run(shell_spec(label("box"), "exit 0"), std::make_shared<OutputCapture>());
    expect_ran(o, "a box running 'exit 0'");
    std::vector<std::string> inheritable = opened_since(g_fds_at_start, open_fds(), true);
    EXPECT_TRUE(inheritable.empty())
        << "between calls the plugin holds descriptors without FD_CLOEXEC: " << join(inheritable, 8)
        << "; every child the host starts would inherit them (open with O_CLOEXEC, pipe2, "
           "SOCK_CLOEXEC)";
    destroy_instance();
    std::vector<std::string> left = opened_since(baseline, open_fds(), false);
    EXPECT_TRUE(left.empty()) << "after destroy the plugin's descriptors are still open: "
                              << join(left, 8)
                              << "; destroy must close everything the instance "
                                 "opened";
}

CONFORMANCE_CHECK(no_stdio, Gate::ready,
                  "The plugin writes nothing to the process's stdout or stderr, itself or through "
                  "a child that inherited them, across create, preflight, capabilities, "
                  "describe_spec, a run whose box prints on both streams, list_by_label, kill and "
                  "destroy: diagnostics go through the host's log.") {
    int file = ::memfd_create("radial-conformance-stdio", MFD_CLOEXEC);
    ASSERT_GE(file, 0) << "memfd_create: " << std::strerror(errno);
    const ContainerSpec spec = shell_spec(label("box"), "echo out; echo err >&2");
    auto capture = std::make_shared<OutputCapture>();
    RunObservation o;
    std::string problem;
    // No assertion inside the diverted window: GoogleTest would print it into the capture.
    Harness::get().divert_stdio(file);
    try {
        Instance& inst = instance();
        inst.preflight();
        inst.capabilities();
        inst.describe(spec);
        o = run(spec, capture);
        inst.list(check_prefix());
        inst.kill(label("never-started"));
        destroy_instance();
    } catch (...) {
        problem = describe_current_exception();
    }
    Harness::get().restore_stdio();
    std::string written;
    char buf[4096];
    for (off_t at = 0;;) {
        ssize_t n = ::pread(file, buf, sizeof buf, at);
        if (n <= 0) break;
        written.append(buf, static_cast<std::size_t>(n));
        at += n;
    }
    ::close(file);
    ASSERT_TRUE(problem.empty()) << "a plugin call failed: " << problem;
    expect_ran(o, "a box printing 'out' and 'err'");
    EXPECT_EQ(capture->out, "out\n") << "the box's stdout went elsewhere than the output sink";
    EXPECT_EQ(capture->err, "err\n") << "the box's stderr went elsewhere than the output sink";
    EXPECT_TRUE(written.empty())
        << written.size() << " byte(s) reached the process's stdout or stderr during the plugin's "
        << "calls: '" << printable(written)
        << "'; log through radial_host.log, and give every child you start its own stdout and "
           "stderr (pipes or /dev/null)";
}

} // namespace radial::conformance
