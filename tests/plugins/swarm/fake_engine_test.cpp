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

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "../../support/plugin_error.h"
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
    std::string headers;        // extra header lines, each ending in "\r\n"
    std::size_t chunk_size = 0; // non-zero: `body` goes as chunks of this many bytes, in one send
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
        thread_.join(); // then the streams, fd_, held_ and dir_ go
        for (auto& t : streams_) t.join();
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
                // On its own thread: the engine answers other calls while a stream is held.
                streams_.emplace_back([a = std::move(a), conn = std::move(conn)] {
                    const int c = conn.get();
                    auto chunk = [](const std::string& b) {
                        char len[32];
                        std::snprintf(len, sizeof(len), "%zx\r\n", b.size());
                        return std::string(len) + b + "\r\n";
                    };
                    std::string head =
                        "HTTP/1.1 200 OK\r\nContent-Type: "
                        "application/vnd.docker.multiplexed-stream\r\n"
                        "Transfer-Encoding: chunked\r\n\r\n";
                    const std::size_t step = a.chunk_size ? a.chunk_size : a.body.size();
                    for (std::size_t at = 0; at < a.body.size(); at += step)
                        head += chunk(a.body.substr(at, step));
                    (void)!::send(c, head.data(), head.size(), MSG_NOSIGNAL);
                    a.wait_for_release();
                    std::string tail = (a.rest.empty() ? "" : chunk(a.rest)) + "0\r\n\r\n";
                    (void)!::send(c, tail.data(), tail.size(), MSG_NOSIGNAL);
                });
                continue;
            }
            std::string res = "HTTP/1.1 " + std::to_string(a.status) +
                              " X\r\nContent-Type: application/json\r\nContent-Length: " +
                              std::to_string(a.body.size()) + "\r\nConnection: close\r\n" +
                              a.headers + "\r\n" + a.body;
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
    std::vector<std::thread> streams_; // streamed answers, each on its own thread
};

// The engine's answer to GET /_ping (its API version in a header) and to GET /version.
Answer version(const std::string& api) {
    Answer a{200, R"({"Version":"20.10.24","ApiVersion":")" + api + R"(","MinAPIVersion":"1.12"})"};
    a.headers = "API-Version: " + api + "\r\n";
    return a;
}

// A SwarmRuntime whose [run.swarm] is host = `address`, commandTimeout = 400 ms, and with
// `no_default_bridge`, noDefaultBridge = true.
std::unique_ptr<SwarmRuntime> runtime_for(const std::string& address,
                                          std::vector<std::string>* log = nullptr,
                                          bool no_default_bridge = false,
                                          const char* pull = nullptr) {
    static std::vector<std::string>* sink;
    sink = log;
    radial_config_entry entries[4]{};
    entries[0].key = to_c("host");
    entries[0].kind = RADIAL_CONFIG_STRING;
    entries[0].string_value = to_c(address);
    entries[1].key = to_c("commandTimeout");
    entries[1].kind = RADIAL_CONFIG_INT;
    entries[1].int_value = 400;
    entries[2].key = to_c("noDefaultBridge");
    entries[2].kind = RADIAL_CONFIG_BOOL;
    entries[2].int_value = 1;
    std::uint32_t n = no_default_bridge ? 3u : 2u;
    if (pull != nullptr) {
        entries[n].key = to_c("pull");
        entries[n].kind = RADIAL_CONFIG_STRING;
        entries[n].string_value = to_c(pull);
        ++n;
    }
    radial_config c{};
    c.struct_size = sizeof(c);
    c.section = to_c("run.swarm");
    c.entries = {entries, n, sizeof(radial_config_entry)};
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
            if (path == "/_ping" || path == "/version") return version("1.41");
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
    EXPECT_EQ(reqs[0], "GET /_ping");
    EXPECT_EQ(reqs[1], "GET /v1.41/info");
}

