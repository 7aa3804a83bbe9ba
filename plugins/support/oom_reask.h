// plugins/support/oom_reask.h — how often a runtime asks the engine again whether the memory bound
// ended a box that exited 137 without State.OOMKilled (docs/design.md §13.1): the engine learns of
// an OOM kill by an event of its own, which can come after the exit it reported, later still on a
// loaded machine.
#pragma once

#include <chrono>

namespace radial::plugin_support {

// Up to this many more inspections, kOomReaskEvery apart: five seconds in all (two were not
// enough on a loaded 2-core machine: a clean-clone CI run saw a bound's kill reported without it).
inline constexpr int kOomReasks = 50;
inline constexpr std::chrono::milliseconds kOomReaskEvery{100};

} // namespace radial::plugin_support
