// host/cli/open_file_limit.cpp — see open_file_limit.h.
#include "cli/open_file_limit.h"

namespace radial::cli {

rlim_t raise_open_file_limit() noexcept {
    rlimit lim{};
    if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;
    if (lim.rlim_cur == lim.rlim_max) return lim.rlim_cur;
    const rlim_t before = lim.rlim_cur;
    lim.rlim_cur = lim.rlim_max;
    return ::setrlimit(RLIMIT_NOFILE, &lim) == 0 ? lim.rlim_cur : before;
}

} // namespace radial::cli
