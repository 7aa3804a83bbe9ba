/* plugins/box-init/egress_forward.c — see egress_forward.h. One process accepts; one process per
 * connection hands it to the broker, or, where the runtime cannot pass descriptors, relays it with
 * poll(2). Everything here runs as the box user, and is as undumpable as
 * radial-init itself (fork keeps it). */
#define _GNU_SOURCE
#include "egress_forward.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

static void complain(const char* what, int err) {
    char message[256];
    int n = snprintf(message, sizeof message, "radial-init: egress endpoint: %s: %s\n", what,
                     strerror(err));
    if (n > 0) {
        ssize_t ignored = write(STDERR_FILENO, message, (size_t)n);
        (void)ignored;
    }
}

/* One direction's pipe: bytes move socket -> pipe -> socket with splice(2), never through this
 * process's memory. */
struct lane {
    int from, to, pipe_r, pipe_w;
    size_t queued; /* in the pipe, not yet written on */
    int open;
};

/* Moves what `from` has into the pipe and on to `to`; 0 once `from` ended (then `to` is half
 * closed), -1 when `to` cannot take it. */
static int pump_lane(struct lane* l) {
    ssize_t n = splice(l->from, NULL, l->pipe_w, NULL, 1 << 20, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 1;
    if (n <= 0) {
        shutdown(l->to, SHUT_WR);
        l->open = 0;
        return 0;
    }
    l->queued += (size_t)n;
    while (l->queued > 0) {
        ssize_t w = splice(l->pipe_r, NULL, l->to, NULL, l->queued, SPLICE_F_MOVE);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        l->queued -= (size_t)w;
    }
    return 1;
}

/* Copies what the broker still sends on `u` to the client `c`, `first` (a byte already read)
 * before it, until the broker closes. */
static void pass_answer(int u, int c, char first) {
    char buf[4096];
    buf[0] = first;
    size_t have = 1;
    for (;;) {
        size_t at = 0;
        while (at < have) {
            ssize_t w = write(c, buf + at, have - at);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return;
            at += (size_t)w;
        }
        ssize_t n;
        do n = read(u, buf, sizeof buf);
        while (n < 0 && errno == EINTR);
        if (n <= 0) break;
        have = (size_t)n;
    }
    shutdown(c, SHUT_WR);
}

/* Sends one byte `b`, with `fd` attached when it is not -1. */
static int send_byte(int u, char b, int fd) {
    struct iovec iov = {&b, 1};
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (fd >= 0) {
        msg.msg_control = control.buf;
        msg.msg_controllen = sizeof control.buf;
        struct cmsghdr* cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof fd);
    }
    ssize_t sent;
    do sent = sendmsg(u, &msg, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    return sent == 1 ? 0 : -1;
}

/* Offers the broker the box's connection `c` itself (docs/design.md §9.7, "the hand-over"): one
 * 0x00 byte carrying the descriptor. 1 when the broker kept it (it serves the connection now) or
 * answered it itself, 0 when this process must relay it (the runtime could not pass a
 * descriptor: gVisor), -1 when the broker is gone. */
static int hand_over(int u, int c) {
    char marker = 0;
    ssize_t sent = send_byte(u, marker, c) == 0 ? 1 : -1;
    if (sent != 1) { /* no descriptor can go (gVisor): the byte alone, so the broker knows */
        do sent = write(u, &marker, 1);
        while (sent < 0 && errno == EINTR);
        /* Not even that: the broker may have answered and closed before reading (a 503 at its
         * cap of connections); what it wrote is still there to read. */
    }
    char answer = 0;
    ssize_t got;
    do got = read(u, &answer, 1);
    while (got < 0 && errno == EINTR);
    if (got != 1) return -1;
    if (answer == 'K') return 1;
    if (answer == 'S') return 0;
    /* Neither: the broker refused the connection before the hand-over (its cap of connections,
     * no thread for it) and this is its answer's first byte; the client gets all of it. */
    pass_answer(u, c, answer);
    return 1;
}

/* Both directions until both ended; a half-close is passed on. */
static void relay(int a, int b) {
    int p1[2], p2[2];
    if (pipe2(p1, O_CLOEXEC) != 0 || pipe2(p2, O_CLOEXEC) != 0) return;
    fcntl(p1[1], F_SETPIPE_SZ, 1 << 20);
    fcntl(p2[1], F_SETPIPE_SZ, 1 << 20);
    struct lane up = {a, b, p1[0], p1[1], 0, 1}, down = {b, a, p2[0], p2[1], 0, 1};
    while (up.open || down.open) {
        struct pollfd p[2] = {{up.open ? a : -1, POLLIN, 0}, {down.open ? b : -1, POLLIN, 0}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return;
        }
        if (p[0].revents != 0 && pump_lane(&up) < 0) return;
        if (p[1].revents != 0 && pump_lane(&down) < 0) return;
    }
}

/* A socket connected to 127.0.0.1:port within 2 s, or -1. */
static int connect_loopback(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    struct sockaddr_in in;
    memset(&in, 0, sizeof in);
    in.sin_family = AF_INET;
    in.sin_port = htons((unsigned short)port);
    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr*)&in, sizeof in) != 0) {
        struct pollfd p = {fd, POLLOUT, 0};
        int err = 0;
        socklen_t len = sizeof err;
        if (errno != EINPROGRESS || poll(&p, 1, 2000) != 1 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

/* The control connection (RADIAL_OFFER_PORTS): answers the broker's asks until it closes. */
static void serve_control(const struct sockaddr_un* addr, const char* ports_text) {
    int ports[16], count = 0;
    for (const char* p = ports_text; *p != '\0' && count < 16;) {
        char* end = NULL;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 65535) break;
        ports[count++] = (int)v;
        p = *end == ',' ? end + 1 : end;
    }
    int u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (u < 0 || connect(u, (const struct sockaddr*)addr, sizeof *addr) != 0 ||
        send_byte(u, '\1', -1) != 0) {
        complain("control connection", errno);
        return;
    }
    for (;;) {
        unsigned char ask[3];
        size_t have = 0;
        while (have < sizeof ask) {
            ssize_t n = read(u, ask + have, sizeof ask - have);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return; /* the broker closed it: the turn is over */
            have += (size_t)n;
        }
        int port = (ask[1] << 8) | ask[2], offered = 0;
        for (int i = 0; i < count; ++i) offered |= ports[i] == port;
        int fd = ask[0] == 'P' && offered ? connect_loopback(port) : -1;
        if (fd < 0) {
            if (send_byte(u, 'E', -1) != 0) return;
            continue;
        }
        int rc = send_byte(u, 'K', fd);
        close(fd); /* the broker holds it now */
        if (rc != 0) return;
    }
}

static void serve(int listen_fd, const char* path) {
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
    for (;;) {
        int c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            /* Out of descriptors or processes for a moment: the endpoint stays for the turn. */
            if (errno != EINTR && errno != ECONNABORTED) poll(NULL, 0, 100);
            continue;
        }
        pid_t pid = fork();
        if (pid < 0) { /* no process for it now: this connection is closed, the next tried */
            close(c);
            poll(NULL, 0, 100);
            continue;
        }
        if (pid == 0) {
            close(listen_fd);
            int u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (u < 0 || connect(u, (struct sockaddr*)&addr, sizeof addr) != 0) {
                /* The broker is gone (the turn ended): the client sees a closed connection. */
                _exit(1);
            }
            int kept = hand_over(u, c);
            if (kept != 0) _exit(kept > 0 ? 0 : 1);
            relay(c, u);
            _exit(0);
        }
        close(c);
    }
}

