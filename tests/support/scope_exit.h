// tests/support/scope_exit.h — clean-up that runs however a test's scope ends: an ASSERT that
// returns early included, so what the test changed or started is not left for the next test
// (docs/design.md §16).
#pragma once

#include <functional>
#include <utility>

namespace radial::test {

// Runs `f` when it goes out of scope. Declared after what `f` uses, so it runs before they go.
class ScopeExit {
public:
    explicit ScopeExit(std::function<void()> f) : f_(std::move(f)) {}
    ScopeExit(const ScopeExit&) = delete;
    ScopeExit& operator=(const ScopeExit&) = delete;
    ~ScopeExit() {
        if (f_) f_();
    }

private:
    std::function<void()> f_;
};

} // namespace radial::test
