// forbid_core_dumps (host/redaction/no_core_dumps.h, docs/design.md §6.3): what radiald and
// radial-plugin-host call first, so that no core file holds a turn's secrets. Run in a child: it
// changes the process for good.
#include "redaction/no_core_dumps.h"

#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <cstdlib>

namespace radial::redaction {
namespace {

// Exit codes: 0 done, 1 refused, 2 still dumpable, 3 a core limit left.
[[noreturn]] void forbid_then_look() {
    if (!forbid_core_dumps()) std::_Exit(1);
    if (::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0) std::_Exit(2);
    rlimit core{};
    if (::getrlimit(RLIMIT_CORE, &core) != 0 || core.rlim_cur != 0 || core.rlim_max != 0)
        std::_Exit(3);
    std::_Exit(0);
}

TEST(NoCoreDumps, TheProcessIsNotDumpableAndItsCoreLimitIsZero) {
    EXPECT_EXIT(forbid_then_look(), ::testing::ExitedWithCode(0), "");
}

} // namespace
} // namespace radial::redaction
