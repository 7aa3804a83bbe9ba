/* plugins/docker/init/radial_init.c — the box's PID 1: runs the turn's command, reaps every
 * child, forwards signals to the command, and ends the box at the turn's deadline by itself, so a
 * box never outlives its timeout by more than the grace even when no radiald is left to kill it.
 *
 *   radial-init TIMEOUT_MS GRACE_MS -- ARGV...
 *
 * TIMEOUT_MS 0 means no deadline. At the deadline every process of the box gets SIGTERM; those
 * still there GRACE_MS later get SIGKILL, and radial-init exits 124 (as timeout(1)); PID 1 ending
 * ends everything else in the box's pid namespace. When the command ends first, radial-init exits
 * with its status (128 + signal when a signal ended it) after killing what it left behind.
 *
 * Why PID 1: the kernel delivers no signal to a pid namespace's init from inside the namespace
 * unless the init handles it, and never SIGKILL or SIGSTOP, so a workload — which runs as the same
 * non-root user — cannot kill its own deadline. Linked statically: it runs in any image.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* Waits for a signal until `deadline` (monotonic ms; < 0: none). Returns the signal, or 0. */
static int wait_signal(const sigset_t* set, long long deadline) {
    if (deadline < 0) {
        int sig = sigwaitinfo(set, NULL);
        return sig > 0 ? sig : 0;
    }
    long long left = deadline - now_ms();
    if (left <= 0) return 0;
    struct timespec ts = {(time_t)(left / 1000), (long)(left % 1000) * 1000000L};
    int sig = sigtimedwait(set, NULL, &ts);
    return sig > 0 ? sig : 0;
}

static void say(const char* message) {
    ssize_t n = write(STDERR_FILENO, message, strlen(message));
    (void)n;
}

int main(int argc, char** argv) {
    long long timeout_ms = 0, grace_ms = 0;
    if (argc < 5 || parse_ms(argv[1], &timeout_ms) != 0 || parse_ms(argv[2], &grace_ms) != 0 ||
        strcmp(argv[3], "--") != 0) {
        say("radial-init: usage: radial-init TIMEOUT_MS GRACE_MS -- ARGV...\n");
        return 125;
    }
    const long long start = now_ms();

    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &all, NULL);

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
        execvp(argv[4], argv + 4);
        int err = errno;
        char message[512];
        snprintf(message, sizeof message, "radial-init: cannot run '%s': %s\n", argv[4],
                 strerror(err));
        say(message);
        _exit(err == ENOENT ? 127 : 126);
    }

    int command_done = 0, command_status = 0;
    long long deadline = timeout_ms > 0 ? start + timeout_ms : -1;
    while (!command_done) {
        int sig = wait_signal(&all, deadline);
        if (sig == SIGCHLD) {
            reap(command, &command_done, &command_status);
        } else if (sig > 0) {
            kill(command, sig); /* forwarded: the command decides what a signal means */
        } else if (deadline >= 0 && now_ms() >= deadline) {
            say("radial-init: the turn's timeout passed; ending the box\n");
            kill(-1, SIGTERM);
            long long kill_at = now_ms() + grace_ms;
            while (!command_done) {
                int s = wait_signal(&all, kill_at);
                if (s == SIGCHLD) reap(command, &command_done, &command_status);
                if (s == 0 && now_ms() >= kill_at) break;
            }
            kill(-1, SIGKILL);
            return 124;
        }
    }
    /* Whatever the command left behind ends with the box. */
    kill(-1, SIGKILL);
    if (WIFEXITED(command_status)) return WEXITSTATUS(command_status);
    if (WIFSIGNALED(command_status)) return 128 + WTERMSIG(command_status);
    return 125;
}
