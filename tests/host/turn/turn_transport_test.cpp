// Transport resolution against real plugin .so files reporting each capability (docs/design.md
// §9.1).
#include "turn/turn_transport.h"

#include <gtest/gtest.h>

#include <radial/host/runtime_client.hpp>

#include "loader/plugin_loader.h"

namespace radial::turn {
namespace {

// The fake plugin, told by its config which capabilities to report.
host::RuntimeClient fake_with_caps(std::vector<std::string> caps) {
    static auto plugin =
        loader::load_plugin(std::string(RADIAL_FAKE_PLUGIN_ROOT) + "/fake_good/fake.so");
    host::ConfigEntry e;
    e.key = "caps";
    e.kind = RADIAL_CONFIG_STRING_ARRAY;
    e.items = std::move(caps);
    return host::RuntimeClient::create(plugin.library, plugin.descriptor, {"run.fake", {e}},
                                       plugin.path, "t", [](std::uint32_t, std::string_view) {});
}

ResolvedTransport resolve_for(const host::RuntimeClient& c, TransportSetting s,
                              const std::string& host = "") {
    auto route = c.tcp_route();
    return resolve_transport(s, c.has_capability(RADIAL_CAP_UNIX_SOCKET_MOUNTS), c.info().id, host,
                             route.bind_host, route.box_host);
}

TEST(TurnTransport, AutoIsUnixWhenTheRuntimeCanPassASocket) {
    auto c = fake_with_caps({RADIAL_CAP_UNIX_SOCKET_MOUNTS});
    EXPECT_EQ(resolve_for(c, TransportSetting::automatic).transport, Transport::unix_socket);
    EXPECT_EQ(resolve_for(c, TransportSetting::unix_socket).transport, Transport::unix_socket);
}

TEST(TurnTransport, AutoIsTcpOnLoopbackWhenItCannot) {
    auto c = fake_with_caps({});
    auto r = resolve_for(c, TransportSetting::automatic);
    EXPECT_EQ(r.transport, Transport::tcp);
    EXPECT_EQ(r.bind_host, "127.0.0.1");
    EXPECT_EQ(r.box_host, "127.0.0.1");
}

TEST(TurnTransport, ExplicitTcpWinsEvenWhenUnixIsPossible) {
    auto c = fake_with_caps({RADIAL_CAP_UNIX_SOCKET_MOUNTS});
    auto r = resolve_for(c, TransportSetting::tcp, "127.0.0.2");
    EXPECT_EQ(r.transport, Transport::tcp);
    EXPECT_EQ(r.bind_host, "127.0.0.2");
    EXPECT_EQ(r.box_host, "127.0.0.2");
}

TEST(TurnTransport, ExplicitUnixWithARuntimeThatCannotIsRefusedNamingBothKeys) {
    auto c = fake_with_caps({RADIAL_CAP_NAMED_NETWORKS});
    try {
        resolve_for(c, TransportSetting::unix_socket);
        FAIL();
    } catch (const TransportError& e) {
        EXPECT_STREQ(
            e.what(),
            "run.turnTransport is \"unix\" but run.containerRuntime 'fake' cannot pass a "
            "unix socket into its boxes (it does not report radial.cap.unix-socket-mounts); "
            "set run.turnTransport to \"tcp\" or \"auto\"");
    }
}

TEST(TurnTransport, TheRuntimesBoxHostIsKeptWhenTheOperatorMovesTheBindHost) {
    auto r = resolve_transport(TransportSetting::automatic, false, "sandbox", "127.0.0.3",
                               "127.0.0.1", "host.docker.internal");
    EXPECT_EQ(r.bind_host, "127.0.0.3");
    EXPECT_EQ(r.box_host, "host.docker.internal");
}

// A plugin's tcp_route answer binds the turn socket on loopback only; a wider address, or a name,
// needs the operator's run.turnSocketHost (docs/design.md §9.3).
TEST(TurnTransport, ARuntimesBindHostBeyondLoopbackIsRefusedUnlessTheOperatorSetsOne) {
    for (const char* wide : {"0.0.0.0", "::", "10.1.2.3", "192.168.1.1", "::ffff:127.0.0.1",
                             "localhost", "fe80::1", "128.0.0.1", "1.127.0.0"}) {
        SCOPED_TRACE(wide);
        try {
            resolve_transport(TransportSetting::automatic, false, "hostile", "", wide, "");
            ADD_FAILURE() << "bound on " << wide;
        } catch (const TransportError& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find("run.containerRuntime 'hostile' asks radiald to bind the turn "
                                "socket on '" +
                                std::string(wide) + "', which is not a loopback address"),
                      std::string::npos)
                << what;
            EXPECT_NE(what.find("set run.turnSocketHost = \"" + std::string(wide) + "\""),
                      std::string::npos)
                << what;
        }
        // The operator's choice stands, and the runtime's answer is not consulted for the bind.
        auto r =
            resolve_transport(TransportSetting::automatic, false, "hostile", "0.0.0.0", wide, "");
        EXPECT_EQ(r.bind_host, "0.0.0.0");
    }
    for (const char* loop : {"127.0.0.1", "127.0.0.2", "127.255.255.254", "::1"}) {
        SCOPED_TRACE(loop);
        auto r = resolve_transport(TransportSetting::tcp, true, "fine", "", loop, "");
        EXPECT_EQ(r.bind_host, loop);
        EXPECT_EQ(r.box_host, loop);
    }
    // A unix socket binds nothing: the answer is not asked about.
    auto u = resolve_transport(TransportSetting::automatic, true, "hostile", "", "0.0.0.0", "");
    EXPECT_EQ(u.transport, Transport::unix_socket);
}

TEST(TurnTransport, ParsesTheSetting) {
    EXPECT_EQ(parse_transport_setting("auto"), TransportSetting::automatic);
    EXPECT_EQ(parse_transport_setting("unix"), TransportSetting::unix_socket);
    EXPECT_EQ(parse_transport_setting("tcp"), TransportSetting::tcp);
    EXPECT_THROW(parse_transport_setting("udp"), TransportError);
}

} // namespace
} // namespace radial::turn