TEST(FakeEngine, PreflightOnAWorkerNamesTheManagerFix) {
    FakeEngine engine(
        [](const std::string&, const std::string& path) {
            if (path == "/_ping" || path == "/version") return version("1.43");
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
            if (path == "/_ping" || path == "/version") return version("1.41");
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

// The manager's data root (DockerRootDir), learnt at the preflight, is never a task's mount: a run
// naming it creates no secret and no service (docs/design.md §7.5).
TEST(FakeEngine, AMountOfTheManagersDataRootIsRefusedBeforeAnythingIsCreated) {
    internal::TempDir root(std::filesystem::temp_directory_path(), "radial-data-root-");
    const std::string info = nlohmann::json{
        {"Swarm", {{"LocalNodeState", "active"}, {"ControlAvailable", true}}},
        {"DockerRootDir",
         root.path().string()}}.dump();
    FakeEngine engine(
        [&](const std::string&, const std::string& path) {
            if (path == "/_ping" || path == "/version") return version("1.41");
            if (path.ends_with("/info")) return Answer{200, info};
            return Answer{500, R"({"message":"unexpected"})"};
        },
        false);
    auto rt = runtime_for(engine.address());
    ASSERT_EQ(preflight_error(*rt), "");
    ContainerSpec s;
    s.label = "radial-turn-i-1";
    s.image = "radial/busybox:latest";
    s.argv = {"true"};
    s.mounts = {{(root.path() / "volumes").string(), "/work", false}};
    std::filesystem::create_directory(root.path() / "volumes");
    radial::plugin::Output out(nullptr);
    try {
        rt->run(s, out);
        FAIL() << "the data root was mounted";
    } catch (const radial::plugin::Error& e) {
        EXPECT_EQ(e.code(), RADIAL_E_REFUSED) << e.what();
        EXPECT_EQ(e.key(), "mounts[0]");
        EXPECT_NE(std::string(e.what()).find("data root '" + root.path().string() + "'"),
                  std::string::npos)
            << e.what();
    }
    // An instance created again without a preflight (its plugin host process crashed) asks.
    auto fresh = runtime_for(engine.address());
    try {
        fresh->run(s, out);
        FAIL() << "the data root was mounted without a preflight";
    } catch (const radial::plugin::Error& e) {
        EXPECT_EQ(e.code(), RADIAL_E_REFUSED) << e.what();
    }
    for (const auto& r : engine.requests()) EXPECT_EQ(r.find("POST"), std::string::npos) << r;
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
            if (path == "/_ping" || path == "/version") return version("1.41");
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

// Services, and what a run left without its service: a secret (its value in the raft store), a
// task's container on this node. Only labels with exactly the prefix.
TEST(FakeEngine, ListByLabelKeepsExactlyThePrefix) {
    FakeEngine engine(
        [](const std::string&, const std::string& path) {
            if (path == "/_ping" || path == "/version") return version("1.41");
            if (path.starts_with("/v1.41/services?"))
                return Answer{200,
                              R"([{"ID":"a","Spec":{"Labels":{"radial.label":"radial-turn-i1-t1"}}},
                             {"ID":"b","Spec":{"Labels":{"radial.label":"radial-turn-i10-t1"}}},
                             {"ID":"d","Spec":{"Labels":{"other":"x"}}}])"};
            if (path.starts_with("/v1.41/secrets?"))
                return Answer{200,
                              R"([{"ID":"s","Spec":{"Labels":{"radial.label":"radial-turn-i1-t2"}}},
                             {"ID":"s2","Spec":{"Labels":{"radial.label":"radial-turn-i1-t1"}}}])"};
            if (path.starts_with("/v1.41/containers/json?all=1&filters="))
                return Answer{200, R"([{"Id":"c","Labels":{"radial.label":"radial-turn-i1-t3"}},
                                       {"Id":"e","Labels":{"radial.label":"radial-turn-i10-t3"}}])"};
            return Answer{404, R"({"message":"not scripted"})"};
        },
        false);
    auto rt = runtime_for(engine.address());
    EXPECT_EQ(
        rt->list_by_label("radial-turn-i1-"),
        (std::vector<std::string>{"radial-turn-i1-t1", "radial-turn-i1-t2", "radial-turn-i1-t3"}));
}

// kill() removes what the engine lists under the turn's label: only what carries exactly that
// label, whatever the engine answered its filter with (an engine or a proxy that ignored it would
// otherwise have every service, container and secret on it removed at a turn's end).
TEST(FakeEngine, KillRemovesOnlyWhatCarriesItsLabelWhateverTheFilterAnswered) {
    FakeEngine engine(
        [](const std::string& method, const std::string& path) {
            if (path == "/_ping" || path == "/version") return version("1.41");
            if (method == "DELETE") return Answer{200, "{}"};
            if (path.starts_with("/v1.41/services?") || path.starts_with("/v1.41/secrets?"))
                return Answer{
                    200,
                    R"([{"ID":"mine","Spec":{"Labels":{"radial.label":"radial-turn-i1-t1"}}},
                                  {"ID":"other","Spec":{"Labels":{"radial.label":"radial-turn-i1-t2"}}},
                                  {"ID":"foreign","Spec":{"Labels":{"app":"db"}}},
                                  {"ID":"bare"}, 7])"};
            if (path.starts_with("/v1.41/containers/json?"))
                return Answer{200,
                              R"([{"Id":"c0ffee","Labels":{"radial.label":"radial-turn-i1-t1"}},
                                       {"Id":"beef","Labels":{"radial.label":"radial-turn-i1-t10"}},
                                       {"Id":"dead"}])"};
            return Answer{404, R"({"message":"no such thing"})"};
        },
        false);
    auto rt = runtime_for(engine.address());
    rt->kill("radial-turn-i1-t1");
    std::vector<std::string> deleted;
    for (const auto& r : engine.requests())
        if (r.starts_with("DELETE ")) deleted.push_back(r.substr(0, r.find('?')));
    EXPECT_EQ(deleted, (std::vector<std::string>{"DELETE /v1.41/services/mine",
                                                 "DELETE /v1.41/containers/c0ffee",
                                                 "DELETE /v1.41/secrets/mine"}));
}

