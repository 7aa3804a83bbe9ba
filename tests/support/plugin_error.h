// tests/support/plugin_error.h — the radial::plugin::Error a call throws, for tests of a plugin's
// refusals (its code, key and message).
#pragma once

#include <gtest/gtest.h>

#include <radial/plugin/runtime.hpp>

namespace radial::test {

// Calls `f` and returns the radial::plugin::Error it throws. When it throws none, the test fails
// and the result is an error with code RADIAL_OK and no message; any other exception propagates.
template <class F>
radial::plugin::Error error_of(F&& f) {
    try {
        f();
    } catch (const radial::plugin::Error& e) {
        return e;
    }
    ADD_FAILURE() << "no error";
    return radial::plugin::Error(RADIAL_OK, "");
}

} // namespace radial::test
