/* plugins/box-init/no_setid_files.c — see no_setid_files.h. */
#define _GNU_SOURCE
#include "no_setid_files.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the filter reads the low 32 bits of an argument at its offset: little-endian only"
#endif

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "no_setid_files: add this architecture's AUDIT_ARCH"
#endif

enum {
    kSetid = S_ISUID | S_ISGID,
    kCreates = O_CREAT | __O_TMPFILE,
    kNoArg = -1,
    kMaxInsns = 256,
    /* The same on every architecture since the unified numbering (Linux 5.1). */
    kIoUringSetup = 425,
    kOpenat2 = 437,
    kFchmodat2 = 452,
};

struct rule {
    int nr;        /* syscall number */
    int mode_arg;  /* the argument holding the mode */
    int flags_arg; /* the argument holding open flags, or kNoArg: the mode always applies */
};

static const struct rule kNative[] = {
#ifdef SYS_chmod
    {SYS_chmod, 1, kNoArg},
#endif
#ifdef SYS_open
    {SYS_open, 2, 1},
#endif
#ifdef SYS_creat
    {SYS_creat, 1, kNoArg},
#endif
#ifdef SYS_mknod
    {SYS_mknod, 1, kNoArg},
#endif
    {SYS_fchmod, 1, kNoArg}, {SYS_fchmodat, 2, kNoArg}, {kFchmodat2, 2, kNoArg},
    {SYS_openat, 3, 2},      {SYS_mknodat, 2, kNoArg},
};

#if defined(__x86_64__)
/* arch/x86/entry/syscalls/syscall_32.tbl */
static const struct rule kI386[] = {
    {15, 1, kNoArg},  /* chmod */ {94, 1, kNoArg}, /* fchmod */
    {306, 2, kNoArg}, /* fchmodat */ {kFchmodat2, 2, kNoArg},
    {5, 2, 1},        /* open */ {295, 3, 2},      /* openat */
    {8, 1, kNoArg},   /* creat */ {14, 1, kNoArg}, /* mknod */
    {297, 2, kNoArg},                              /* mknodat */
};
#endif

struct program {
    struct sock_filter insn[kMaxInsns];
    unsigned short n;
};

static void add(struct program* p, struct sock_filter f) {
    if (p->n < kMaxInsns) p->insn[p->n] = f;
    ++p->n;
}

/* Each an instruction value (a compound literal). */
#define LOAD(field) \
    ((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, field)))
#define RET(value) ((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, (value)))
#define DENY(err) RET(SECCOMP_RET_ERRNO | ((err)&SECCOMP_RET_DATA))
#define JEQ(k, jt, jf) ((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (jt), (jf)))
#define JSET(k, jt, jf) ((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, (k), (jt), (jf)))

/* One block per rule, each with its own returns, so every jump is short and local. */
static void add_rule(struct program* p, const struct rule* r) {
    add(p, LOAD(nr));
    if (r->flags_arg == kNoArg) {
        add(p, JEQ(r->nr, 0, 4));
    } else {
        add(p, JEQ(r->nr, 0, 6));
        add(p, LOAD(args[r->flags_arg]));
        add(p, JSET(kCreates, 0, 3));
    }
    add(p, LOAD(args[r->mode_arg]));
    add(p, JSET(kSetid, 0, 1));
    add(p, DENY(EPERM));
    add(p, RET(SECCOMP_RET_ALLOW));
}

static void add_unavailable(struct program* p, int number) {
    add(p, LOAD(nr));
    add(p, JEQ(number, 0, 1));
    add(p, DENY(ENOSYS));
}

/* The rules of one architecture, ending in ALLOW. */
static void add_section(struct program* p, const struct rule* rules, size_t count) {
    add_unavailable(p, kOpenat2);
    add_unavailable(p, kIoUringSetup);
    for (size_t i = 0; i < count; ++i) add_rule(p, &rules[i]);
    add(p, RET(SECCOMP_RET_ALLOW));
}

int forbid_setid_files(void) {
    static struct program native, prog;
    native.n = 0;
    prog.n = 0;
#if defined(__x86_64__)
    /* x32 shares the x86-64 arch value; its numbers carry this bit. */
    add(&native, LOAD(nr));
    add(&native, JSET(0x40000000u, 0, 1));
    add(&native, DENY(ENOSYS));
#endif
    add_section(&native, kNative, sizeof kNative / sizeof kNative[0]);

    add(&prog, LOAD(arch));
    add(&prog, JEQ(NATIVE_ARCH, 0, (unsigned char)native.n));
    for (unsigned short i = 0; i < native.n && native.n <= 255; ++i) add(&prog, native.insn[i]);
#if defined(__x86_64__)
    add(&prog, LOAD(arch));
    add(&prog, JEQ(AUDIT_ARCH_I386, 1, 0));
    add(&prog, DENY(ENOSYS)); /* an architecture these rules do not know: nothing of it runs */
    add_section(&prog, kI386, sizeof kI386 / sizeof kI386[0]);
#else
    /* Another architecture's entry points (AArch32 on arm64): their numbers are not these. */
    add(&prog, DENY(ENOSYS));
#endif
    if (native.n > 255 || prog.n > kMaxInsns) {
        errno = E2BIG;
        return -1;
    }
    struct sock_fprog fprog = {.len = prog.n, .filter = prog.insn};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0);
}