// Holds streamed answers until released; releases on destruction (declared after the engine, so
// the engine's stream threads can end before it joins them).
struct Gate {
    std::mutex m;
    std::condition_variable cv;
    bool open = false;
    void wait() {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return open; });
    }
    void release() {
        {
            std::lock_guard lock(m);
            open = true;
        }
        cv.notify_all();
    }
};
struct Releaser {
    Gate& gate;
    ~Releaser() { gate.release(); }
};

// A route: the engine's version, and for any other call a streamed answer: `body` (as chunks of
// `chunk_size` bytes; 0: one chunk), then nothing until `gate` opens, then `rest` and the end.
FakeEngine::Route held_stream(Gate& gate, std::string body, std::string rest = "",
                              std::size_t chunk_size = 0) {
    return [&gate, body, rest, chunk_size](const std::string&, const std::string& path) {
        if (path == "/_ping" || path == "/version") return version("1.41");
        Answer a;
        a.body = body;
        a.rest = rest;
        a.chunk_size = chunk_size;
        a.wait_for_release = [&gate] { gate.wait(); };
        return a;
    };
}

TEST(FakeEngine, AFollowedStreamDeliversEachPieceAsItArrives) {
    // The engine sends one frame, then holds the connection open: read() must return that frame
    // now, not wait for more bytes or the end of the body.
    Gate gate;
    FakeEngine engine(held_stream(gate, engine_api::encode_frame(1, "first\n"),
                                  engine_api::encode_frame(2, "second\n")),
                      false);
    Releaser releaser{gate}; // after the engine: a failed assertion still ends its stream
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
    gate.release();
    while (stream->read(chunk)) demux.feed(chunk);
    EXPECT_EQ(err, "second\n");
    EXPECT_TRUE(demux.at_frame_boundary());
}

TEST(FakeEngine, AReadReturnsEverythingAlreadyReceivedNotOneChunk) {
    // A followed log stream carries every record as its own HTTP chunk: 2000 records of 16 bytes
    // sent at once must come out of a few reads, not one read (one round through the client's
    // event loop) per record.
    Gate gate;
    std::string records;
    for (int i = 0; i < 2000; ++i)
        records += engine_api::encode_frame(1, "line" + std::to_string(1000 + i) + "\n");
    FakeEngine engine(held_stream(gate, records, "", 16), false);
    Releaser releaser{gate}; // after the engine: a failed assertion still ends its stream
    engine_api::EngineClient client(engine_api::parse_engine_address(engine.address()),
                                    std::chrono::milliseconds(2000));
    auto stream = client.open_stream("/containers/x/logs?follow=1", "following");
    std::string got, chunk;
    int reads = 0;
    while (got.size() < records.size() && stream->read(chunk)) {
        got += chunk;
        ++reads;
    }
    gate.release();
    while (stream->read(chunk)) got += chunk;
    EXPECT_EQ(got, records);
    EXPECT_LE(reads, 20) << "2000 chunks of 16 bytes, all sent before the first read, took "
                         << reads << " reads";
}

