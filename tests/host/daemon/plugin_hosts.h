// tests/host/daemon/plugin_hosts.h — the radial-plugin-host processes a radiald started
// (docs/design.md §5.13), found by their parent: only that radiald's children are looked at.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "../../support/temp_dir.h"

namespace radial::test {

// The radial-plugin-host processes whose parent is `parent`.
inline std::vector<pid_t> plugin_hosts_of(pid_t parent) {
    std::vector<pid_t> out;
    for (const auto& e :
         std::filesystem::directory_iterator("/proc")) { // hermetic-ok: only its daemon's children
        const std::string name = e.path().filename();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        const std::string stat = read_file(e.path() / "stat");
        const auto close = stat.rfind(')');
        if (stat.find("(radial-plugin-h") == std::string::npos || close == std::string::npos)
            continue;
        std::istringstream rest(stat.substr(close + 2));
        char state = 0;
        pid_t ppid = 0;
        rest >> state >> ppid;
        if (ppid == parent) out.push_back(std::stoi(name));
    }
    return out;
}

} // namespace radial::test
