// tests/host/daemon/docker_boxes.h — the engine's view of radiald's boxes, for the live daemon
// tests: which containers carry a radial label with a given prefix, in any state, and removing
// them.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "../../support/process_runner.h"

namespace radial::test {

// Labels of every container (running, created, exited, …) whose radial.label starts with `prefix`.
inline std::vector<std::string> boxes_with_prefix(const std::string& prefix) {
    auto r = run_process({"docker", "ps", "-a", "--filter", "label=radial.label", "--format",
                          "{{.Label \"radial.label\"}}"});
    std::vector<std::string> out;
    std::istringstream lines(r.out);
    for (std::string l; std::getline(lines, l);)
        if (l.rfind(prefix, 0) == 0) out.push_back(l);
    return out;
}

// "running", "exited", … of the container named `name`, or "gone" when the engine has none.
inline std::string box_state(const std::string& name) {
    auto r = run_process({"docker", "inspect", "--format", "{{.State.Status}}", name});
    return r.exit_code == 0 ? r.out.substr(0, r.out.find('\n')) : "gone";
}

// Removes them (test clean-up; never another test's, since every test has its own instance id).
inline void remove_boxes_with_prefix(const std::string& prefix) {
    for (const auto& label : boxes_with_prefix(prefix)) run_process({"docker", "rm", "-f", label});
}

// Removes the instance's boxes when the test ends, whatever happened.
struct BoxCleanup {
    std::string prefix;
    ~BoxCleanup() { remove_boxes_with_prefix(prefix); }
};

} // namespace radial::test
