// tests/support/fake_engine.h — a scripted Docker Engine for tests of the docker runtime and of
// radiald against an engine that misbehaves: an HTTP/1.1 server on a private unix socket that
// answers each request from a route, one thread per connection, including hijacked attach streams
// (101, then raw multiplexed frames). Records every request line; no Docker Engine needed.
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace radial::test {

struct EngineAnswer {
    EngineAnswer() = default;
    EngineAnswer(int s, std::string b, bool quiet = false)
        : status(s), body(std::move(b)), silent(quiet) {}
    int status = 200;
    std::string body;
    bool silent = false; // read the request, never answer
    // A hijacked attach: answer 101, send `frames`, then hold the connection until
    // `close_after()` returns (nullptr: close at once), then close it.
    bool hijack = false;
    std::string frames;
    std::function<void()> close_after;
    // Instead: after `frames`, shut the sending side (the client reads the stream's end, as an
    // exec's that ended) and keep what the client writes until it closes (hijacked_input()).
    bool half_close = false;
    // Extra header lines of a plain answer, each ending in "\r\n" ("API-Version: 1.41\r\n").
    std::string headers;
};

// What an engine answers to GET /_ping: "OK" and its API version in a header, from which the
// client negotiates (docs/design.md §13.1).
inline EngineAnswer ping_answer(const std::string& api = "1.41") {
    EngineAnswer a(200, "OK");
    a.headers = "API-Version: " + api + "\r\nServer: Docker/20.10.24 (linux)\r\n";
    return a;
}

class FakeEngine {
public:
    using Route = std::function<EngineAnswer(const std::string& method, const std::string& path)>;

    explicit FakeEngine(Route route) : route_(std::move(route)) {
        char tmpl[] = "/tmp/radial-fake-docker-XXXXXX";
        dir_ = ::mkdtemp(tmpl);
        std::string path = dir_ + "/docker.sock";
        fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::snprintf(a.sun_path, sizeof(a.sun_path), "%s", path.c_str());
        EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
        address_ = "unix://" + path;
        ::listen(fd_, 64);
        acceptor_ = std::thread([this] { accept_loop(); });
    }
    ~FakeEngine() {
        stop_ = true;
        ::shutdown(fd_, SHUT_RDWR);
        acceptor_.join();
        {
            std::lock_guard lock(mutex_);
            for (int c : open_) ::shutdown(c, SHUT_RDWR);
        }
        for (auto& t : workers_) t.join();
        ::close(fd_);
        std::filesystem::remove_all(dir_);
    }
    FakeEngine(const FakeEngine&) = delete;
    FakeEngine& operator=(const FakeEngine&) = delete;

    const std::string& address() const { return address_; }
    // "METHOD /v1.41/path?query" for every request so far, in arrival order.
    std::vector<std::string> requests() {
        std::lock_guard lock(mutex_);
        return requests_;
    }
    // The body of the first request that starts with `prefix` ("POST /v1.41/containers/create"),
    // or "" when there was none.
    std::string body_of(const std::string& prefix) {
        std::lock_guard lock(mutex_);
        for (std::size_t i = 0; i < requests_.size(); ++i)
            if (requests_[i].starts_with(prefix)) return bodies_[i];
        return {};
    }
    // What clients wrote on half_close hijacked streams, one entry per stream once the client
    // closed it, in that order.
    std::vector<std::string> hijacked_input() {
        std::lock_guard lock(mutex_);
        return hijacked_input_;
    }
    // How many requests start with `prefix` ("DELETE /v1.41/containers/").
    int count(const std::string& prefix) {
        int n = 0;
        for (const auto& r : requests()) n += r.starts_with(prefix) ? 1 : 0;
        return n;
    }

private:
    void accept_loop() {
        while (!stop_) {
            int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (c < 0) return;
            std::lock_guard lock(mutex_);
            open_.push_back(c);
            workers_.emplace_back([this, c] { serve(c); });
        }
    }

    void serve(int c) {
        std::string req;
        char buf[4096];
        for (;;) {
            auto end = req.find("\r\n\r\n");
            if (end != std::string::npos) {
                // Read the body too (Content-Length), so that the client's write completes.
                auto cl = req.find("Content-Length: ");
                std::size_t want =
                    cl == std::string::npos || cl > end ? 0 : std::stoul(req.substr(cl + 16));
                if (req.size() >= end + 4 + want) break;
            }
            ssize_t n = ::read(c, buf, sizeof(buf));
            if (n <= 0) break;
            req.append(buf, static_cast<std::size_t>(n));
        }
        std::string line = req.substr(0, req.find("\r\n"));
        std::string method = line.substr(0, line.find(' '));
        std::string path = line.size() > method.size() ? line.substr(method.size() + 1) : "";
        path = path.substr(0, path.find(' '));
        {
            std::lock_guard lock(mutex_);
            requests_.push_back(method + " " + path);
            auto end = req.find("\r\n\r\n");
            bodies_.push_back(end == std::string::npos ? "" : req.substr(end + 4));
        }
        EngineAnswer a = route_(method, path);
        if (a.silent) {
            while (!stop_ && ::read(c, buf, sizeof(buf)) > 0) {
            }
        } else if (a.hijack) {
            std::string head =
                "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
                "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n" +
                a.frames;
            (void)!::send(c, head.data(), head.size(), MSG_NOSIGNAL);
            if (a.half_close) {
                ::shutdown(c, SHUT_WR);
                std::string input;
                for (ssize_t n; !stop_ && (n = ::read(c, buf, sizeof(buf))) > 0;)
                    input.append(buf, static_cast<std::size_t>(n));
                std::lock_guard lock(mutex_);
                hijacked_input_.push_back(std::move(input));
            } else if (a.close_after) {
                a.close_after();
            }
        } else {
            std::string res = "HTTP/1.1 " + std::to_string(a.status) +
                              " X\r\nContent-Type: application/json\r\nContent-Length: " +
                              std::to_string(a.body.size()) + "\r\nConnection: close\r\n" +
                              a.headers + "\r\n" + a.body;
            (void)!::send(c, res.data(), res.size(), MSG_NOSIGNAL);
        }
        std::lock_guard lock(mutex_);
        std::erase(open_, c);
        ::close(c);
    }

    Route route_;
    int fd_ = -1;
    std::string dir_, address_;
    std::thread acceptor_;
    std::atomic<bool> stop_{false};
    std::mutex mutex_;
    std::vector<std::string> requests_, bodies_, hijacked_input_;
    std::vector<int> open_;
    std::vector<std::thread> workers_;
};

} // namespace radial::test
