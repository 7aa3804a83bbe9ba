/* plugins/box-init/radial_init.c — the box's PID 1: runs the turn's command, reaps every child,
 * forwards signals to the command, and ends the box at the turn's deadline by itself, so a box
 * never outlives its timeout by more than the grace even when no radiald is left to kill it.
 *
 *   radial-init [--escape-output] [--env-from-stdin [--say-ready]] TIMEOUT_MS GRACE_MS -- ARGV...
 *   radial-init --session IDLE_MS MAX_MS GRACE_MS      (a session's PID 1: session_idle.h)
 *   radial-init --sweep                                (after each session turn: session_idle.h)
 *
 * TIMEOUT_MS 0 means no deadline. At the deadline every process of the box gets SIGTERM; those
 * still there GRACE_MS later get SIGKILL, and radial-init exits 124 (as timeout(1)); PID 1 ending
 * ends everything else in the box's pid namespace. When the command ends first, radial-init exits
 * with its status (128 + signal when a signal ended it) after killing what it left behind.
 *
 * --escape-output (the swarm runtime, docs/design.md §13.11): the command's stdout and stderr are
 * pipes that radial-init copies to its own, each byte as it is except '%' and '\n', written as
 * "%25" and "%0A", with a '\n' after each piece read (at most every 16000 bytes written). A log
 * driver that keeps one record per line then keeps one per piece — a few thousand for 64 MiB of
 * short lines instead of millions — and the reader gets back every byte, a newline ending a long
 * line and bytes that are not text included. radial-init's own messages go the same way. What
 * the command left in the pipes is copied before radial-init exits.
 *
 * --env-from-stdin (the docker runtime's secret variables, docs/design.md §13.8): before it runs
 * the command, radial-init reads "radial-env <bytes>\n" and then <bytes> bytes of NAME=VALUE
 * entries, each ending in a NUL, from its stdin (the attach stream: nothing the engine keeps on
 * disk) and adds them to the command's environment; the command's stdin is /dev/null. Stdin that
 * ends, or says anything else, or the deadline passing first, ends radial-init with 125 (124 for
 * the deadline) before any command runs.
 *
 * --say-ready (an exec in a session's box, with --env-from-stdin): before it reads the block,
 * radial-init writes "radial-init: ready\n" to its stdout, once it is undumpable and has ended
 * what earlier turns left in the box, and the runtime writes the secrets only once it read that
 * line. Until the prctl a process of the box (the same uid) could open /proc/<pid>/fd/0, the
 * exec's stdin, and read what arrives there later: no such process is left when the line is said.
 *
 * Out of the command's reach: radial-init makes itself not dumpable before anything else, so a
 * process of the box — the same uid — can neither ptrace it nor read its /proc files (its
 * environment holds the secret variables). An exec's radial-init (not PID 1) can still be sent
 * SIGSTOP by its command, which would hold the deadline still: the session box's PID 1 kills an
 * exec's process it finds stopped (session_idle.h). The command
 * it execs is dumpable again, as any program. The command can make no setuid or setgid file
 * (no_setid_files.h).
 *
 * Why PID 1: the kernel delivers no signal to a pid namespace's init from inside the namespace
 * unless the init handles it, and never SIGKILL or SIGSTOP, so a workload — which runs as the same
 * non-root user — cannot kill its own deadline. Linked statically: it runs in any image.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "egress_forward.h"
#include "no_setid_files.h"
#include "session_idle.h"

enum { kReadSize = 65536, kPieceLimit = 16000 };

static int g_escape = 0;             /* --escape-output */
static int g_pipe[3] = {-1, -1, -1}; /* [1], [2]: read ends of the command's stdout, stderr */

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int parse_ms(const char* text, long long* out) {
    char* end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < 0) return -1;
    *out = v;
    return 0;
}

static void write_all(int fd, const char* p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return; /* nobody reads: the output is lost, the box still ends on time */
        p += w;
        n -= (size_t)w;
    }
}

/* Writes `n` bytes to `fd`, escaped as the header says when --escape-output is on. */
static void emit(int fd, const char* p, size_t n) {
    if (!g_escape) {
        write_all(fd, p, n);
        return;
    }
    static char out[kPieceLimit + 8];
    size_t used = 0;
    for (size_t i = 0; i < n; ++i) {
        unsigned char c = (unsigned char)p[i];
        if (c == '%' || c == '\n') {
            out[used++] = '%';
            out[used++] = c == '%' ? '2' : '0';
            out[used++] = c == '%' ? '5' : 'A';
        } else {
            out[used++] = (char)c;
        }
        if (used >= kPieceLimit) {
            out[used++] = '\n';
            write_all(fd, out, used);
            used = 0;
        }
    }
    if (used > 0) {
        out[used++] = '\n';
        write_all(fd, out, used);
    }
}

