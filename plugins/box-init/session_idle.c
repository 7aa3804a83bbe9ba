/* plugins/box-init/session_idle.c — see session_idle.h. */
#define _GNU_SOURCE
#include "session_idle.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long monotonic_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void say(const char* message) {
    size_t n = strlen(message);
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, message, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        message += w;
        n -= (size_t)w;
    }
}

/* Set when /proc, or a process's entry in it, could not be opened for want of descriptors: PID 1
 * can no longer see the box's processes. A box process of the same uid can bring that about
 * (prlimit on PID 1's open files, to 0 or to just what /proc's listing takes), and PID 1 blind
 * would keep the session busy and its orphans alive for ever: it ends the box instead, once that
 * lasted a second (a host short of descriptors for a moment ends no session). */
static int g_blind = 0;

static DIR* open_proc(void) {
    DIR* proc = opendir("/proc");
    if (proc == NULL) g_blind = 1;
    return proc;
}

/* Whether a process exists in the box's pid namespace but PID 1 and `self` (0: none). */
static int others_than(pid_t self) {
    DIR* proc = open_proc();
    if (proc == NULL) return 1; /* cannot tell: never idle */
    int found = 0;
    const struct dirent* e;
    while (!found && (e = readdir(proc)) != NULL)
        if (e->d_name[0] >= '1' && e->d_name[0] <= '9' && strcmp(e->d_name, "1") != 0 &&
            atol(e->d_name) != (long)self)
            found = 1;
    closedir(proc);
    return found;
}

/* Whether a process other than this one (PID 1 of the box's pid namespace) exists. */
static int others_running(void) { return others_than(0); }

/* Reaps every child that ended; returns whether a child of this process still runs. */
static int reap_all(void) {
    pid_t p;
    while ((p = waitpid(-1, NULL, WNOHANG)) > 0) {
    }
    return p == 0;
}

/* The parent of `pid` in the box's pid namespace (the fourth field of /proc/PID/stat, after the
 * command name, which may hold any byte but ends at the last ')'), or -1 when it is gone; its
 * state letter (R, S, T, Z, …) into `*state_out` when given. */
static long parent_and_state(long pid, char* state_out, char* comm_out, size_t comm_size) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && (errno == EMFILE || errno == ENFILE)) g_blind = 1; /* not a process gone */
    if (fd < 0) return -1;
    char buf[512];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = '\0';
    const char* end = strrchr(buf, ')');
    char state = 0;
    long ppid = -1;
    if (end == NULL || sscanf(end + 1, " %c %ld", &state, &ppid) != 2) return -1;
    if (state_out != NULL) *state_out = state;
    const char* open_paren = strchr(buf, '(');
    if (comm_out != NULL && comm_size > 0 && open_paren != NULL && open_paren < end) {
        size_t n = (size_t)(end - open_paren - 1);
        if (n >= comm_size) n = comm_size - 1;
        memcpy(comm_out, open_paren + 1, n);
        comm_out[n] = '\0';
    }
    return ppid;
}

static long parent_of(long pid) { return parent_and_state(pid, NULL, NULL, 0); }

/* Kills every process descended from this PID 1 and returns how many it signalled. An exec's
 * processes descend from the exec's radial-init, whose parent is outside the box (0 here); a
 * process comes to PID 1 only when the radial-init above it ended without ending it, which its
 * normal end never does (it kills what its command left): its command killed it. What it left
 * must not outlive it: that radial-init held the turn's deadline, and with no host left nothing
 * else would end them, and the box, never idle, would run on (docs/design.md §13.12). An exec
 * running beside them is not touched, nor the sweep that ends them too. */
