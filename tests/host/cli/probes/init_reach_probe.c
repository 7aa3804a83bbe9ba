/* tests/host/cli/probes/init_reach_probe.c — run inside a box by radiald_box_isolation_live_test:
 * tries to reach the box's PID 1 (radial-init) as a hostile command would, and says what each
 * attempt gave. A successful PTRACE_ATTACH leaves PID 1 stopped, and so its deadline, for as long
 * as this process lives (it then sleeps). The report goes to REPORT (written whole, by rename)
 * before that. Static, so it runs in any image.
 *
 *   init_reach_probe REPORT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <unistd.h>

int main(int argc, char** argv) {
    if (argc != 2) return 2;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    FILE* report = fopen(tmp, "w");
    if (report == NULL) return 3;
    long attached = ptrace(PTRACE_ATTACH, 1, NULL, NULL);
    fprintf(report, "attach: %s\n", attached == 0 ? "ok" : strerror(errno));
    int fd = open("/proc/1/environ", O_RDONLY | O_CLOEXEC);
    fprintf(report, "environ: %s\n", fd >= 0 ? "readable" : strerror(errno));
    if (fclose(report) != 0 || rename(tmp, argv[1]) != 0) return 4;
    if (attached == 0) sleep(600); /* PID 1 stays stopped while this tracer lives */
    return 0;
}
