// host/cli/open_file_limit.h — radiald's open-file limit, raised to what the host allows: every
// turn holds descriptors a box can make it open (its socket's connections, its egress relays, its
// output log), and many turns at once under the default soft limit of 1024 could run a daemon out
// of descriptors, failing every other turn (docs/design.md §12.2). radiald never uses select(2),
// which a descriptor past 1024 would break.
#pragma once

#include <sys/resource.h>

namespace radial::cli {

// Raises this process's soft RLIMIT_NOFILE to its hard limit (children inherit it). Returns the
// soft limit in force afterwards; on a failure (a hard limit no setrlimit may reach) the one
// before, unchanged. Never throws. [not thread-safe: call before any thread starts]
rlim_t raise_open_file_limit() noexcept;

} // namespace radial::cli
