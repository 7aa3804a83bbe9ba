#include "daemon/test_pause.h"

#include <chrono>
#include <cstdlib>
#include <thread>

#include "log/logger.h"

namespace radial::daemon {

turn::CheckpointFn pause_point_from_env_for_test() {
    const char* at = std::getenv(kPauseAtEnvForTest);
    if (at == nullptr || *at == '\0') return {};
    log::warn("daemon", "{}={}: turns stop at that point for a test", kPauseAtEnvForTest, at);
    return [point = std::string(at)](std::string_view here, const std::string& turn_id) {
        if (here != point) return;
        log::warn("daemon", "turn {}: paused at '{}' for a test", turn_id, point);
        for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    };
}

std::chrono::milliseconds host_grace_from_env_for_test() {
    const char* ms = std::getenv(kHostGraceEnvForTest);
    if (ms == nullptr || *ms == '\0') return turn::kHostTimeoutGrace;
    char* end = nullptr;
    const unsigned long long n = std::strtoull(ms, &end, 10);
    if (*end != '\0' || n == 0 || n > 60'000) return turn::kHostTimeoutGrace;
    log::warn("turn", "{}={}: the host's timeout grace is {} ms for a test", kHostGraceEnvForTest,
              ms, n);
    return std::chrono::milliseconds(n);
}

} // namespace radial::daemon
