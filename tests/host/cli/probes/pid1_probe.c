/* tests/host/cli/probes/pid1_probe.c — run inside a session's box by radiald_session_live_test:
 * what a hostile command of the box's uid can do to its PID 1 (radial-init) besides ptrace, and
 * says what each attempt gave on stdout. Static, so it runs in any image.
 *
 *   pid1_probe queue-term    queue a SIGTERM to PID 1 claiming sender pid 0 (rt_sigqueueinfo),
 *                            as the engine's stop arrives
 *   pid1_probe lower-nofile N  lower PID 1's open-file limit to N: 0, so it cannot open /proc;
 *                            5, so it can list /proc but open no process's entry in it */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char** argv) {
    if (argc < 2) return 2;
    if (strcmp(argv[1], "queue-term") == 0) {
        siginfo_t info;
        memset(&info, 0, sizeof info);
        info.si_signo = SIGTERM;
        info.si_code = SI_QUEUE;
        info.si_pid = 0;
        info.si_uid = getuid();
        long rc = syscall(SYS_rt_sigqueueinfo, 1, SIGTERM, &info);
        printf("queued: %s\n", rc == 0 ? "ok" : strerror(errno));
        return 0;
    }
    if (strcmp(argv[1], "lower-nofile") == 0 && argc == 3) {
        const rlim_t n = (rlim_t)atol(argv[2]);
        const struct rlimit none = {n, n};
        printf("lowered: %s\n",
               prlimit(1, RLIMIT_NOFILE, &none, NULL) == 0 ? "ok" : strerror(errno));
        return 0;
    }
    return 2;
}
