// The packaged config and the packaged unit agree (issue: a config whose workspace roots the
// unit hides makes every turn under them fail after it was queued): each of the packaged config's
// run.workspaceRoots, read by radiald's own config loader, is one the unit's sandboxing lets
// radiald see and write (docs/design.md §12.5).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "config/host_config.h"
#include "daemon/instance_claim.h"

namespace radial {
namespace {

// The unit's `Key=value` settings (the last of each key wins, as systemd reads them), and the
// words of every ReadWritePaths= line, without the "-" (ignore if missing) prefix.
struct Unit {
    std::map<std::string, std::string> settings;
    std::vector<std::string> read_write;
};

Unit read_unit(const std::string& path) {
    std::ifstream in(path);
    EXPECT_TRUE(in) << path;
    Unit u;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#' || line[0] == '[') continue;
        const auto eq = line.find('=');
        if (eq == std::string::npos) continue;
        const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
        u.settings[key] = value;
        if (key != "ReadWritePaths") continue;
        std::istringstream words(value);
        for (std::string w; words >> w;) u.read_write.push_back(w[0] == '-' ? w.substr(1) : w);
    }
    return u;
}

bool at_or_under(const std::string& path, const std::string& dir) {
    return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                           path[dir.size()] == '/');
}

// Whether the unit hides `root` from radiald or makes it read-only, and why (empty: neither).
std::string what_the_unit_does_to(const Unit& u, const std::string& root) {
    auto setting = [&](const std::string& key) {
        auto it = u.settings.find(key);
        return it == u.settings.end() ? std::string() : it->second;
    };
    if (setting("PrivateTmp") == "yes" &&
        (at_or_under(root, "/tmp") || at_or_under(root, "/var/tmp")))
        return "PrivateTmp=yes gives radiald a /tmp and /var/tmp of its own";
    const std::string home = setting("ProtectHome");
    const bool writable = std::any_of(u.read_write.begin(), u.read_write.end(),
                                      [&](const std::string& d) { return at_or_under(root, d); });
    for (const char* h : {"/home", "/root", "/run/user"})
        if (at_or_under(root, h) && !home.empty() && home != "no" && !writable)
            return "ProtectHome=" + home + " without a ReadWritePaths= for it";
    const std::string system = setting("ProtectSystem");
    if (system == "strict" && !writable)
        return "ProtectSystem=strict without a ReadWritePaths= for it";
    return "";
}

// The unit runs radiald as root, whose instance claims and box-id leases live in root's claim
// registry: the unit makes that directory (/run is read-only to radiald) and lets radiald write
// it, or no turn would start (docs/design.md §8.2).
TEST(PackagedUnitAndConfig, TheUnitMakesRootsClaimRegistryAndLetsRadialdWriteIt) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (root's claim registry)";
    const std::string registry = daemon::default_claim_registry();
    const Unit unit = read_unit(std::string(RADIAL_SOURCE_DIR) + "/packaging/radiald.service");
    EXPECT_EQ(what_the_unit_does_to(unit, registry), "") << registry;
    ASSERT_EQ(unit.settings.count("ExecStartPre"), 1u);
    EXPECT_EQ(unit.settings.at("ExecStartPre"), "+/bin/mkdir -p -m 0755 " + registry);
}

// radiald leases box ids only after reading every process's ids in /proc (docs/design.md §8.7):
// the unit hides none from it (ProtectProc=invisible or noaccess would, to a root without
// CAP_SYS_PTRACE), and no core file of radiald or its children holds a turn's secrets
// (docs/design.md §6.3).
TEST(PackagedUnitAndConfig, TheUnitHidesNoProcessFromRadialdAndLetsItDumpNoCore) {
    const Unit unit = read_unit(std::string(RADIAL_SOURCE_DIR) + "/packaging/radiald.service");
    const std::string proc =
        unit.settings.count("ProtectProc") ? unit.settings.at("ProtectProc") : "default";
    ASSERT_EQ(unit.settings.count("CapabilityBoundingSet"), 1u);
    EXPECT_TRUE(proc == "default" ||
                unit.settings.at("CapabilityBoundingSet").find("CAP_SYS_PTRACE") !=
                    std::string::npos)
        << "ProtectProc=" << proc << " hides the box ids' processes from radiald";
    ASSERT_EQ(unit.settings.count("LimitCORE"), 1u);
    EXPECT_EQ(unit.settings.at("LimitCORE"), "0");
}

TEST(PackagedUnitAndConfig, EveryWorkspaceRootIsOneTheUnitLetsRadialdSeeAndWrite) {
    const std::string source = RADIAL_SOURCE_DIR;
    const auto cfg = config::load(source + "/packaging/radiald.toml", std::nullopt, "/usr/bin");
    const Unit unit = read_unit(source + "/packaging/radiald.service");
    ASSERT_FALSE(cfg.workspace_roots.empty());
    ASSERT_EQ(unit.settings.count("PrivateTmp"), 1u) << "the unit is not the one this test knows";
    for (const auto& root : cfg.workspace_roots)
        EXPECT_EQ(what_the_unit_does_to(unit, root), "")
            << "the packaged config's run.workspaceRoots '" << root
            << "' is one the packaged unit keeps radiald from seeing or writing";
}

// The check above can fail: radiald's default roots, which the packaged config narrows, are
// exactly what the unit hides or freezes.
TEST(PackagedUnitAndConfig, TheDefaultRootsAreWhatTheUnitWouldHide) {
    const Unit unit = read_unit(std::string(RADIAL_SOURCE_DIR) + "/packaging/radiald.service");
    const auto defaults = config::load(std::nullopt, std::nullopt, "/nonexistent").workspace_roots;
    std::vector<std::string> refused;
    for (const auto& root : defaults)
        if (!what_the_unit_does_to(unit, root).empty()) refused.push_back(root);
    EXPECT_EQ(refused, (std::vector<std::string>{"/home", "/tmp", "/var/tmp"}));
}

} // namespace
} // namespace radial
