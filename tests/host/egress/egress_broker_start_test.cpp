// tests/host/egress/egress_broker_start_test.cpp — an egress broker (host/egress/egress_broker.h)
// that cannot start leaves nothing behind: no socket file in the turn's socket directory and no
// open descriptor. The failure is a real one: in a child process of its own, a seccomp filter
// makes the kernel refuse every new thread, as a host at its task limit does, so the broker's
// accepting thread is the step that fails, after the socket, its file and the wake pipe exist;
// or, for a broker that watches the operator's policy, the policy watch's thread, first.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "../../support/temp_dir.h"
#include "egress/egress_broker.h"

namespace radial::egress {
namespace {

#if defined(__x86_64__)

// clone3 answers ENOSYS (so glibc falls back to clone) and a clone that makes a thread answers
// EAGAIN, as at RLIMIT_NPROC or a full pids cgroup; a fork still works.
bool refuse_new_threads() {
    sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])), // the flags' low word
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EAGAIN),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog prog{static_cast<unsigned short>(sizeof f / sizeof f[0]), f};
    return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           ::syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0;
}

std::size_t open_descriptors() {
    std::size_t n = 0;
    // hermetic-ok: this process's own descriptor table, in a child of its own
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
    return n;
}

// Exit codes say which expectation failed: 2 no filter, 3 the broker started, 4 the wrong
// error, 5 its socket file stayed, 6 a descriptor stayed open. With `watched`, the broker watches
// an operator's policy, whose watcher thread is the first to be refused; without, the broker's
// socket, its file and wake pipe are made and its accepting thread is refused.
[[noreturn]] void start_a_broker_that_gets_no_thread(const std::string& dir, bool watched) {
    if (!refuse_new_threads()) test::exit_removing(dir, 2);
    const std::string socket_path = dir + "/egress.sock";
    const std::size_t before = open_descriptors();
    std::string error;
    try {
        EgressBrokerOptions o;
        o.unix_path = socket_path;
        if (watched) o.policy_path = dir + "/egress-policy.json";
        o.turn_id = "turn-1";
        EgressBroker broker(std::move(o));
        test::exit_removing(dir, 3);
    } catch (const std::exception& e) {
        error = e.what();
    }
    if (std::filesystem::exists(socket_path)) test::exit_removing(dir, 5);
    if (open_descriptors() != before) test::exit_removing(dir, 6);
    // Said as the broker's socket, or its policy watch, that got no thread, not as a bare errno.
    const std::string said = watched
                                 ? "watching the operator's policy in '" + dir + "'"
                                 : "egress socket '" + socket_path + "': no thread to accept on it";
    if (error.find(said) == std::string::npos) test::exit_removing(dir, 4);
    test::exit_removing(dir, 0);
}

TEST(EgressBrokerStart, ABrokerWithoutItsThreadLeavesNoSocketFileOrDescriptor) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    test::TempDir dir("radial-egress-start");
    EXPECT_EXIT(start_a_broker_that_gets_no_thread(dir.path(), false), ::testing::ExitedWithCode(0),
                "");
    EXPECT_EXIT(start_a_broker_that_gets_no_thread(dir.path(), true), ::testing::ExitedWithCode(0),
                "");
}

#else

TEST(EgressBrokerStart, ABrokerWithoutItsThreadLeavesNoSocketFileOrDescriptor) {
    GTEST_SKIP() << "the seccomp filter that refuses threads is written for x86_64";
}

#endif

} // namespace
} // namespace radial::egress
