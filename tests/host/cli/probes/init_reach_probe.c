/* tests/host/cli/probes/init_reach_probe.c — run inside a box by radiald_box_isolation_live_test:
 * tries to reach the box's PID 1 (radial-init) as a hostile command would, and says what each
 * attempt gave. A successful PTRACE_ATTACH leaves PID 1 stopped, and so its deadline, for as long
 * as this process lives (it then sleeps). Static, so it runs in any image. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <unistd.h>

int main(void) {
    long attached = ptrace(PTRACE_ATTACH, 1, NULL, NULL);
    printf("attach: %s\n", attached == 0 ? "ok" : strerror(errno));
    int fd = open("/proc/1/environ", O_RDONLY | O_CLOEXEC);
    printf("environ: %s\n", fd >= 0 ? "readable" : strerror(errno));
    fflush(stdout);
    if (attached == 0) sleep(600); /* PID 1 stays stopped while this tracer lives */
    return 0;
}
