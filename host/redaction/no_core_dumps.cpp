#include "redaction/no_core_dumps.h"

#include <sys/prctl.h>
#include <sys/resource.h>

namespace radial::redaction {

bool forbid_core_dumps() noexcept {
    const rlimit none{0, 0};
    return ::setrlimit(RLIMIT_CORE, &none) == 0 && ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0;
}

} // namespace radial::redaction
