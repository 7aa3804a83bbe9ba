// The swarm runtime and its Engine API client against a scripted fake engine (a plain HTTP/1.1
// server on a private unix socket or a loopback tcp port): version negotiation, the preflight's
// messages, deadlines, and request paths. No Docker Engine needed.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <radial/internal/temp_dir.h>
#include <radial/internal/unique_fd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "engine_api/engine_client.h"
#include "engine_api/stream_frames.h"
#include "swarm_runtime.h"

namespace radial::swarm {
namespace {

struct Answer {
    Answer() = default;
    Answer(int s, std::string b, bool quiet = false)
        : status(s), body(std::move(b)), silent(quiet) {}
    int status = 200;
    std::string body;
    bool silent = false; // accept, read, never answer
    // A chunked, streamed answer: `body` as the first chunk, then nothing until `release` is
    // called, then `rest` and the end.
    std::function<void()> wait_for_release;
    std::string rest;
};

// A one-thread HTTP server: answers each request from `route(method, path)`.
class FakeEngine {
public:
    using Route = std::function<Answer(const std::string& method, const std::string& path)>;

    FakeEngine(Route route, bool tcp) : route_(std::move(route)) {
        if (tcp) {
            fd_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            EXPECT_EQ(::bind(fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
            socklen_t n = sizeof(a);
            ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&a), &n);
            address_ = "tcp://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
        } else {
            dir_.emplace("/tmp", "radial-fake-engine-");
            std::string path = dir_->path().string() + "/docker.sock";
            fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
            sockaddr_un a{};
            a.sun_family = AF_UNIX;
            std::snprintf(a.sun_path, sizeof(a.sun_path), "%s", path.c_str());
            EXPECT_EQ(::bind(fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
            address_ = "unix://" + path;
        }
        ::listen(fd_.get(), 16);
        thread_ = std::thread([this] { serve(); });
    }
    ~FakeEngine() {
        stop_ = true;
        ::shutdown(fd_.get(), SHUT_RDWR);
        thread_.join(); // then fd_, held_ and dir_ go
    }
    const std::string& address() const { return address_; }
    std::vector<std::string> requests() {
        std::lock_guard lock(mutex_);
        return requests_;
    }

private:
    void serve() {
        while (!stop_) {
            internal::UniqueFd conn(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
            if (!conn) return;
            const int c = conn.get();
            std::string req;
            char buf[4096];
            while (req.find("\r\n\r\n") == std::string::npos) {
                ssize_t n = ::read(c, buf, sizeof(buf));
                if (n <= 0) break;
                req.append(buf, static_cast<std::size_t>(n));
            }
            std::string line = req.substr(0, req.find("\r\n"));
            std::string method = line.substr(0, line.find(' '));
            std::string path = line.substr(method.size() + 1);
            path = path.substr(0, path.find(' '));
            {
                std::lock_guard lock(mutex_);
                requests_.push_back(method + " " + path);
            }
            Answer a = route_(method, path);
            if (a.silent) {
                held_.push_back(std::move(conn));
                continue;
            }
            if (a.wait_for_release) {
                auto chunk = [](const std::string& b) {
                    char len[32];
                    std::snprintf(len, sizeof(len), "%zx\r\n", b.size());
                    return std::string(len) + b + "\r\n";
                };
                std::string head =
                    "HTTP/1.1 200 OK\r\nContent-Type: "
                    "application/vnd.docker.multiplexed-stream\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n" +
                    chunk(a.body);
                (void)!::send(c, head.data(), head.size(), MSG_NOSIGNAL);
                a.wait_for_release();
                std::string tail = chunk(a.rest) + "0\r\n\r\n";
                (void)!::send(c, tail.data(), tail.size(), MSG_NOSIGNAL);
                continue;
            }
            std::string res = "HTTP/1.1 " + std::to_string(a.status) +
                              " X\r\nContent-Type: application/json\r\nContent-Length: " +
                              std::to_string(a.body.size()) + "\r\nConnection: close\r\n\r\n" +
                              a.body;
            (void)!::send(c, res.data(), res.size(), MSG_NOSIGNAL);
        }
    }

    Route route_;
    std::optional<internal::TempDir>
        dir_; // before fd_: the socket closes before its directory goes
    internal::UniqueFd fd_;
    std::string address_;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    std::mutex mutex_;
    std::vector<std::string> requests_;
    std::vector<internal::UniqueFd> held_;
};

Answer version(const std::string& api) {
    return {200, R"({"Version":"20.10.24","ApiVersion":")" + api + R"(","MinAPIVersion":"1.12"})"};
}

// A SwarmRuntime whose [run.swarm] is host = `address`, commandTimeout = 400 ms.
std::unique_ptr<SwarmRuntime> runtime_for(const std::string& address,
                                          std::vector<std::string>* log = nullptr) {
    static std::vector<std::string>* sink;
    sink = log;
    radial_config_entry entries[2]{};
    entries[0].key = to_c("host");
    entries[0].kind = RADIAL_CONFIG_STRING;
    entries[0].string_value = to_c(address);
    entries[1].key = to_c("commandTimeout");
    entries[1].kind = RADIAL_CONFIG_INT;
    entries[1].int_value = 400;
    radial_config c{};
    c.struct_size = sizeof(c);
    c.section = to_c("run.swarm");
    c.entries = {entries, 2, sizeof(radial_config_entry)};
    radial_host h{};
    h.struct_size = sizeof(h);
    h.log = [](void*, std::uint32_t, radial_str m) {
        if (sink) sink->emplace_back(to_view(m));
    };
    radial::plugin::Config config(&c);
    auto rt = std::make_unique<SwarmRuntime>(radial::plugin::Host(&h), config);
    config.finish();
    return rt;
}

std::string preflight_error(SwarmRuntime& rt, std::int32_t* code = nullptr) {
    try {
        rt.preflight();
    } catch (const radial::plugin::Error& e) {
        if (code) *code = e.code();
        return e.what();
    }
    return "";
}

TEST(FakeEngine, PreflightOnAnEngineOutsideASwarmSaysHowToInitOne) {
    FakeEngine engine(
        [](const std::string&, const std::string& path) {
            if (path == "/version") return version("1.41");
            return Answer{200,
                          R"({"Swarm":{"LocalNodeState":"inactive","ControlAvailable":false}})"};
        },
        false);
    auto rt = runtime_for(engine.address());
    std::int32_t code = 0;
    std::string m = preflight_error(*rt, &code);
    EXPECT_EQ(code, RADIAL_E_UNAVAILABLE);
    EXPECT_NE(m.find("not in a swarm"), std::string::npos) << m;
    EXPECT_NE(m.find("docker swarm init"), std::string::npos) << m;
    // Negotiated once, then every call is versioned.
    auto reqs = engine.requests();
    ASSERT_EQ(reqs.size(), 2u);
    EXPECT_EQ(reqs[0], "GET /version");
    EXPECT_EQ(reqs[1], "GET /v1.41/info");
}

TEST(FakeEngine, PreflightOnAWorkerNamesTheManagerFix) {
    FakeEngine engine(
        [](const std::string&, const std::string& path) {
            if (path == "/version") return version("1.43");
            return Answer{200, R"({"Swarm":{"LocalNodeState":"active","ControlAvailable":false}})"};
        },
        true); // and over tcp://
    auto rt = runtime_for(engine.address());
    std::string m = preflight_error(*rt);
    EXPECT_NE(m.find("swarm worker"), std::string::npos) << m;
    // A newer engine is spoken to at the newest version this client was tested with.
    EXPECT_EQ(engine.requests().at(1), "GET /v1.41/info");
}

TEST(FakeEngine, PreflightOnAManagerPassesAndSaysWhatSwarmCannotSet) {
    FakeEngine engine(
        [](const std::string&, const std::string& path) {
            if (path == "/version") return version("1.41");
            return Answer{200, R"({"Swarm":{"LocalNodeState":"active","ControlAvailable":true}})"};
        },
        false);
    std::vector<std::string> log;
    auto rt = runtime_for(engine.address(), &log);
    EXPECT_EQ(preflight_error(*rt), "");
    bool warned = false;
    for (const auto& l : log) warned = warned || l.find("no-new-privileges") != std::string::npos;
    EXPECT_TRUE(warned) << "no-new-privileges went unmentioned";
}

TEST(FakeEngine, AnEngineTooOldIsRefusedNamingBothVersions) {
    FakeEngine engine([](const std::string&, const std::string&) { return version("1.40"); },
                      false);
    auto rt = runtime_for(engine.address());
    std::string m = preflight_error(*rt);
    EXPECT_NE(m.find("speaks Engine API 1.40"), std::string::npos) << m;
    EXPECT_NE(m.find("at least 1.41"), std::string::npos) << m;
}

TEST(FakeEngine, ASilentEngineTimesOutWithinTheCallBudgetNamingTheCall) {
    FakeEngine engine(
        [](const std::string&, const std::string& path) {
            if (path == "/version") return version("1.41");
            return Answer{0, "", true};
        },
        false);
    auto rt = runtime_for(engine.address());
    auto t0 = std::chrono::steady_clock::now();
    std::int32_t code = 0;
    std::string m = preflight_error(*rt, &code);
    auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_EQ(code, RADIAL_E_UNAVAILABLE);
    EXPECT_NE(m.find("GET /info"), std::string::npos) << m;
    EXPECT_NE(m.find("within the call's budget"), std::string::npos) << m;
    EXPECT_LT(took, std::chrono::seconds(3)) << "the 400 ms budget was not kept";
}

TEST(FakeEngine, ListByLabelKeepsExactlyThePrefix) {
    FakeEngine engine(
        [](const std::string&, const std::string& path) {
            if (path == "/version") return version("1.41");
            return Answer{200,
                          R"([{"ID":"a","Spec":{"Labels":{"radial.label":"radial-turn-i1-t1"}}},
                                   {"ID":"b","Spec":{"Labels":{"radial.label":"radial-turn-i10-t1"}}},
                                   {"ID":"c","Spec":{"Labels":{"radial.label":"radial-turn-i1-t2"}}},
                                   {"ID":"d","Spec":{"Labels":{"other":"x"}}}])"};
        },
        false);
    auto rt = runtime_for(engine.address());
    EXPECT_EQ(rt->list_by_label("radial-turn-i1-"),
              (std::vector<std::string>{"radial-turn-i1-t1", "radial-turn-i1-t2"}));
    EXPECT_NE(engine.requests().back().find("/v1.41/services?filters="), std::string::npos);
}

TEST(FakeEngine, AFollowedStreamDeliversEachPieceAsItArrives) {
    // The engine sends one frame, then holds the connection open: read() must return that frame
    // now, not wait for more bytes or the end of the body.
    std::mutex m;
    std::condition_variable cv;
    bool released = false;
    FakeEngine engine(
        [&](const std::string&, const std::string& path) {
            if (path == "/version") return version("1.41");
            Answer a;
            a.body = engine_api::encode_frame(1, "first\n");
            a.rest = engine_api::encode_frame(2, "second\n");
            a.wait_for_release = [&] {
                std::unique_lock lock(m);
                cv.wait(lock, [&] { return released; });
            };
            return a;
        },
        false);
    engine_api::EngineClient client(engine_api::parse_engine_address(engine.address()),
                                    std::chrono::milliseconds(2000));
    auto stream = client.open_stream("/services/x/logs?follow=1", "following");
    std::string out, err, chunk;
    engine_api::FrameDemux demux([&](std::uint32_t s, const char* p, std::size_t n) {
        (s == 2 ? err : out).append(p, n);
        return true;
    });
    while (out.empty() && stream->read(chunk)) demux.feed(chunk);
    EXPECT_EQ(out, "first\n") << "the first frame did not arrive before the engine sent more";
    {
        std::lock_guard lock(m);
        released = true;
    }
    cv.notify_all();
    while (stream->read(chunk)) demux.feed(chunk);
    EXPECT_EQ(err, "second\n");
    EXPECT_TRUE(demux.at_frame_boundary());
}

TEST(FakeEngine, StopEndsABlockedReadFromAnotherThread) {
    std::mutex m;
    std::condition_variable cv;
    bool released = false;
    FakeEngine engine(
        [&](const std::string&, const std::string& path) {
            if (path == "/version") return version("1.41");
            Answer a;
            a.body = engine_api::encode_frame(1, "x");
            a.wait_for_release = [&] {
                std::unique_lock lock(m);
                cv.wait(lock, [&] { return released; });
            };
            return a;
        },
        false);
    engine_api::EngineClient client(engine_api::parse_engine_address(engine.address()),
                                    std::chrono::milliseconds(2000));
    auto stream = client.open_stream("/services/x/logs?follow=1", "following");
    std::string chunk;
    ASSERT_TRUE(stream->read(chunk));
    std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100)); // let read() block first
        stream->stop();
    });
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_FALSE(stream->read(chunk));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
    stopper.join();
    {
        std::lock_guard lock(m);
        released = true;
    }
    cv.notify_all();
}

TEST(FakeEngine, AnUnknownConfigKeyOrABadHostIsInvalid) {
    try {
        runtime_for("ssh://manager");
        FAIL() << "ssh:// accepted";
    } catch (const radial::plugin::Error& e) {
        EXPECT_EQ(e.code(), RADIAL_E_INVALID);
        EXPECT_EQ(e.key(), "host");
    }
}

} // namespace
} // namespace radial::swarm
