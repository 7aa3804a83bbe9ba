// tests/plugins/support/mount_sources_test.cpp — the mount checks every runtime makes before it
// creates a box (plugins/support/mount_sources.cpp): no mount hands the box its engine's data root.
#include "support/mount_sources.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <radial/plugin/runtime.hpp>

#include "../../support/temp_dir.h"

namespace radial::plugin_support {
namespace {

ContainerSpec with_mount(const std::string& source) {
    ContainerSpec s;
    s.label = "radial-turn-i-1";
    s.mounts = {{"/usr/share", "/ok", true}, {source, "/work", false}};
    return s;
}

// The code and the message of the refusal, or nullopt when the spec passes.
std::optional<radial::plugin::Error> refusal(const ContainerSpec& s, const std::string& root) {
    try {
        refuse_engine_data_root(s, root, "'unix:///run/e.sock'");
    } catch (const radial::plugin::Error& e) {
        return e;
    }
    return std::nullopt;
}

// A data root moved off /var/lib/docker (daemon.json's data-root, a rootless engine) is what the
// host's built-in list does not hold: its root, what lies below it, what holds it and a link to
// any of them are refused, naming the mount, the data root and the engine (docs/design.md §7.5).
TEST(plugin_support_mount_sources, TheEnginesDataRootBelowOrAboveOrThroughALinkIsRefused) {
    radial::test::TempDir tmp("radial-data-root");
    const std::filesystem::path dir = tmp.path();
    const std::filesystem::path root = dir / "srv" / "docker";
    std::filesystem::create_directories(root / "overlay2" / "abc");
    std::filesystem::create_directories(dir / "srv" / "docker2");
    std::filesystem::create_symlink(root / "overlay2", dir / "link");
    for (const std::string& source :
         {root.string(), (root / "overlay2" / "abc").string(), (dir / "srv").string(),
          (dir / "link").string(), (dir / "srv" / "docker2" / ".." / "docker").string(),
          dir.string()}) {
        auto e = refusal(with_mount(source), root.string());
        ASSERT_TRUE(e) << source;
        EXPECT_EQ(e->code(), RADIAL_E_REFUSED) << source;
        EXPECT_EQ(e->key(), "mounts[1]") << source;
        const std::string what = e->what();
        EXPECT_NE(what.find("'" + source + "'"), std::string::npos) << what;
        EXPECT_NE(what.find("data root '" + root.string() + "'"), std::string::npos) << what;
        EXPECT_NE(what.find("'unix:///run/e.sock'"), std::string::npos) << what;
        EXPECT_NE(what.find("radial-turn-i-1"), std::string::npos) << what;
    }
    // The data root given with a trailing '/' or through a link is the same tree.
    EXPECT_TRUE(refusal(with_mount(root.string()), root.string() + "/"));
    std::filesystem::create_symlink(root, dir / "root-link");
    EXPECT_TRUE(refusal(with_mount(root.string()), (dir / "root-link").string()));
    // A sibling sharing the root's name as a prefix, and a directory beside it, are not the tree.
    EXPECT_FALSE(refusal(with_mount((dir / "srv" / "docker2").string()), root.string()));
    // Unknown (no preflight yet) or not a path: nothing to compare with.
    EXPECT_FALSE(refusal(with_mount(root.string()), ""));
    EXPECT_FALSE(refusal(with_mount(root.string()), "relative/docker"));
}

// The engine's socket, the docker client's configuration (credentials, contexts, TLS keys) and
// $DOCKER_CERT_PATH hand the box the engine wherever they live: a workspace holding any of them, or
// a mount below one, is refused naming what it would give away (docs/design.md §7.5).
TEST(plugin_support_mount_sources, AMountHoldingTheEnginesSocketOrClientConfigIsRefused) {
    radial::test::TempDir tmp("radial-engine-paths");
    const std::filesystem::path dir = tmp.path();
    for (const char* sub : {"eng", "cfg/.docker/contexts", "certs", "plain"})
        std::filesystem::create_directories(dir / sub);
    const auto paths = engine_control_paths(
        "'unix://" + (dir / "eng/docker.sock").string() + "'", (dir / "eng/docker.sock").string(),
        (dir / "cfg/.docker").string(), (dir / "certs").string());
    ASSERT_EQ(paths.size(), 3u);
    auto refused = [&](const std::string& source) -> std::string {
        try {
            refuse_engine_control_paths(with_mount(source), paths);
        } catch (const radial::plugin::Error& e) {
            EXPECT_EQ(e.code(), RADIAL_E_REFUSED) << source;
            EXPECT_EQ(e.key(), "mounts[1]") << source;
            return e.what();
        }
        return "";
    };
    EXPECT_NE(refused((dir / "eng").string()).find("holds the socket of the engine"),
              std::string::npos);
    EXPECT_NE(refused((dir / "cfg").string()).find("the docker client's configuration directory"),
              std::string::npos);
    EXPECT_NE(refused((dir / "cfg/.docker/contexts").string()).find("lies below"),
              std::string::npos);
    EXPECT_NE(refused((dir / "certs").string()).find("is the engine's TLS keys"),
              std::string::npos);
    EXPECT_NE(refused(dir.string()).find("radial-turn-i-1"), std::string::npos);
    EXPECT_EQ(refused((dir / "plain").string()), "");
    // A tcp engine has no socket; nothing unset is compared.
    EXPECT_EQ(engine_control_paths("'tcp://h:2376'", "", "", "").size(), 0u);
}

} // namespace
} // namespace radial::plugin_support