TEST(FakeEngine, StopEndsABlockedReadFromAnotherThread) {
    Gate gate;
    FakeEngine engine(held_stream(gate, engine_api::encode_frame(1, "x")), false);
    Releaser releaser{gate}; // after the engine: a failed assertion still ends its stream
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
    gate.release();
}

// --- the output path (docs/design.md §13.11) ---------------------------------------------------

// The task's output: "one\ntwo\n" on stdout, "err1\nerr2\n" on stderr, one frame per line as
// the engine sends it, in this order: err1 and one at 08:00:00.1, err2 and two at 08:00:10.2.
// Through the broker without timestamps; from the container with them (timestamps=1).
const std::string kErr = engine_api::encode_frame(2, "err1\nerr2\n");
const std::string kOut = engine_api::encode_frame(1, "one\ntwo\n");
const std::string kT0 = "2026-12-01T08:00:00.100000000Z ", kT1 = "2026-12-01T08:00:10.200000000Z ";
const std::string kEarly =
    engine_api::encode_frame(2, kT0 + "err1\n") + engine_api::encode_frame(1, kT0 + "one\n");
const std::string kLate =
    engine_api::encode_frame(2, kT1 + "err2\n") + engine_api::encode_frame(1, kT1 + "two\n");
// The newest delivered stamp, 08:00:10.2, less the 5 s margin: what the rest must be read since.
const std::string kSince = "since=1796112005.200000000";

// A scripted one-task run: the task names its container c1 from the first poll, and completes
// with exit 0 at the third. `local`: whether this engine knows c1. `follow_body`: the first
// chunk of a followed log stream (of whichever path); `follow_ends`: whether the stream then ends
// (else it is held until the gate opens). The container's log honours `since` as the engine does
// (only lines stamped at or after it) for the one value the runtime should ask for.
struct ScriptedRun {
    bool local = true;
    std::string follow_body;
    bool follow_ends = false;
    Gate* gate = nullptr;
    std::atomic<int> polls{0};

    Answer operator()(const std::string& method, const std::string& path) {
        if (path == "/_ping" || path == "/version") return version("1.41");
        if (path.starts_with("/v1.41/images/")) return {200, R"({"Id":"sha256:abc","Config":{}})"};
        if (method == "POST" && path == "/v1.41/services/create") return {201, R"({"ID":"svc1"})"};
        if (path.starts_with("/v1.41/tasks?")) {
            if (++polls < 3)
                return {
                    200,
                    R"([{"Status":{"State":"running","ContainerStatus":{"ContainerID":"c1"}}}])"};
            return {
                200,
                R"([{"Status":{"State":"complete","ContainerStatus":{"ContainerID":"c1","ExitCode":0}}}])"};
        }
        if (path == "/v1.41/containers/c1/json")
            return local ? Answer{200, R"({"State":{"OOMKilled":false}})"}
                         : Answer{404, R"({"message":"No such container: c1"})"};
        if (path.find("/logs?follow=1") != std::string::npos) {
            Answer a;
            a.body = follow_body;
            a.wait_for_release = [this] {
                if (!follow_ends) gate->wait();
            };
            return a;
        }
        if (path.starts_with("/v1.41/containers/c1/logs?follow=0"))
            return {200, path.find(kSince) != std::string::npos ? kLate : kEarly + kLate};
        if (path.find("/logs?follow=0") != std::string::npos) return {200, kErr + kOut};
        if (path == "/v1.41/nodes") return {200, R"([{"ID":"n1"}])"};
        if (path == "/v1.41/networks/bridge") return {404, R"({"message":"not found"})"};
        if (method == "GET") return {200, "[]"}; // the services and secrets left to remove
        return {404, R"({"message":"not scripted"})"};
    }
};

struct Captured {
    std::mutex m;
    std::string out, err;
    static std::int32_t write(void* ctx, std::uint32_t stream, const std::uint8_t* data,
                              std::size_t size) {
        auto* c = static_cast<Captured*>(ctx);
        std::lock_guard lock(c->m);
        (stream == RADIAL_STREAM_STDERR ? c->err : c->out)
            .append(reinterpret_cast<const char*>(data), size);
        return 0;
    }
};

radial::plugin::RunResult run_scripted(FakeEngine& engine, Captured& cap) {
    auto rt = runtime_for(engine.address());
    ContainerSpec spec;
    spec.label = "radial-turn-fake-1";
    spec.image = "radial/busybox:latest";
    spec.argv = {"sh", "-c", "true"};
    radial_output_sink sink{sizeof(radial_output_sink), &cap, &Captured::write};
    radial::plugin::Output out(&sink);
    return rt->run(spec, out);
}

