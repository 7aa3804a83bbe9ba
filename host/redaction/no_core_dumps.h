// host/redaction/no_core_dumps.h — a radiald process (radiald itself, radial-plugin-host) holds
// every secret its turns are given, in its environment and its memory: a core file would put them
// all at rest on the host, which a secret never is (docs/design.md §6.3).
#pragma once

namespace radial::redaction {

// Makes this process write no core file and be readable through /proc and ptrace only with
// CAP_SYS_PTRACE (PR_SET_DUMPABLE 0, until it execs), and gives it and every child it starts a
// core size limit of 0 (soft and hard). Call first thing in main(). Returns false, errno set,
// when either could not be set; the caller refuses to go on. [not thread-safe: call before any
// thread starts]
bool forbid_core_dumps() noexcept;

} // namespace radial::redaction