static void say(const char* message) { emit(STDERR_FILENO, message, strlen(message)); }

/* say(), only when stderr has room for it now (a pipe that polls writable takes PIPE_BUF bytes
 * whole): at the deadline a full pipe nobody drains (the host gone) must not hold the kill. */
static void say_if_room(const char* message) {
    struct pollfd p = {STDERR_FILENO, POLLOUT, 0};
    if (poll(&p, 1, 0) == 1 && (p.revents & POLLOUT) != 0) say(message);
}

/* Copies what one pipe has now (or, `to_end`, until its writers are gone); closes it at its end. */
static void copy_pipe(int stream, int to_end) {
    static char buf[kReadSize];
    while (g_pipe[stream] >= 0) {
        ssize_t n = read(g_pipe[stream], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN && !to_end) return;
        if (n < 0 && errno == EAGAIN) {
            struct pollfd p = {g_pipe[stream], POLLIN, 0};
            poll(&p, 1, -1);
            continue;
        }
        if (n <= 0) {
            close(g_pipe[stream]);
            g_pipe[stream] = -1;
            return;
        }
        emit(stream, buf, (size_t)n);
        if (!to_end) return; /* one piece per wake: the signals are not kept waiting */
    }
}

/* Reads exactly `n` bytes from stdin before `deadline` (monotonic ms; < 0: none). Returns 0, -1
 * when stdin ended or failed, -2 when the deadline passed. */
static int read_stdin(char* p, size_t n, long long deadline) {
    while (n > 0) {
        struct pollfd fd = {STDIN_FILENO, POLLIN, 0};
        int timeout = -1;
        if (deadline >= 0) {
            long long left = deadline - now_ms();
            if (left <= 0) return -2;
            timeout = left > INT_MAX ? INT_MAX : (int)left;
        }
        int ready = poll(&fd, 1, timeout);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) return -1;
        if (ready == 0) return -2;
        ssize_t got = read(STDIN_FILENO, p, n);
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (got <= 0) return -1;
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

/* --env-from-stdin: the secret variables, into this process's environment (the command inherits
 * it), then /dev/null as stdin. Returns 0, or the exit status to end with (125, 124). Says what
 * went wrong, never a value. */
static int env_from_stdin(long long deadline) {
    char header[32];
    size_t used = 0;
    int r = 0;
    while (used < sizeof header - 1) {
        if ((r = read_stdin(header + used, 1, deadline)) != 0) break;
        if (header[used++] == '\n') break;
    }
    header[used] = '\0';
    char* end = NULL;
    unsigned long long size = 0;
    if (r == 0 && strncmp(header, "radial-env ", 11) == 0) size = strtoull(header + 11, &end, 10);
    if (r == -2) {
        say("radial-init: the turn's timeout passed before its secret variables arrived\n");
        return 124;
    }
    if (r != 0 || end == NULL || *end != '\n' || size == 0 || size > (64ull << 20)) {
        say("radial-init: the secret variables did not arrive on stdin as 'radial-env <bytes>'\n");
        return 125;
    }
    char* block = malloc((size_t)size + 1);
    if (block == NULL) {
        say("radial-init: no memory for the secret variables\n");
        return 125;
    }
    if ((r = read_stdin(block, (size_t)size, deadline)) != 0) {
        say(r == -2 ? "radial-init: the turn's timeout passed before its secret variables arrived\n"
                    : "radial-init: stdin ended inside the secret variables\n");
        return r == -2 ? 124 : 125;
    }
    block[size] = '\0';
    /* Each entry stays in `block`, which putenv keeps: the values are copied nowhere else. */
    for (char* entry = block; entry < block + size; entry += strlen(entry) + 1) {
        char* eq = strchr(entry, '=');
        if (eq == NULL || eq == entry || putenv(entry) != 0) {
            say("radial-init: a secret variable without NAME= arrived on stdin\n");
            return 125;
        }
    }
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || dup2(null, STDIN_FILENO) < 0) {
        say("radial-init: cannot open /dev/null as the command's stdin\n");
        return 125;
    }
    close(null);
    return 0;
}