std::size_t count_with(const std::vector<std::string>& reqs, const std::string& part) {
    return static_cast<std::size_t>(std::count_if(reqs.begin(), reqs.end(), [&](const auto& r) {
        return r.find(part) != std::string::npos;
    }));
}

TEST(FakeEngine, ATaskOnThisEngineIsReadFromItsContainerThenFromShortlyBeforeItsEnd) {
    // The followed stream delivers everything and ends on its own (not trusted: Docker 20.10
    // ends it early at times): the rest is read from 5 s before the newest stamp, and every byte
    // it repeats is skipped.
    Gate gate;
    ScriptedRun script;
    script.follow_body = kEarly + kLate;
    script.follow_ends = true;
    script.gate = &gate;
    FakeEngine engine(std::ref(script), false);
    Releaser releaser{gate};
    Captured cap;
    auto r = run_scripted(engine, cap);
    EXPECT_EQ(r.flags, RADIAL_RUN_EXITED);
    EXPECT_EQ(cap.out, "one\ntwo\n");
    EXPECT_EQ(cap.err, "err1\nerr2\n");
    auto reqs = engine.requests();
    EXPECT_EQ(count_with(reqs, "/containers/c1/logs?follow=1&stdout=1&stderr=1&timestamps=1"), 1u);
    EXPECT_EQ(
        count_with(reqs, "/containers/c1/logs?follow=0&stdout=1&stderr=1&timestamps=1&" + kSince),
        1u);
    EXPECT_EQ(count_with(reqs, "/services/svc1/logs"), 0u);
}

TEST(FakeEngine, AStalledContainerStreamIsFinishedFromItsLogWithoutRepeatingAByte) {
    // The followed stream stops mid-frame, then stalls: the drain stops it and reads the rest of
    // the container's log once, skipping exactly what was delivered.
    Gate gate;
    ScriptedRun script;
    // The last frame is cut after its stamp and one byte of its message ("t" of "two\n").
    script.follow_body = kEarly + kLate.substr(0, kLate.size() - 3);
    script.gate = &gate;
    FakeEngine engine(std::ref(script), false);
    Releaser releaser{gate};
    Captured cap;
    auto r = run_scripted(engine, cap);
    EXPECT_EQ(r.flags, RADIAL_RUN_EXITED);
    EXPECT_EQ(cap.out, "one\ntwo\n");
    EXPECT_EQ(cap.err, "err1\nerr2\n");
    auto reqs = engine.requests();
    EXPECT_EQ(count_with(reqs, "/containers/c1/logs?follow=1"), 1u);
    EXPECT_EQ(
        count_with(reqs, "/containers/c1/logs?follow=0&stdout=1&stderr=1&timestamps=1&" + kSince),
        1u);
    EXPECT_EQ(count_with(reqs, "/services/svc1/logs"), 0u);
}

TEST(FakeEngine, ATaskOnAnotherNodeIsReadThroughTheBrokerWithoutRepeatingAByte) {
    Gate gate;
    ScriptedRun script;
    script.local = false; // this engine does not know c1
    script.follow_body = kErr + kOut.substr(0, 8 + 5);
    script.gate = &gate;
    FakeEngine engine(std::ref(script), false);
    Releaser releaser{gate};
    Captured cap;
    auto r = run_scripted(engine, cap);
    EXPECT_EQ(r.flags, RADIAL_RUN_EXITED);
    EXPECT_EQ(cap.out, "one\ntwo\n");
    EXPECT_EQ(cap.err, "err1\nerr2\n");
    auto reqs = engine.requests();
    EXPECT_EQ(count_with(reqs, "/services/svc1/logs?follow=1&stdout=1&stderr=1"), 1u);
    EXPECT_EQ(count_with(reqs, "/services/svc1/logs?follow=0"), 1u);
    EXPECT_EQ(count_with(reqs, "/containers/c1/logs"), 0u);
}

// A task whose deadline passed while the engine cannot remove its service (it answers every
// DELETE with 500, as one restarting): the run is no "timed out", which would say the box is
// gone, but an error of the engine, its service asked again meanwhile; once the engine removes it,
// the same run ends as timed out.
struct UnremovableRun {
    Gate* gate = nullptr;
    std::atomic<int> deletes{0};
    int deletes_failing = 1 << 30; // how many DELETEs of the service fail before one succeeds
    std::atomic<bool> removed{false};
    // The service goes, but its task's container on this node runs on (its DELETE fails).
    bool container_stays = false;