pid_t start_egress_forwarder(int close_fd) {
    const char* path = getenv(RADIAL_EGRESS_SOCKET_ENV);
    if (path == NULL || *path == '\0') return 0;
    if (strlen(path) >= sizeof(((struct sockaddr_un*)0)->sun_path)) {
        complain(path, ENAMETOOLONG);
        return -1;
    }
    const char* port_text = getenv(RADIAL_EGRESS_PORT_ENV);
    long port = port_text != NULL && *port_text != '\0' ? strtol(port_text, NULL, 10) : 3128;
    if (port < 1 || port > 65535) {
        complain("RADIAL_EGRESS_PORT is not a port", EINVAL);
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in in;
    memset(&in, 0, sizeof in);
    in.sin_family = AF_INET;
    in.sin_port = htons((unsigned short)port);
    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* A session's earlier exec leaves its connections to this port in TIME_WAIT. */
    int one = 1;
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr*)&in, sizeof in) != 0 || listen(fd, 64) != 0) {
        complain("binding 127.0.0.1", errno);
        if (fd >= 0) close(fd);
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        complain("fork", errno);
        close(fd);
        return -1;
    }
    if (pid == 0) {
        if (close_fd >= 0) close(close_fd);
        sigset_t none;
        sigemptyset(&none);
        struct sigaction ign;
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        sigaction(SIGCHLD, &ign, NULL); /* relays are reaped by the kernel */
        sigaction(SIGPIPE, &ign, NULL);
        sigprocmask(SIG_SETMASK, &none, NULL);
        const char* offer = getenv(RADIAL_OFFER_PORTS_ENV);
        if (offer != NULL && *offer != '\0') {
            pid_t control = fork();
            if (control == 0) {
                close(fd);
                struct sockaddr_un addr;
                memset(&addr, 0, sizeof addr);
                addr.sun_family = AF_UNIX;
                strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
                serve_control(&addr, offer);
                _exit(0);
            }
            if (control < 0) complain("fork (control connection)", errno);
        }
        serve(fd, path);
        _exit(0);
    }
    close(fd); /* the forwarder holds it; the command never sees it */
    return pid;
}
