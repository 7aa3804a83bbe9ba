// tests/plugins/support/child_process_test.cpp — the one owner of a runtime's CLI process
// (plugin-api/support/child_process.cpp): exact environment, exit status, reaping, descriptor
// hygiene, stdin from a given descriptor.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <radial/support/child_process.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <radial/plugin/runtime.hpp>
#include <string>

#include "../../support/host_processes.h"
#include "../../support/temp_dir.h"

namespace radial::plugin_support {
namespace {

// Reads both pipes to EOF and reaps the child.
struct Finished {
    std::string out, err;
    ExitStatus status;
};

Finished finish(ChildProcess& child) {
    Finished f;
    char buf[4096];
    while (child.stdout_pipe().valid() || child.stderr_pipe().valid()) {
        pollfd fds[2];
        nfds_t n = 0;
        internal::UniqueFd* owners[2];
        std::string* sinks[2];
        if (child.stdout_pipe().valid()) {
            owners[n] = &child.stdout_pipe(), sinks[n] = &f.out;
            fds[n++] = {child.stdout_pipe().get(), POLLIN, 0};
        }
        if (child.stderr_pipe().valid()) {
            owners[n] = &child.stderr_pipe(), sinks[n] = &f.err;
            fds[n++] = {child.stderr_pipe().get(), POLLIN, 0};
        }
        if (::poll(fds, n, 10'000) <= 0) break;
        for (nfds_t i = 0; i < n; ++i) {
            if (fds[i].revents == 0) continue;
            ssize_t r = ::read(owners[i]->get(), buf, sizeof buf);
            if (r > 0)
                sinks[i]->append(buf, static_cast<std::size_t>(r));
            else if (r == 0 || errno != EAGAIN)
                owners[i]->reset();
        }
    }
    auto status = child.reap_within(std::chrono::seconds(10));
    EXPECT_TRUE(status.has_value());
    if (status) f.status = *status;
    return f;
}

// How many descriptors of this process refer to the file `target` was taken of.
int descriptors_of(const struct stat& target) {
    int found = 0;
    std::error_code ec;
    for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
         it.increment(ec)) {
        struct stat st {};
        if (::stat(it->path().c_str(), &st) == 0 && st.st_ino == target.st_ino &&
            st.st_dev == target.st_dev)
            ++found;
    }
    return found;
}

// Expects starting `exe` with `options` to be refused with `code`, naming `says`.
void expect_refused(const std::filesystem::path& exe, ChildProcess::Options options,
                    std::int32_t code, const std::string& says,
                    const std::vector<std::string>& args = {}) {
    try {
        ChildProcess::start(exe, args, {}, std::move(options));
        ADD_FAILURE() << "started '" << exe.string() << "'; expected a refusal naming " << says;
    } catch (const radial::plugin::Error& e) {
        EXPECT_EQ(e.code(), code);
        EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
}

// The children of this process that are zombies (ended, not reaped).
int zombie_children() { return ::radial::test::zombie_children_of(::getpid()); }

TEST(plugin_support_child_process, EnvironmentIsExactlyTheGivenOneByteForByte) {
    ChildProcess::Env env = {
        {"A", "semi;colon;and:colon"},
        {"B", "line1\nline2 'single' \"double\" $HOME `tick` \\ h\xC3\xA9llo \xE2\x9C\x93"},
        {"EMPTY", ""}};
    ChildProcess child = ChildProcess::start("/usr/bin/env", {"-0"}, env);
    Finished f = finish(child);
    EXPECT_TRUE(f.status.exited);
    EXPECT_EQ(f.status.code, 0);
    std::string expected;
    for (const auto& [k, v] : env) expected += k + "=" + v + '\0';
    EXPECT_EQ(f.out, expected);
}

TEST(plugin_support_child_process, ArgumentsArriveUnchanged) {
    std::string tricky = "it's $x `y` \"z\" \\ \n \xE2\x9C\x93 *";
    ChildProcess child =
        ChildProcess::start("/bin/sh", {"-c", "printf '%s|' \"$@\"", "sh", tricky, "", "a b"}, {});
    Finished f = finish(child);
    EXPECT_EQ(f.out, tricky + "||a b|");
}

TEST(plugin_support_child_process, ExitCodeStdoutAndStderrAreKeptApart) {
    ChildProcess child =
        ChildProcess::start("/bin/sh", {"-c", "echo out; echo err >&2; exit 7"}, {});
    Finished f = finish(child);
    EXPECT_EQ(f.out, "out\n");
    EXPECT_EQ(f.err, "err\n");
    EXPECT_TRUE(f.status.exited);
    EXPECT_EQ(f.status.code, 7);
}

TEST(plugin_support_child_process, DeathBySignalIsReportedAsSignal) {
    ChildProcess child = ChildProcess::start("/bin/sh", {"-c", "kill -TERM $$"}, {});
    Finished f = finish(child);
    EXPECT_FALSE(f.status.exited);
    EXPECT_EQ(f.status.signal, SIGTERM);
}

TEST(plugin_support_child_process, StdinIsDevNull) {
    ChildProcess child = ChildProcess::start("/bin/sh", {"-c", "cat; echo end"}, {});
    Finished f = finish(child);
    EXPECT_EQ(f.out, "end\n");
}

TEST(plugin_support_child_process, StdinComesFromTheGivenDescriptorAndIsClosedInTheParent) {
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    internal::UniqueFd read_end(fds[0]), write_end(fds[1]);
    const std::string script = "echo 'from stdin: $x `y`'\n";
    ASSERT_EQ(::write(write_end.get(), script.data(), script.size()),
              static_cast<ssize_t>(script.size()));
    write_end.reset();
    struct stat pipe_stat {};
    ASSERT_EQ(::fstat(read_end.get(), &pipe_stat), 0);
    ChildProcess::Options options;
    options.stdin_source = std::move(read_end);
    ChildProcess child = ChildProcess::start("/bin/sh", {"-s"}, {}, std::move(options));
    // No descriptor of this process refers to the pipe any more: the parent's copy was closed.
    EXPECT_EQ(descriptors_of(pipe_stat), 0);
    Finished f = finish(child);
    EXPECT_EQ(f.out, "from stdin: $x `y`\n");
    EXPECT_EQ(f.status.code, 0);
}

TEST(plugin_support_child_process, MissingExecutableNamesTheGivenFix) {
    ChildProcess::Options options;
    options.missing_fix = "install sbx or set run.sandbox.binary";
    try {
        ChildProcess::start("/nonexistent/sbx", {"version"}, {}, std::move(options));
        FAIL() << "started a missing executable";
    } catch (const radial::plugin::Error& e) {
        std::string what = e.what();
        EXPECT_TRUE(what.starts_with("starting '/nonexistent/sbx': ")) << what;
        EXPECT_TRUE(what.ends_with("; install sbx or set run.sandbox.binary")) << what;
    }
    EXPECT_EQ(zombie_children(), 0);
}

// C-23: an argument over the kernel's per-string limit is E2BIG, reported as that with the sizes
// and the limit — never as "install the CLI", which would send the operator the wrong way.
TEST(plugin_support_child_process, C23_ArgumentsOverTheKernelsLimitSayE2bigNotInstall) {
    for (bool in_env : {false, true}) {
        ChildProcess::Options options;
        options.missing_fix = "install the docker CLI or set run.docker.binary";
        const std::string big(200 * 1024, 'x');
        try {
            ChildProcess::start("/bin/true", in_env ? std::vector<std::string>{} : std::vector{big},
                                in_env ? ChildProcess::Env{{"BIG", big}} : ChildProcess::Env{},
                                std::move(options));
            FAIL() << "started with a 200 KiB " << (in_env ? "variable" : "argument");
        } catch (const radial::plugin::Error& e) {
            std::string what = e.what();
            EXPECT_TRUE(what.starts_with("starting '/bin/true': ")) << what;
            EXPECT_NE(what.find("E2BIG"), std::string::npos) << what;
            EXPECT_NE(what.find("MAX_ARG_STRLEN"), std::string::npos) << what;
            EXPECT_EQ(what.find("install"), std::string::npos) << what;
        }
    }
    EXPECT_EQ(zombie_children(), 0);
}

TEST(plugin_support_child_process, PipesAreCloexecAndNonBlocking) {
    ChildProcess child = ChildProcess::start("/bin/sleep", {"5"}, {});
    for (int fd : {child.stdout_pipe().get(), child.stderr_pipe().get(), child.exit_fd()}) {
        ASSERT_GE(fd, 0);
        EXPECT_TRUE(::fcntl(fd, F_GETFD) & FD_CLOEXEC) << fd;
    }
    EXPECT_TRUE(::fcntl(child.stdout_pipe().get(), F_GETFL) & O_NONBLOCK);
    EXPECT_TRUE(::fcntl(child.stderr_pipe().get(), F_GETFL) & O_NONBLOCK);
}

TEST(plugin_support_child_process, ChildGetsItsOwnProcessGroupAndAnEmptySignalMask) {
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &block, &old), 0);
    ChildProcess child =
        ChildProcess::start("/bin/sh", {"-c", "grep SigBlk /proc/self/status; sleep 1"}, {});
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    EXPECT_EQ(::getpgid(child.pid()), child.pid());
    Finished f = finish(child);
    EXPECT_EQ(f.out, "SigBlk:\t0000000000000000\n");
}

TEST(plugin_support_child_process, DestructorKillsAndReaps) {
    pid_t pid;
    {
        ChildProcess child = ChildProcess::start("/bin/sleep", {"600"}, {});
        pid = child.pid();
        ASSERT_GT(pid, 0);
        EXPECT_FALSE(child.try_reap().has_value());
    }
    errno = 0;
    EXPECT_EQ(::kill(pid, 0), -1); // not even a zombie is left
    EXPECT_EQ(errno, ESRCH);
}

TEST(plugin_support_child_process, KillThenReapGivesSigkill) {
    ChildProcess child = ChildProcess::start("/bin/sleep", {"600"}, {});
    child.kill();
    auto status = child.reap_within(std::chrono::seconds(5));
    ASSERT_TRUE(status.has_value());
    EXPECT_EQ(status->signal, SIGKILL);
    child.kill(); // after reaping: a no-op, never a signal to a recycled pid
}

TEST(plugin_support_child_process, MissingExecutableIsUnavailableAndLeavesNoZombie) {
    expect_refused("/nonexistent/docker", {}, RADIAL_E_UNAVAILABLE, "'/nonexistent/docker'",
                   {"info"});
    EXPECT_EQ(zombie_children(), 0);
}

TEST(plugin_support_child_process, InheritedDescriptorsStayOpenAtTheirNumbersAndNoOtherDoes) {
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    internal::UniqueFd read_end(fds[0]), write_end(fds[1]);
    ASSERT_EQ(::write(write_end.get(), "passed\n", 7), 7);
    write_end.reset();
    // A descriptor of the parent that is not handed over: close-on-exec, so not in the child.
    internal::UniqueFd other(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(other.valid());
    const std::string passed = std::to_string(read_end.get());
    struct stat pipe_stat {};
    ASSERT_EQ(::fstat(read_end.get(), &pipe_stat), 0);
    ChildProcess::Options options;
    options.inherit.push_back(std::move(read_end));
    ChildProcess child =
        ChildProcess::start("/bin/sh",
                            {"-c", "cat <&" + passed + "; test -e /proc/self/fd/" +
                                       std::to_string(other.get()) + " && echo leaked; exit 0"},
                            {}, std::move(options));
    // The parent's copy was closed once the child started.
    EXPECT_EQ(descriptors_of(pipe_stat), 0);
    Finished f = finish(child);
    EXPECT_EQ(f.out, "passed\n") << f.err;
    EXPECT_EQ(f.status.code, 0);
}

TEST(plugin_support_child_process, TheChildStartsInTheGivenWorkingDirectory) {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("radial-child-workdir-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    ChildProcess::Options options;
    options.workdir = dir;
    ChildProcess child = ChildProcess::start("/bin/sh", {"-c", "pwd -P"}, {}, std::move(options));
    Finished f = finish(child);
    EXPECT_EQ(f.out, std::filesystem::canonical(dir).string() + "\n");
    std::filesystem::remove(dir);
}

TEST(plugin_support_child_process, AMissingWorkingDirectoryIsInvalidAndNamed) {
    ChildProcess::Options options;
    options.workdir = "/nonexistent/radial-workdir";
    expect_refused("/bin/true", std::move(options), RADIAL_E_INVALID,
                   "'/nonexistent/radial-workdir'");
    EXPECT_EQ(zombie_children(), 0);
}

TEST(plugin_support_child_process, FindProgramSearchesPathOnlyForABareName) {
    EXPECT_EQ(ChildProcess::find_program("sh").filename(), "sh");
    EXPECT_TRUE(ChildProcess::find_program("sh").is_absolute());
    EXPECT_EQ(ChildProcess::find_program("./not/searched"),
              std::filesystem::absolute("./not/searched")); // a path: not searched, made absolute
    EXPECT_TRUE(ChildProcess::find_program("radial-no-such-program-xyz").empty());
    EXPECT_TRUE(ChildProcess::find_program("").empty());
}

TEST(plugin_support_child_process, AnEnvironmentNameThatNoProgramCouldReadIsRefused) {
    for (const std::string& name :
         std::vector<std::string>{"X=Y", "", "=X", std::string("A\0B", 3)}) {
        try {
            ChildProcess::start("/bin/true", {}, {{name, "z"}});
            ADD_FAILURE() << "started with the environment name '" << name << "'";
        } catch (const radial::plugin::Error& e) {
            EXPECT_EQ(e.code(), RADIAL_E_INVALID);
            EXPECT_NE(std::string(e.what()).find("environment variable name"), std::string::npos)
                << e.what();
        }
    }
    EXPECT_EQ(zombie_children(), 0);
}

TEST(plugin_support_child_process, InheritRefusesAClosedOrATwiceNamedDescriptor) {
    auto refused = [](std::vector<internal::UniqueFd> fds, const std::string& says) {
        ChildProcess::Options options;
        options.inherit = std::move(fds);
        expect_refused("/bin/true", std::move(options), RADIAL_E_INVALID, says);
    };
    std::vector<internal::UniqueFd> closed;
    closed.emplace_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    closed.emplace_back();
    refused(std::move(closed), "is not open");
    // One descriptor owned twice: closed twice when the refused options go (the second close
    // fails harmlessly; this test's thread is the only one opening descriptors).
    const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    std::vector<internal::UniqueFd> twice;
    twice.emplace_back(fd);
    twice.emplace_back(fd);
    refused(std::move(twice), "named twice");
    EXPECT_EQ(zombie_children(), 0);
}

TEST(plugin_support_child_process, AStatusTheKernelLostIsNeitherAnExitNorASignal) {
    // SIGCHLD ignored: the kernel reaps the child itself and waitpid says ECHILD.
    struct sigaction ignore {
    }, before{};
    ignore.sa_handler = SIG_IGN;
    ASSERT_EQ(::sigaction(SIGCHLD, &ignore, &before), 0);
    ChildProcess child = ChildProcess::start("/bin/sh", {"-c", "exit 5"}, {});
    Finished f = finish(child);
    ::sigaction(SIGCHLD, &before, nullptr);
    EXPECT_FALSE(f.status.exited) << "a lost status reported as exit " << f.status.code;
    EXPECT_EQ(f.status.signal, 0);
}

TEST(plugin_support_child_process, APlantedProgramInTheWorkingDirectoryIsNeverRun) {
    // A relative PATH entry is this process's, not the child's working directory's.
    const auto root = std::filesystem::temp_directory_path() /
                      ("radial-child-path-" + std::to_string(::getpid()));
    std::filesystem::create_directories(root / "bin");
    std::filesystem::create_directories(root / "wd" / "bin");
    auto script = [](const std::filesystem::path& p, const std::string& says) {
        std::ofstream(p) << "#!/bin/sh\necho " << says << "\n";
        std::filesystem::permissions(p, std::filesystem::perms::owner_all);
    };
    script(root / "bin" / "radial-tool", "ours");
    script(root / "wd" / "bin" / "radial-tool", "planted");
    const auto cwd = std::filesystem::current_path();
    const char* old_path = std::getenv("PATH");
    const std::string saved = old_path != nullptr ? old_path : "";
    std::filesystem::current_path(root);
    ::setenv("PATH", "bin", 1);
    const std::filesystem::path found = ChildProcess::find_program("radial-tool");
    ::setenv("PATH", saved.c_str(), 1);
    std::filesystem::current_path(cwd);
    EXPECT_TRUE(found.is_absolute()) << found;
    ChildProcess::Options options;
    options.workdir = root / "wd";
    ChildProcess child = ChildProcess::start(found, {}, {}, std::move(options));
    EXPECT_EQ(finish(child).out, "ours\n");
    std::filesystem::remove_all(root);
}

TEST(plugin_support_child_process, AParentWithoutStandardStreamsStillGivesTheChildItsPipes) {
    // Run in a child of the test (its descriptors 0-2 closed there only): the pipes the library
    // makes would otherwise be 0-2 themselves.
    EXPECT_EXIT(
        {
            ::close(0);
            ::close(1);
            ::close(2);
            {
                // A standard stream's number cannot be handed over: it is the child's own.
                ChildProcess::Options options;
                options.inherit.emplace_back(::open("/dev/null", O_RDONLY)); // 0
                try {
                    ChildProcess::start("/bin/true", {}, {}, std::move(options));
                    ::_exit(13);
                } catch (const radial::plugin::Error& e) {
                    if (e.code() != RADIAL_E_INVALID) ::_exit(14);
                }
            }
            int fds[2];
            if (::pipe2(fds, O_CLOEXEC) != 0) ::_exit(10);
            // fds[0] and fds[1] are 0 and 1 now: hand the read end over, above 2.
            internal::UniqueFd given(::fcntl(fds[0], F_DUPFD_CLOEXEC, 3));
            ::close(fds[0]);
            if (::write(fds[1], "in\n", 3) != 3) ::_exit(11);
            ::close(fds[1]);
            const std::string n = std::to_string(given.get());
            ChildProcess::Options options;
            options.inherit.push_back(std::move(given));
            ChildProcess child =
                ChildProcess::start("/bin/sh", {"-c", "cat <&" + n + "; echo out; echo err >&2"},
                                    {}, std::move(options));
            Finished f = finish(child);
            ::_exit(f.out == "in\nout\n" && f.err == "err\n" && f.status.code == 0 ? 0 : 12);
        },
        ::testing::ExitedWithCode(0), "");
}

TEST(plugin_support_child_process, ARelativeProgramWithTheWorkingDirectoryGoneIsInvalidAndNamed) {
    // In a child of the test: its working directory is removed there only.
    test::TempDir dir("radial-gone-cwd");
    const std::string gone = dir / "cwd";
    ASSERT_EQ(::mkdir(gone.c_str(), 0700), 0);
    EXPECT_EXIT(
        {
            if (::chdir(gone.c_str()) != 0 || ::rmdir(gone.c_str()) != 0) ::_exit(10);
            try {
                ChildProcess::start("bin/sh", {"-c", "exit 0"}, {});
                ::_exit(11);
            } catch (const radial::plugin::Error& e) {
                const std::string what = e.what();
                ::_exit(e.code() == RADIAL_E_INVALID &&
                                what.find("starting 'bin/sh'") != std::string::npos &&
                                what.find("give its absolute path") != std::string::npos
                            ? 0
                            : 12);
            }
        },
        ::testing::ExitedWithCode(0), "");
}

} // namespace
} // namespace radial::plugin_support