    Answer operator()(const std::string& method, const std::string& path) {
        if (path == "/_ping" || path == "/version") return version("1.41");
        if (path.starts_with("/v1.41/images/")) return {200, R"({"Id":"sha256:abc","Config":{}})"};
        if (method == "POST" && path == "/v1.41/services/create") return {201, R"({"ID":"svc1"})"};
        if (path.starts_with("/v1.41/tasks?"))
            return {200,
                    R"([{"Status":{"State":"running","ContainerStatus":{"ContainerID":"c1"}}}])"};
        if (path == "/v1.41/containers/c1/json")
            return {404, R"({"message":"No such container: c1"})"};
        if (path.find("/logs?follow=1") != std::string::npos) {
            Answer a;
            a.wait_for_release = [this] { gate->wait(); };
            return a;
        }
        if (method == "GET" && path.starts_with("/v1.41/services?"))
            return {200, removed ? "[]"
                                 : R"([{"ID":"svc1","Spec":{"Labels":{"radial.label":)"
                                   R"("radial-turn-fake-1"}}}])"};
        if (method == "DELETE" && path == "/v1.41/services/svc1") {
            if (++deletes <= deletes_failing) return {500, R"({"message":"engine restarting"})"};
            removed = true;
            return {200, ""};
        }
        if (container_stays && method == "GET" && path.starts_with("/v1.41/containers/json?"))
            return {200, R"([{"Id":"c1","Labels":{"radial.label":"radial-turn-fake-1"}}])"};
        if (container_stays && method == "DELETE" && path.starts_with("/v1.41/containers/c1"))
            return {500, R"({"message":"device busy"})"};
        if (path == "/v1.41/nodes") return {200, R"([{"ID":"n1"}])"};
        if (path == "/v1.41/networks/bridge") return {404, R"({"message":"not found"})"};
        if (method == "GET") return {200, "[]"}; // the containers and secrets left to remove
        return {404, R"({"message":"not scripted"})"};
    }
};

radial::plugin::RunResult run_with_deadline(FakeEngine& engine) {
    auto rt = runtime_for(engine.address());
    ContainerSpec spec;
    spec.label = "radial-turn-fake-1";
    spec.image = "radial/busybox:latest";
    spec.argv = {"sleep", "600"};
    spec.timeout_ms = 200;
    Captured cap;
    radial_output_sink sink{sizeof(radial_output_sink), &cap, &Captured::write};
    radial::plugin::Output out(&sink);
    return rt->run(spec, out);
}

TEST(FakeEngine, ARunWhoseServiceCannotBeRemovedIsNoTimeoutButAnEngineError) {
    Gate gate;
    UnremovableRun script;
    script.gate = &gate;
    FakeEngine engine(std::ref(script), false);
    Releaser releaser{gate};
    // A run whose task may still run is no ended one: an error.
    const auto e = radial::test::error_of([&] { run_with_deadline(engine); });
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE) << e.what();
    EXPECT_NE(std::string(e.what()).find("its service could not be removed"), std::string::npos)
        << e.what();
    EXPECT_GT(script.deletes.load(), 1) << "the removal was not asked again";

    Gate later_gate;
    UnremovableRun later;
    later.gate = &later_gate;
    later.deletes_failing = 2;
    FakeEngine answering(std::ref(later), false);
    Releaser later_releaser{later_gate};
    EXPECT_EQ(run_with_deadline(answering).flags, RADIAL_RUN_TIMED_OUT);
    EXPECT_EQ(later.deletes.load(), 3);
}

// The service removed, its task's container still running on this node: not ended either.
TEST(FakeEngine, ARunWhoseTasksContainerStillRunsIsNoTimeoutButAnEngineError) {
    Gate staying_gate;
    UnremovableRun staying;
    staying.gate = &staying_gate;
    staying.deletes_failing = 0;
    staying.container_stays = true;
    FakeEngine stuck(std::ref(staying), false);
    Releaser staying_releaser{staying_gate};
    const auto e = radial::test::error_of([&] { run_with_deadline(stuck); });
    EXPECT_EQ(e.code(), RADIAL_E_UNAVAILABLE) << e.what();
}

