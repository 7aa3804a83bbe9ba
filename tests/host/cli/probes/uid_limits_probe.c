/* tests/host/cli/probes/uid_limits_probe.c — what a process can take or reach through the uid it
 * runs as, for radiald_box_isolation_live_test. Static, so it runs in any box and on the host.
 *
 *   uid_limits_probe inotify N REPORT
 *       makes up to N inotify instances (the kernel allows fs.inotify.max_user_instances per uid)
 *       and writes "made=K" and why it stopped to REPORT (whole, by rename); then holds them until
 *       REPORT.release exists (polled, at most 600 s).
 *   uid_limits_probe environ PID...
 *       prints its effective uid, then for each PID whether /proc/PID/environ could be read. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

static int inotify_probe(long n, const char* report_path) {
    long made = 0;
    int err = 0;
    while (made < n) {
        if (inotify_init1(IN_CLOEXEC) < 0) {
            err = errno;
            break;
        }
        ++made;
    }
    char tmp[4096], release[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", report_path);
    snprintf(release, sizeof release, "%s.release", report_path);
    FILE* report = fopen(tmp, "w");
    if (report == NULL) return 3;
    fprintf(report, "made=%ld stopped=%s\n", made, err ? strerror(err) : "none");
    if (fclose(report) != 0 || rename(tmp, report_path) != 0) return 4;
    for (int i = 0; i < 6000 && access(release, F_OK) != 0; ++i) usleep(100000);
    return 0;
}

static int environ_probe(int argc, char** argv) {
    printf("euid=%u\n", (unsigned)geteuid());
    for (int i = 2; i < argc; ++i) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%s/environ", argv[i]);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        char buf[1];
        if (fd >= 0 && read(fd, buf, 1) >= 0)
            printf("%s: readable\n", argv[i]);
        else
            printf("%s: %s\n", argv[i], strerror(errno));
        if (fd >= 0) close(fd);
    }
    return 0;
}

int main(int argc, char** argv) {
    if (argc == 4 && strcmp(argv[1], "inotify") == 0) return inotify_probe(atol(argv[2]), argv[3]);
    if (argc >= 3 && strcmp(argv[1], "environ") == 0) return environ_probe(argc, argv);
    return 2;
}
