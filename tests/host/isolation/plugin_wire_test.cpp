// What crosses to a plugin host process (host/isolation/plugin_wire.h): every ContainerSpec field
// and config entry round-trips byte for byte, bytes that are not UTF-8 included; frames keep
// their boundaries; a descriptor passes over a unix socket.
#include "isolation/plugin_wire.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace radial::isolation {
namespace {

ContainerSpec every_field() {
    ContainerSpec s;
    s.label = "radial-turn-x";
    s.image = "img@sha256:abc";
    s.mounts = {{"/srv/ws", "/workspace", false, true}, {"/etc/x", "/x", true}};
    s.argv = {"sh", "-c", std::string("printf '\xff\xfe'\0tail", 17)};
    s.env = {{"PLAIN", "v", false}, {"TOKEN", std::string("s\xc3\x28\x80", 4), true}};
    s.workdir = "/workspace";
    s.timeout_ms = 1234;
    s.host_ports = {8080, 9};
    s.pids_limit = 77;
    s.read_only_rootfs = Tristate::no;
    s.user = "1000:1000";
    s.tmpfs = {{"/tmp", 1 << 20}};
    s.extra_hosts = {"a:127.0.0.1"};
    s.memory_bytes = 1ull << 30;
    s.network = "none";
    s.cpus_milli = 1500;
    s.egress = {"example.com:443"};
    s.stop_grace_ms = 10000;
    return s;
}

TEST(PluginWire, ASpecRoundTripsEveryFieldAndNonUtf8Bytes) {
    const ContainerSpec s = every_field();
    const ContainerSpec back = spec_from_json(from_cbor(to_cbor(spec_to_json(s))));
    EXPECT_EQ(back, s);
    EXPECT_EQ(back.env[1].value, std::string("s\xc3\x28\x80", 4));
    EXPECT_EQ(back.argv[2].size(), 17u);
}

// A payload from a plugin's host process nested past kMaxCborDepth (a million one-element arrays:
// the reader recursing for each would overflow radiald's stack) or holding more than
// kMaxCborItems values (each a json of 16 bytes or more) is refused whole; within both, read.
TEST(PluginWire, ACborPayloadTooDeepOrTooLargeIsRefusedNotRead) {
    const std::string deep = std::string(1'000'000, '\x81') + '\xf6';
    EXPECT_THROW(from_cbor(deep), std::runtime_error);
    std::string wide = "\x9f" + std::string(kMaxCborItems + 1, '\xf6') + '\xff';
    EXPECT_THROW(from_cbor(wide), std::runtime_error);
    try {
        from_cbor(deep);
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("nested deeper than 32 levels"), std::string::npos)
            << e.what();
    }
    EXPECT_THROW(from_cbor("\x82\xf6"), std::runtime_error) << "cut short";
    const std::string within = std::string(kMaxCborDepth - 1, '\x81') + '\xf6';
    EXPECT_NO_THROW(from_cbor(within));
    wide = "\x9f" + std::string(1000, '\xf6') + '\xff';
    EXPECT_EQ(from_cbor(wide).size(), 1000u);
}

TEST(PluginWire, AConfigSectionRoundTrips) {
    host::ConfigSection c;
    c.section = "run.fake";
    c.entries.push_back({"caps", RADIAL_CONFIG_STRING_ARRAY, "", 0, 0, {"a", "b"}});
    c.entries.push_back({"n", RADIAL_CONFIG_INT, "", -5, 0, {}});
    c.entries.push_back({"f", RADIAL_CONFIG_FLOAT, "", 0, 2.5, {}});
    c.entries.push_back({"s", RADIAL_CONFIG_STRING, "x\xff", 0, 0, {}});
    const host::ConfigSection back = config_from_json(from_cbor(to_cbor(config_to_json(c))));
    ASSERT_EQ(back.entries.size(), 4u);
    EXPECT_EQ(back.section, "run.fake");
    EXPECT_EQ(back.entries[0].items, (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(back.entries[1].int_value, -5);
    EXPECT_EQ(back.entries[2].float_value, 2.5);
    EXPECT_EQ(back.entries[3].string_value, "x\xff");
}

TEST(PluginWire, FramesKeepTheirBoundariesAndALengthOverTheCapEndsTheStream) {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    internal::UniqueFd a(sv[0]), b(sv[1]);
    const std::string big(1 << 20, 'z');
    std::thread writer([&] {
        EXPECT_TRUE(write_frame(a.get(), kOutput, "\x01hi"));
        EXPECT_TRUE(write_frame(a.get(), kOutput, big));
        EXPECT_TRUE(write_frame(a.get(), kAck, std::string(1, '\0')));
        const char bogus[5] = {kReturn, '\xff', '\xff', '\xff', '\x7f'};
        EXPECT_EQ(::write(a.get(), bogus, 5), 5);
    });
    Frame f;
    ASSERT_TRUE(read_frame(b.get(), f));
    EXPECT_EQ(f.type, kOutput);
    EXPECT_EQ(f.payload, "\x01hi");
    ASSERT_TRUE(read_frame(b.get(), f));
    EXPECT_EQ(f.payload, big);
    ASSERT_TRUE(read_frame(b.get(), f));
    EXPECT_EQ(f.type, kAck);
    EXPECT_EQ(f.payload, std::string(1, '\0'));
    EXPECT_FALSE(read_frame(b.get(), f)); // 2 GiB announced: refused, not allocated
    writer.join();
}

TEST(PluginWire, ADescriptorPassesOverAUnixSocket) {
    int sv[2], pipe_fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ASSERT_EQ(::pipe(pipe_fds), 0);
    internal::UniqueFd a(sv[0]), b(sv[1]), r(pipe_fds[0]), w(pipe_fds[1]);
    ASSERT_TRUE(send_fd(a.get(), w.get()));
    internal::UniqueFd got = receive_fd(b.get());
    ASSERT_TRUE(got.valid());
    EXPECT_EQ(::fcntl(got.get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    ASSERT_EQ(::write(got.get(), "k", 1), 1);
    char c = 0;
    ASSERT_EQ(::read(r.get(), &c, 1), 1);
    EXPECT_EQ(c, 'k');
    a.reset();
    EXPECT_FALSE(receive_fd(b.get()).valid()); // the peer is gone
}

} // namespace
} // namespace radial::isolation