/* Reaps every child that has ended; records the command's status when it is among them. */
static void reap(pid_t command, int* command_done, int* command_status) {
    for (;;) {
        int status = 0;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0) return;
        if (pid == command) {
            *command_done = 1;
            *command_status = status;
        }
    }
}

/* Waits until `until` (monotonic ms; < 0: no limit) for a signal or, with --escape-output, for
 * output, which it copies. Returns the signal, or 0. */
static int wait_event(int sigfd, long long until) {
    struct pollfd fds[3] = {{sigfd, POLLIN, 0}, {g_pipe[1], POLLIN, 0}, {g_pipe[2], POLLIN, 0}};
    int timeout = -1;
    if (until >= 0) {
        long long left = until - now_ms();
        if (left <= 0) return 0;
        timeout = left > 1000000000 ? 1000000000 : (int)left;
    }
    if (poll(fds, 3, timeout) <= 0) return 0;
    for (int s = 1; s <= 2; ++s)
        if (fds[s].fd >= 0 && fds[s].revents != 0) copy_pipe(s, 0);
    if (fds[0].revents & POLLIN) {
        struct signalfd_siginfo info;
        if (read(sigfd, &info, sizeof info) == (ssize_t)sizeof info) return (int)info.ssi_signo;
    }
    return 0;
}

/* The command's stdout and stderr as pipes to radial-init (--escape-output). */
static int make_pipes(int child_end[3]) {
    for (int s = 1; s <= 2; ++s) {
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) != 0) return -1;
        g_pipe[s] = fds[0];
        child_end[s] = fds[1];
        fcntl(fds[0], F_SETFL, O_NONBLOCK);
    }
    return 0;
}

