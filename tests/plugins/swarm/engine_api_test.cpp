// Unit tests of the Engine API client (plugins/support/engine_api): the multiplexed stream
// framing, engine addresses, API versions, the encoders, and a stream stopped from another thread
// against a scripted engine (tests/support/fake_engine.h). No Docker Engine.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <string>
#include <utility>
#include <vector>

#include "../../support/fake_engine.h"
#include "engine_api/engine_client.h"
#include "engine_api/stream_frames.h"

namespace radial::engine_api {
namespace {

struct Piece {
    std::uint32_t stream;
    std::string data;
};

// Feeds `bytes` in pieces of `step` bytes and returns each stream's bytes.
std::pair<std::string, std::string> demux_in_steps(const std::string& bytes, std::size_t step) {
    std::string out, err;
    FrameDemux d([&](std::uint32_t s, const char* p, std::size_t n) {
        EXPECT_GT(n, 0u);
        (s == 2 ? err : out).append(p, n);
        return true;
    });
    for (std::size_t i = 0; i < bytes.size(); i += step)
        EXPECT_TRUE(d.feed(std::string_view(bytes).substr(i, step)));
    EXPECT_TRUE(d.at_frame_boundary());
    return {out, err};
}

TEST(StreamFrames, DemuxesStdoutAndStderrWhateverTheReadBoundaries) {
    std::string binary;
    for (int i = 0; i < 256; ++i) binary.push_back(static_cast<char>(i));
    std::string bytes = encode_frame(1, "out line\n") + encode_frame(2, "err line\n") +
                        encode_frame(1, binary) + encode_frame(2, std::string(70000, 'e')) +
                        encode_frame(1, "");
    for (std::size_t step : {1u, 3u, 7u, 8u, 9u, 4096u, 1u << 20}) {
        auto [out, err] = demux_in_steps(bytes, step);
        EXPECT_EQ(out, "out line\n" + binary) << "step " << step;
        EXPECT_EQ(err, "err line\n" + std::string(70000, 'e')) << "step " << step;
    }
}

TEST(StreamFrames, KeepsOrderWithinAStreamAndNeverMergesFrames) {
    std::vector<Piece> pieces;
    FrameDemux d([&](std::uint32_t s, const char* p, std::size_t n) {
        pieces.push_back({s, std::string(p, n)});
        return true;
    });
    ASSERT_TRUE(d.feed(encode_frame(1, "a") + encode_frame(1, "b") + encode_frame(2, "c")));
    ASSERT_EQ(pieces.size(), 3u);
    EXPECT_EQ(pieces[0].data, "a");
    EXPECT_EQ(pieces[1].data, "b");
    EXPECT_EQ(pieces[2].stream, 2u);
}

TEST(StreamFrames, APartialFrameIsNotABoundary) {
    FrameDemux d([](std::uint32_t, const char*, std::size_t) { return true; });
    std::string f = encode_frame(1, "hello");
    ASSERT_TRUE(d.feed(f.substr(0, 10)));
    EXPECT_FALSE(d.at_frame_boundary());
    ASSERT_TRUE(d.feed(f.substr(10)));
    EXPECT_TRUE(d.at_frame_boundary());
}

TEST(StreamFrames, TheSinkStopsTheDemux) {
    int calls = 0;
    FrameDemux d([&](std::uint32_t, const char*, std::size_t) { return ++calls < 1; });
    EXPECT_FALSE(d.feed(encode_frame(1, "a") + encode_frame(1, "b")));
    EXPECT_EQ(calls, 1);
}

TEST(StreamFrames, RawTtyOutputIsRefusedNamingTheHeader) {
    FrameDemux d([](std::uint32_t, const char*, std::size_t) { return true; });
    try {
        d.feed("hello, world\n");
        FAIL() << "raw bytes were taken for frames";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("not multiplexed"), std::string::npos) << e.what();
    }
}

TEST(StreamFrames, EncodesTheLengthBigEndian) {
    std::string f = encode_frame(2, std::string(0x010203, 'x'));
    ASSERT_EQ(f.size(), 8u + 0x010203);
    EXPECT_EQ(f.substr(0, 8), std::string("\x02\0\0\0\x00\x01\x02\x03", 8));
}

TEST(EngineAddress, ParsesUnixAndTcpAndRefusesTheRest) {
    auto u = parse_engine_address("unix:///var/run/docker.sock");
    EXPECT_TRUE(u.unix_socket);
    EXPECT_EQ(u.path, "/var/run/docker.sock");
    auto t = parse_engine_address("tcp://10.0.0.5:2375");
    EXPECT_FALSE(t.unix_socket);
    EXPECT_EQ(t.host, "10.0.0.5");
    EXPECT_EQ(t.port, "2375");
    auto v6 = parse_engine_address("tcp://[::1]:2375/");
    EXPECT_EQ(v6.host, "::1");
    EXPECT_THROW(parse_engine_address("unix://relative.sock"), std::invalid_argument);
    EXPECT_THROW(parse_engine_address("tcp://host"), std::invalid_argument);
    EXPECT_THROW(parse_engine_address("tcp://host:port"), std::invalid_argument);
    EXPECT_THROW(parse_engine_address("https://host:2376"), std::invalid_argument);
}

TEST(ApiVersion, ParsesAndOrders) {
    EXPECT_EQ(parse_api_version("1.41"), (ApiVersion{1, 41}));
    EXPECT_LT(*parse_api_version("1.40"), kMinApiVersion);
    EXPECT_LT(*parse_api_version("1.9"), *parse_api_version("1.10"));
    EXPECT_FALSE(parse_api_version("1"));
    EXPECT_FALSE(parse_api_version("v1.41"));
    EXPECT_FALSE(parse_api_version("1.41x"));
}

TEST(Encoders, Base64MatchesTheStandardAlphabetWithPadding) {
    EXPECT_EQ(base64_encode(""), "");
    EXPECT_EQ(base64_encode("f"), "Zg==");
    EXPECT_EQ(base64_encode("fo"), "Zm8=");
    EXPECT_EQ(base64_encode("foo"), "Zm9v");
    EXPECT_EQ(base64_encode(std::string("\xff\xfe\n", 3)), "//4K");
}

TEST(Encoders, UrlEncodeEscapesEverythingButUnreserved) {
    EXPECT_EQ(url_encode(R"({"label":{"radial.label=a b":true}})"),
              "%7B%22label%22%3A%7B%22radial.label%3Da%20b%22%3Atrue%7D%7D");
}

TEST(EngineMessage, PrefersTheEnginesMessageField) {
    EXPECT_EQ(engine_message(R"({"message":"rpc error: secret in use"})"),
              "rpc error: secret in use");
    EXPECT_EQ(engine_message("plain text\n"), "plain text");
    EXPECT_EQ(engine_message(""), "(no message)");
}

TEST(EngineClient, AnUnreachableSocketNamesTheCallAndTheFix) {
    EngineClient c(parse_engine_address("unix:///nonexistent/radial-test/docker.sock"),
                   std::chrono::milliseconds(2000));
    try {
        c.version();
        FAIL() << "no engine answered, yet version() returned";
    } catch (const EngineError& e) {
        std::string m = e.what();
        EXPECT_TRUE(e.unreachable());
        EXPECT_NE(m.find("GET /_ping"), std::string::npos) << m;
        EXPECT_NE(m.find("unix:///nonexistent/radial-test/docker.sock"), std::string::npos) << m;
        EXPECT_NE(m.find("is dockerd running"), std::string::npos) << m;
    }
}

// A stream is stopped by the run's kill and again by its cleanup. By the second stop() the
// stream's socket is closed and its descriptor number may already belong to another thread's new
// engine connection; that stop() must not shut the other connection down (it did: a kill's
// `GET /services` failed with "Broken pipe" in the swarm conformance run).
TEST(EngineClient, AStopAfterTheStreamClosedLeavesADescriptorReusedElsewhereAlone) {
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    radial::test::FakeEngine engine([&](const std::string&, const std::string& path) {
        if (path == "/_ping") return radial::test::ping_answer("1.41");
        radial::test::EngineAnswer a;
        a.hijack = true;
        a.close_after = [released] { released.wait(); };
        return a;
    });
    EngineClient c(parse_engine_address(engine.address()), std::chrono::milliseconds(5000));
    auto stream = c.open_hijacked("/containers/x/attach?stream=1", "attaching");
    stream->stop();
    std::string chunk;
    EXPECT_FALSE(stream->read(chunk))
        << "a stopped stream reads nothing more, and lets go of its socket";

    // The stream's descriptor is closed now; the lowest free numbers go to this pair, as they
    // would to a kill's new connection.
    int pair[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    stream->stop();
    const char ping[] = "ping";
    EXPECT_EQ(::send(pair[0], ping, 4, MSG_NOSIGNAL), 4) << std::strerror(errno);
    EXPECT_EQ(::send(pair[1], ping, 4, MSG_NOSIGNAL), 4) << std::strerror(errno);
    char got[8];
    EXPECT_EQ(::recv(pair[1], got, sizeof(got), MSG_DONTWAIT), 4);
    EXPECT_EQ(::recv(pair[0], got, sizeof(got), MSG_DONTWAIT), 4);
    ::close(pair[0]);
    ::close(pair[1]);
    release.set_value();
}

} // namespace
} // namespace radial::engine_api
