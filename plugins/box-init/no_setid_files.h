/* plugins/box-init/no_setid_files.h — the command radial-init runs cannot make a setuid or setgid
 * file (docs/design.md §15.2a): a local user who ran one a box made would become the box.
 *
 * A seccomp filter, stacked on whatever the runtime installed, answers EPERM to chmod, fchmod,
 * fchmodat and fchmodat2 with S_ISUID or S_ISGID in the mode, to open, openat and creat that
 * create a file with one of them, and to mknod and mknodat with one of them; openat2 (whose mode
 * sits behind a pointer a filter cannot read) and io_uring_setup (whose operations bypass seccomp)
 * answer ENOSYS, so C libraries fall back to openat. On x86-64 the i386 entry points are filtered
 * the same way and the x32 ones answer ENOSYS, as every call of an architecture the filter does
 * not know does (AArch32 on arm64). Sets no_new_privs first, which a filter needs
 * without CAP_SYS_ADMIN. */
#pragma once

/* Installs the filter on the calling thread (and what it execs). Returns 0, or -1 with errno set
 * when the kernel refused it. Async-signal-safe: call it in the child between fork and exec. */
int forbid_setid_files(void);