int main(int argc, char** argv) {
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
        say("radial-init: cannot make itself undumpable\n");
        return 125;
    }
    long long timeout_ms = 0, grace_ms = 0;
    if (argc == 2 && strcmp(argv[1], "--sweep") == 0) return run_sweep();
    if (argc == 5 && strcmp(argv[1], "--session") == 0) {
        long long idle_ms = 0, max_ms = 0;
        if (parse_ms(argv[2], &idle_ms) != 0 || parse_ms(argv[3], &max_ms) != 0 ||
            parse_ms(argv[4], &grace_ms) != 0) {
            say("radial-init: usage: radial-init --session IDLE_MS MAX_MS GRACE_MS\n");
            return 125;
        }
        return run_session(idle_ms, max_ms, grace_ms);
    }
    int first = 1, env_from_stdin_wanted = 0, say_ready = 0;
    for (; first < argc && strncmp(argv[first], "--", 2) == 0 && argv[first][2] != '\0'; ++first) {
        if (strcmp(argv[first], "--escape-output") == 0)
            g_escape = 1;
        else if (strcmp(argv[first], "--env-from-stdin") == 0)
            env_from_stdin_wanted = 1;
        else if (strcmp(argv[first], "--say-ready") == 0)
            say_ready = 1;
        else
            break;
    }
    if (argc < first + 4 || parse_ms(argv[first], &timeout_ms) != 0 ||
        parse_ms(argv[first + 1], &grace_ms) != 0 || strcmp(argv[first + 2], "--") != 0 ||
        (say_ready && !env_from_stdin_wanted)) {
        say("radial-init: usage: radial-init [--escape-output] [--env-from-stdin [--say-ready]] "
            "TIMEOUT_MS GRACE_MS -- ARGV...\n");
        return 125;
    }
    char** command_argv = argv + first + 3;
    /* Not PID 1: an exec in a session's box. What still runs there is left from a turn whose host
     * was killed; it ends before this turn's command (and its secrets) exist. */
    if (getpid() != 1 && end_the_others(10000) != 0) {
        say("radial-init: processes left in the session's box by an earlier turn could not be "
            "ended; the command was not run\n");
        return 125;
    }
    /* An exec's radial-init adopts what its command orphans (a server that forks into the
     * background), as PID 1 does in a box of its own: the command's processes stay its own, reaped
     * here and killed at its end. Otherwise they would come to the box's PID 1, which takes a
     * process that comes to it for one whose radial-init was killed and ends it (session_idle.h).
     * A kernel without child subreapers (gVisor's) refuses it; the box's PID 1 finds the same
     * refusal and then ends what comes to it only once no exec runs. */
    if (getpid() != 1) (void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    const long long start = now_ms();
    if (env_from_stdin_wanted) {
        static const char ready[] = "radial-init: ready\n";
        if (say_ready) emit(STDOUT_FILENO, ready, sizeof ready - 1);
        int status = env_from_stdin(timeout_ms > 0 ? start + timeout_ms : -1);
        if (status != 0) return status;
    }

    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &all, NULL);
    int sigfd = signalfd(-1, &all, SFD_CLOEXEC);
    int child_end[3] = {-1, -1, -1};
    if (sigfd < 0 || (g_escape && make_pipes(child_end) != 0)) {
        say("radial-init: cannot set up signals or output pipes\n");
        return 125;
    }

    /* The egress endpoint listens before the command exists, so its first connection queues. */
    if (start_egress_forwarder(sigfd) < 0) {
        say("radial-init: the egress endpoint could not be started; the command was not run\n");
        return 125;
    }
    pid_t command = fork();
    if (command < 0) {
        say("radial-init: fork failed\n");
        return 125;
    }
    if (command == 0) {
        /* The command gets default dispositions and an empty mask, as if it were PID 1's peer. */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, NULL);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (g_escape &&
            (dup2(child_end[1], STDOUT_FILENO) < 0 || dup2(child_end[2], STDERR_FILENO) < 0)) {
            say("radial-init: cannot give the command its output pipes\n");
            _exit(126);
        }
        g_escape = 0; /* from here on stderr is the pipe: radial-init's reader escapes it */
        /* No core dump of the command or anything it starts: one holds its environment, the
         * turn's secrets, and lands in its working directory (the workspace, the host's) or the
         * host's crash collector (docs/design.md §6.3). 1, not 0: the kernel pipes no core to a
         * collector for a limit of 1, and writes no file under one page; the hard limit keeps a
         * command without CAP_SYS_RESOURCE from raising it. */
        const struct rlimit no_core = {1, 1};
        if (setrlimit(RLIMIT_CORE, &no_core) != 0) {
            say("radial-init: cannot switch core dumps off for the command; the command was not "
                "run\n");
            _exit(125);
        }
        if (forbid_setid_files() != 0) {
            char message[256];
            snprintf(message, sizeof message,
                     "radial-init: cannot install the filter that keeps the command from making "
                     "setuid files (seccomp): %s; the command was not run\n",
                     strerror(errno));
            say(message);
            _exit(125);
        }
        execvp(command_argv[0], command_argv);
        int err = errno;
        char message[512];
        snprintf(message, sizeof message, "radial-init: cannot run '%s': %s\n", command_argv[0],
                 strerror(err));
        say(message);
        _exit(err == ENOENT ? 127 : 126);
    }
    for (int s = 1; s <= 2; ++s)
        if (child_end[s] >= 0) close(child_end[s]);

    int command_done = 0, command_status = 0, timed_out = 0;
    long long deadline = timeout_ms > 0 ? start + timeout_ms : -1;
    long long kill_at = -1;
    while (!command_done) {
        int sig = wait_event(sigfd, timed_out ? kill_at : deadline);
        if (sig == SIGCHLD) {
            reap(command, &command_done, &command_status);
        } else if (sig > 0) {
            if (!timed_out) kill(command, sig); /* forwarded: the command decides what it means */
        } else if (!timed_out && deadline >= 0 && now_ms() >= deadline) {
            /* The signal and the grace before the message, which is left out when the output
             * pipe is full: nobody may drain it (the host gone), and the deadline must hold. */
            kill(-1, SIGTERM);
            timed_out = 1;
            kill_at = now_ms() + grace_ms;
            say_if_room(getpid() == 1
                            ? "radial-init: the turn's timeout passed; ending the box\n"
                            : "radial-init: the turn's timeout passed; ending its command\n");
        } else if (timed_out && now_ms() >= kill_at) {
            break;
        }
    }
    /* Whatever the command left behind ends with the box; then its last output is copied (every
     * writer is gone, so each pipe reaches its end). */
    kill(-1, SIGKILL);
    while (waitpid(-1, NULL, 0) > 0 || errno == EINTR) {
    }
    copy_pipe(1, 1);
    copy_pipe(2, 1);
    if (timed_out) return 124;
    if (WIFEXITED(command_status)) return WEXITSTATUS(command_status);
    if (WIFSIGNALED(command_status)) return 128 + WTERMSIG(command_status);
    return 125;
}
