/* tests/host/cli/probes/setid_probe.c — run inside a box by radiald_box_isolation_live_test: tries
 * every call that can make a setuid or setgid file in DIR and prints what each gave, then makes
 * and changes an ordinary file the same ways (which must work). Static, so it runs in any image.
 *
 *   setid_probe DIR */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#define SYS_fchmodat2_ 452

struct open_how_ {
    unsigned long long flags, mode, resolve;
};

static void say(const char* what, long rc) {
    printf("%s: %s\n", what, rc >= 0 ? "ok" : strerror(errno));
}

int main(int argc, char** argv) {
    if (argc != 2 || chdir(argv[1]) != 0) return 2;
    int fd = open("plain", O_CREAT | O_WRONLY | O_CLOEXEC, 0755);
    if (fd < 0) return 3;
    say("chmod 4755", chmod("plain", 04755));
    say("fchmod 2755", fchmod(fd, 02755));
    say("fchmodat 6755", fchmodat(AT_FDCWD, "plain", 06755, 0));
    say("fchmodat2 4755", syscall(SYS_fchmodat2_, AT_FDCWD, "plain", 04755, 0));
    say("open O_CREAT 4755", open("o", O_CREAT | O_WRONLY | O_CLOEXEC, 04755));
    say("openat O_CREAT 2755", openat(AT_FDCWD, "oa", O_CREAT | O_WRONLY | O_CLOEXEC, 02755));
    say("creat 6755", creat("c", 06755));
    say("mknod 4755", mknod("n", S_IFREG | 04755, 0));
    say("mknodat 2755", mknodat(AT_FDCWD, "na", S_IFREG | 02755, 0));
    struct open_how_ how = {O_CREAT | O_WRONLY | O_CLOEXEC, 0644, 0};
    say("openat2", syscall(SYS_openat2, AT_FDCWD, "o2", &how, sizeof how));
    /* What must keep working. */
    say("chmod 0700", chmod("plain", 0700));
    say("fchmod 0755", fchmod(fd, 0755));
    say("open O_CREAT 0644", open("ok", O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
    say("open O_RDONLY", open("plain", O_RDONLY | O_CLOEXEC));
    return 0;
}
