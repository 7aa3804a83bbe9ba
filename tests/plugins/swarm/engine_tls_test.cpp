// The Engine API client over TLS (docs/design.md §13.10) against a scripted engine
// (tests/support/fake_engine.h) behind a real TLS endpoint: socat, with a CA, a server certificate
// for 127.0.0.1 and a client certificate the openssl CLI makes at test time. Plain calls, a
// streamed body, and a hijacked attach stream whose blocked read another thread's stop() ends.
// No Docker Engine.
#include <gtest/gtest.h>

#include <future>
#include <string>

#include "../../support/fake_engine.h"
#include "../../support/tls_endpoint.h"
#include "engine_api/engine_client.h"
#include "engine_api/stream_frames.h"

namespace radial::engine_api {
namespace {

TEST(EngineClientTls, CallsStreamsAndAStoppedAttachWorkOverTls) {
    radial::test::TestCertificates certs;

    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    // Lets the engine's attach go before the engine joins it, however the test ends.
    struct Release {
        std::promise<void>& p;
        ~Release() { p.set_value(); }
    };
    radial::test::FakeEngine engine([&](const std::string&, const std::string& path) {
        if (path == "/_ping") return radial::test::ping_answer("1.41");
        if (path.starts_with("/v1.41/containers/x/logs"))
            return radial::test::EngineAnswer(200, "a log body over TLS");
        radial::test::EngineAnswer a;
        a.hijack = true;
        a.frames = encode_frame(1, "attached over TLS\n");
        a.close_after = [released] { released.wait(); };
        return a;
    });
    Release release_at_end{release};
    radial::test::TlsEndpoint proxy(certs, engine.address().substr(7));
    ASSERT_TRUE(proxy.listening()) << proxy.log();

    EngineAddress address = parse_engine_address(proxy.address());
    address.tls = EngineTls{certs / "ca.pem", certs / "client.pem", certs / "client-key.pem", false,
                            "the test's certificates"};
    EngineClient c(address, std::chrono::milliseconds(10000));
    EXPECT_EQ(c.version(), (ApiVersion{1, 41}));

    auto logs = c.open_stream("/containers/x/logs?follow=1&stdout=1", "reading logs");
    std::string chunk, body;
    while (logs->read(chunk)) body += chunk;
    EXPECT_EQ(body, "a log body over TLS");

    auto stream = c.open_hijacked("/containers/x/attach?stream=1", "attaching");
    std::string attached;
    while (attached.size() < encode_frame(1, "attached over TLS\n").size()) {
        ASSERT_TRUE(stream->read(chunk)) << "the attach stream ended early";
        attached += chunk;
    }
    EXPECT_EQ(attached, encode_frame(1, "attached over TLS\n"));

    // The engine holds the connection open: the next read blocks until stop() from this thread
    // shuts the socket under the TLS layer down.
    std::promise<void> reading;
    auto reader = std::async(std::launch::async, [&] {
        reading.set_value();
        std::string more;
        return stream->read(more);
    });
    reading.get_future().wait();
    stream->stop();
    ASSERT_EQ(reader.wait_for(std::chrono::seconds(30)), std::future_status::ready)
        << "stop() did not wake the blocked TLS read";
    EXPECT_FALSE(reader.get());
}

} // namespace
} // namespace radial::engine_api
