// tests/support/loopback_http_server.h — an HTTP server on an address of 127.0.0.0/8 that a test
// starts for itself (an ephemeral port, so tests never share one): for each connection it reads
// up to the end of the request head, answers with a fixed reply, and then closes or (hold) keeps
// the connection until its peer closes it, noting that. Nothing leaves the machine.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "load_factor.h"

namespace radial::test {

class LoopbackHttpServer {
public:
    LoopbackHttpServer(const char* address, std::string reply, bool hold = false)
        : reply_(std::move(reply)), hold_(hold) {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        ::inet_pton(AF_INET, address, &a.sin_addr);
        if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
            ::listen(fd_, 8) != 0)
            throw std::runtime_error(std::string("loopback server: cannot listen on ") + address);
        socklen_t len = sizeof a;
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
        port_ = ntohs(a.sin_port);
        thread_ = std::thread([this] { serve(); });
    }
    ~LoopbackHttpServer() {
        stop_ = true;
        thread_.join();
        ::close(fd_);
    }
    LoopbackHttpServer(const LoopbackHttpServer&) = delete;
    LoopbackHttpServer& operator=(const LoopbackHttpServer&) = delete;

    std::uint16_t port() const { return port_; }
    // Every request head received so far, concatenated.
    std::string received() {
        std::lock_guard l(m_);
        return received_;
    }
    int requests() const { return requests_; }
    // Waits (bounded: `s` scaled by the load factor) until a held connection saw its peer close.
    bool peer_closed_within(std::chrono::seconds s) {
        std::unique_lock l(m_);
        return cv_.wait_for(l, scaled(s), [this] { return peer_closed_; });
    }

private:
    void serve() {
        while (!stop_) {
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, 50) <= 0) continue;
            const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (c < 0) continue;
            std::string got;
            char buf[4096];
            pollfd q{c, POLLIN, 0};
            while (got.find("\r\n\r\n") == std::string::npos && ::poll(&q, 1, 5000) > 0) {
                const ssize_t n = ::read(c, buf, sizeof buf);
                if (n <= 0) break;
                got.append(buf, static_cast<std::size_t>(n));
            }
            {
                std::lock_guard l(m_);
                received_ += got;
            }
            ++requests_;
            [[maybe_unused]] auto w = ::send(c, reply_.data(), reply_.size(), MSG_NOSIGNAL);
            while (hold_ && !stop_) {
                if (::poll(&q, 1, 50) > 0 && ::read(c, buf, sizeof buf) <= 0) {
                    std::lock_guard l(m_);
                    peer_closed_ = true;
                    cv_.notify_all();
                    break;
                }
            }
            ::close(c);
        }
    }
    int fd_ = -1;
    std::uint16_t port_ = 0;
    std::string reply_;
    bool hold_;
    std::atomic<bool> stop_{false};
    std::atomic<int> requests_{0};
    std::mutex m_;
    std::condition_variable cv_;
    std::string received_;
    bool peer_closed_ = false;
    std::thread thread_;
};

} // namespace radial::test