static int end_orphans(void) {
    DIR* proc = open_proc();
    if (proc == NULL) return 0;
    int signalled = 0;
    const struct dirent* e;
    while ((e = readdir(proc)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
        const long pid = atol(e->d_name);
        if (pid == 1) continue;
        long up = parent_of(pid);
        for (int depth = 0; up > 1 && depth < 4096; ++depth) up = parent_of(up);
        if (up == 1 && kill((pid_t)pid, SIGKILL) == 0) ++signalled;
    }
    closedir(proc);
    return signalled;
}

/* Whether a process that entered the box from outside runs, besides PID 1: an exec's
 * radial-init, the sweep, an operator's `docker exec`. Its parent is outside the box's pid
 * namespace (0 here); a process started inside the box cannot get that parent. One found stopped
 * (an exec's radial-init) is killed first: nothing but its own command (the same uid) stops one,
 * which would otherwise hold its turn's deadline, and what it adopted, still forever with no
 * radiald left (docs/design.md §13.12). A zombie does not run. */
static int entered_from_outside(void) {
    static char own_comm[32] = "";
    if (own_comm[0] == '\0') parent_and_state(1, NULL, own_comm, sizeof own_comm);
    DIR* proc = open_proc();
    if (proc == NULL) return 1; /* cannot tell: as if one ran */
    int found = 0;
    const struct dirent* e;
    while ((e = readdir(proc)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9' || strcmp(e->d_name, "1") == 0) continue;
        char state = 0, comm[32] = "";
        if (parent_and_state(atol(e->d_name), &state, comm, sizeof comm) != 0) continue;
        /* An exec's radial-init only (the program this PID 1 runs, whatever the path it is bound
         * at): an operator's `docker exec -it vim` stopped by its own Ctrl-Z is theirs to resume.
         * No process started in the box has parent 0, so the name is the exec's own. */
        if (state == 'T' && own_comm[0] != '\0' && strcmp(comm, own_comm) == 0 &&
            kill((pid_t)atol(e->d_name), SIGKILL) == 0) {
            say("radial-init: an exec's process was found stopped (its command stopped it); it "
                "was killed\n");
            continue;
        }
        if (state != 'Z' && state != 'X') found = 1;
    }
    closedir(proc);
    return found;
}

/* Whether a process other than PID 1 may become a child subreaper, as an exec's radial-init does
 * to adopt its command's orphans (radial_init.c), asked of a child: gVisor allows it to PID 1
 * alone. Where it may not, a background process of a live turn comes to PID 1 too, and is left
 * alone while an exec runs. */
static int subreapers_allowed(void) {
    pid_t probe = fork();
    if (probe < 0) return 0;
    if (probe == 0) _exit(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 ? 0 : 1);
    int status = 0;
    while (waitpid(probe, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int run_session(long long idle_ms, long long max_ms, long long grace_ms) {
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    int sigfd = signalfd(-1, &all, SFD_CLOEXEC);
    if (sigfd < 0) {
        say("radial-init: cannot set up signals\n");
        return 125;
    }
    const long long start = monotonic_ms();
    long long last_busy = start;
    int status = 0;
    const int execs_adopt = subreapers_allowed();
    int blind_rounds = 0; /* looks in a row that could not see the box's processes */
    for (;;) {
        /* Where execs adopt their orphans, what comes here was left by a killed radial-init. Where
         * they cannot (gVisor), a live turn's background process comes here too: what comes is
         * ended only once no exec runs, when it can be no live turn's. */
        const int outside = entered_from_outside(); /* every look: a stopped exec is killed */
        if (reap_all() && (execs_adopt || !outside) && end_orphans() > 0)
            say("radial-init: processes an exec left after its radial-init ended were ended\n");
        const long long now = monotonic_ms();
        if (others_running()) last_busy = now;
        blind_rounds = g_blind ? blind_rounds + 1 : 0;
        g_blind = 0;
        if (blind_rounds >= 5) {
            say("radial-init: the box's processes cannot be looked at any more (/proc cannot be "
                "opened: a process of the box may have lowered PID 1's limits); ending the box\n");
            status = 125;
            break;
        }
        if (max_ms > 0 && now - start >= max_ms) {
            say("radial-init: the session's maximum lifetime passed; ending the box\n");
            status = 124;
            break;
        }
        if (idle_ms > 0 && now - last_busy >= idle_ms) {
            say("radial-init: the session was idle for its idle timeout; ending the box\n");
            break;
        }
        /* Looked at every 200 ms: an exec that starts and ends between two looks is missed, so
         * the idle clock may start up to that much early. */
        struct pollfd p = {sigfd, POLLIN, 0};
        if (poll(&p, 1, 200) > 0) {
            struct signalfd_siginfo info;
            /* The engine stops the box: a kill(2) from outside the box's pid namespace, whose
             * sender has no pid here (0). The box's own processes may signal PID 1 too (the
             * same uid), and must not end the session that way: a queued signal can claim pid
             * 0 (rt_sigqueueinfo), and an F_SETSIG wake-up has none, but neither can be SI_USER,
             * which the kernel keeps for kill(2) and refuses to a process queueing to another. */
            if (read(sigfd, &info, sizeof info) == (ssize_t)sizeof info && info.ssi_pid == 0 &&
                info.ssi_code == SI_USER && (info.ssi_signo == SIGTERM || info.ssi_signo == SIGINT))
                break;
        }
    }
    kill(-1, SIGTERM);
    const long long kill_at = monotonic_ms() + grace_ms;
    while (others_running() && monotonic_ms() < kill_at) {
        reap_all();
        struct timespec pause = {0, 50 * 1000000};
        nanosleep(&pause, NULL);
    }
    kill(-1, SIGKILL);
    while (waitpid(-1, NULL, 0) > 0 || errno == EINTR) {
    }
    return status;
}

int end_the_others(long long wait_ms) {
    const pid_t self = getpid();
    if (!others_than(self)) return 0;
    kill(-1, SIGKILL); /* every process of the box's uid but PID 1 and this one */
    /* Gone once PID 1 has reaped them (it looks every 200 ms, or at its SIGCHLD). */
    for (long long waited = 0; waited < wait_ms && others_than(self); waited += 50) {
        struct timespec pause = {0, 50 * 1000000};
        nanosleep(&pause, NULL);
    }
    return others_than(self) ? 1 : 0;
}

int run_sweep(void) {
    if (end_the_others(10000) != 0) {
        say("radial-init: processes of the box were still there 10 s after the sweep\n");
        return 1;
    }
    return 0;
}