// Swarm has no network "none": a task without a network attachment joins its node's default
// bridge, with the node's outbound access. Such a run (a check: no network, no host ports) is
// refused before anything exists unless that bridge is known absent: on one node whose engine has
// no network "bridge", or on the operator's word (noDefaultBridge), which the preflight checks
// against the manager.
struct BridgedSwarm {
    int nodes = 1;
    bool bridge = true;
    Answer operator()(const std::string& method, const std::string& path) {
        if (path == "/_ping" || path == "/version") return version("1.41");
        if (path == "/v1.41/info")
            return {200, R"({"Swarm":{"LocalNodeState":"active","ControlAvailable":true}})"};
        if (path == "/v1.41/nodes") {
            std::string list = "[";
            for (int i = 0; i < nodes; ++i) list += std::string(i ? "," : "") + R"({"ID":"n"})";
            return {200, list + "]"};
        }
        if (path == "/v1.41/networks/bridge")
            return bridge ? Answer{200, R"({"Name":"bridge","Driver":"bridge"})"}
                          : Answer{404, R"({"message":"not found"})"};
        if (method == "GET") return {200, "[]"};
        return {500, R"({"message":"nothing else is scripted"})"};
    }
};

radial::plugin::Error refusal_of_check(SwarmRuntime& rt) {
    ContainerSpec spec;
    spec.label = "radial-check-fake-1";
    spec.image = "radial/busybox:latest";
    spec.argv = {"true"};
    Captured cap;
    radial_output_sink sink{sizeof(radial_output_sink), &cap, &Captured::write};
    radial::plugin::Output out(&sink);
    return radial::test::error_of([&] { rt.run(spec, out); });
}

TEST(FakeEngine, ARunWithoutANetworkIsRefusedWhereTheTaskWouldGetADefaultBridge) {
    for (const auto& [nodes, bridge] : {std::pair{1, true}, std::pair{2, false}}) {
        BridgedSwarm script;
        script.nodes = nodes;
        script.bridge = bridge;
        FakeEngine engine(std::ref(script), false);
        auto rt = runtime_for(engine.address());
        auto e = refusal_of_check(*rt);
        EXPECT_EQ(e.code(), RADIAL_E_REFUSED) << e.what();
        EXPECT_EQ(e.key(), "network");
        EXPECT_NE(std::string(e.what()).find("run.swarm.noDefaultBridge"), std::string::npos)
            << e.what();
        EXPECT_EQ(count_with(engine.requests(), "POST "), 0u) << "something was created";
    }
    // The operator's word, checked at the preflight against the manager's own engine.
    BridgedSwarm script;
    FakeEngine engine(std::ref(script), false);
    auto rt = runtime_for(engine.address(), nullptr, true);
    EXPECT_NE(preflight_error(*rt).find("has the network 'bridge'"), std::string::npos);
}

// Nodes that pull (pulls-on-purpose: a fake engine, no registry) and an image the manager lacks:
// the image's entrypoint is unknown; the entry step that sets secret variables replaces it, so
// such a run is refused before anything is created, rather than run without the entrypoint.
// Without secrets the task keeps the image's own (docker's Args only).
TEST(FakeEngine, SecretVariablesWithAnImageTheManagerLacksAreRefusedNotRunWithoutItsEntrypoint) {
    ScriptedRun script;
    FakeEngine engine(
        [&](const std::string& method, const std::string& path) {
            if (path.starts_with("/v1.41/images/"))
                return Answer{404, R"({"message":"no such image"})"};
            return script(method, path);
        },
        false);
    auto rt = runtime_for(engine.address(), nullptr, false, "always");
    ContainerSpec spec;
    spec.label = "radial-turn-fake-1";
    spec.image = "example/with-entrypoint:1";
    spec.argv = {"script.py"};
    spec.env.push_back({"API_KEY", "s3cret-value-0123", true});
    Captured cap;
    radial_output_sink sink{sizeof(radial_output_sink), &cap, &Captured::write};
    radial::plugin::Output out(&sink);
    auto e = radial::test::error_of([&] { rt->run(spec, out); });
    EXPECT_EQ(e.code(), RADIAL_E_NOT_FOUND) << e.what();
    EXPECT_EQ(e.key(), "image");
    EXPECT_NE(std::string(e.what()).find("entrypoint is unknown"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("docker load"), std::string::npos) << e.what();
    EXPECT_EQ(count_with(engine.requests(), "POST "), 0u) << "something was created";
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
