// tests/support/load_factor.h — how much slower than a quiet machine this run's machine is, as
// measured once at the start of the suite (tests/support/measure_load_factor.sh, the ctest fixture
// load_factor): every time budget of a test that waits for an event is multiplied by it, so that
// the suite that passes on a quiet machine passes beside a CPU hog too (tests/README.md).
#pragma once

#include <chrono>
#include <fstream>
#include <string>

namespace radial::test {

// The factor the fixture wrote to <build>/Testing/load-factor: at least 1, at most 8; 1 when the
// file is absent or unreadable (a test program run by hand). Read once per process.
inline double load_factor() {
    static const double factor = [] {
#ifdef RADIAL_BINARY_DIR
        std::ifstream in(std::string(RADIAL_BINARY_DIR) + "/Testing/load-factor");
        double f = 1;
        if (in >> f && f >= 1 && f <= 8) return f;
#endif
        return 1.0;
    }();
    return factor;
}

// `budget` scaled by the load factor.
template <class Rep, class Period>
std::chrono::milliseconds scaled(std::chrono::duration<Rep, Period> budget) {
    return std::chrono::milliseconds(static_cast<long long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(budget).count() * load_factor()));
}

} // namespace radial::test
