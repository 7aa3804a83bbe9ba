// tests/support/unix_socket_proxy.h — a unix-socket forwarder a test controls, to make an engine
// unreachable and reachable again for one radiald without touching the shared engine: point
// `[run.docker] host = "unix://<path()>"` at it, then cut() and restore().
//
// One thread polls the listening socket and every forwarded connection. While cut, every
// connection in flight is closed and each new one is accepted and closed at once (a client sees
// its engine vanish: EOF, "connection reset"); restore() forwards new connections again. With
// hold_answers_to(), the engine does a request's work and the client does not hear of it until
// release_held().
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <radial/internal/unique_fd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace radial::test {

class UnixSocketProxy {
public:
    // Listens on `path` (created; removed by the destructor) and forwards to `target`.
    UnixSocketProxy(std::string path, std::string target)
        : path_(std::move(path)), target_(std::move(target)) {
        listen_fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
        sockaddr_un a = address(path_);
        if (!listen_fd_ ||
            ::bind(listen_fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
            ::listen(listen_fd_.get(), 64) != 0)
            throw std::runtime_error("proxy: cannot listen on " + path_ + ": " +
                                     std::strerror(errno));
        int wake[2];
        if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0)
            throw std::runtime_error(std::string("proxy: pipe2: ") + std::strerror(errno));
        wake_read_.reset(wake[0]);
        wake_write_.reset(wake[1]);
        thread_ = std::thread([this] { loop(); });
    }
    ~UnixSocketProxy() {
        stop_ = true;
        poke();
        thread_.join(); // the owned descriptors close after this
        ::unlink(path_.c_str());
    }
    UnixSocketProxy(const UnixSocketProxy&) = delete;
    UnixSocketProxy& operator=(const UnixSocketProxy&) = delete;

    const std::string& path() const { return path_; }

    // The engine "goes away": open connections are closed, new ones refused. Returns once the
    // forwarding thread has closed them.
    void cut() {
        cut_ = true;
        std::uint64_t seen = rounds_;
        poke();
        while (rounds_ < seen + 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    // The engine answers again.
    void restore() { cut_ = false; }
    // While on, every Engine API removal (an HTTP request starting "DELETE ") is answered
    // "500 removal refused for the test" instead of being forwarded; everything else still is.
    void refuse_removals(bool on) { refuse_removals_ = on; }
    // While `needle` is not empty, a request whose head (the first bytes the client sends on a
    // connection, or after its last answer) contains it is passed on, and its connection's
    // answers are held from then on: the engine has done the work, and its client waits as a
    // client killed at that moment would have. held() counts such connections.
    void hold_answers_to(std::string needle) {
        std::lock_guard l(needle_mutex_);
        needle_ = std::move(needle);
    }
    std::size_t held() const { return held_; }
    // Stops holding: the answers held so far are passed on, and no more are held.
    void release_held() {
        hold_answers_to("");
        release_ = true;
        poke();
    }
    // Connections accepted so far (forwarded or refused).
    std::size_t accepted() const { return accepted_; }

private:
    static sockaddr_un address(const std::string& p) {
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        if (p.size() >= sizeof(a.sun_path)) throw std::runtime_error("proxy: path too long: " + p);
        std::memcpy(a.sun_path, p.c_str(), p.size() + 1);
        return a;
    }
    void poke() {
        char b = 1;
        [[maybe_unused]] ssize_t n = ::write(wake_write_.get(), &b, 1);
    }
    internal::UniqueFd connect_target() const {
        internal::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        sockaddr_un a = address(target_);
        if (fd && ::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) return fd;
        return internal::UniqueFd();
    }
    // Copies what is readable from `from` to `to`; false when the connection is over.
    static bool pump(int from, int to) {
        char buf[65536];
        ssize_t n = ::read(from, buf, sizeof(buf));
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
        if (n <= 0) return false;
        for (ssize_t done = 0; done < n;) {
            ssize_t w = ::send(to, buf + done, static_cast<std::size_t>(n - done), MSG_NOSIGNAL);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return false;
            done += w;
        }
        return true;
    }
    // With refuse_removals on: when the client's next bytes are a DELETE request, answers it
    // with an engine error itself and returns true (the pair is then closed).
    bool refused_removal(int client) const {
        if (!refuse_removals_) return false;
        char head[7];
        if (::recv(client, head, sizeof(head), MSG_PEEK | MSG_DONTWAIT) != sizeof(head) ||
            std::memcmp(head, "DELETE ", sizeof(head)) != 0)
            return false;
        static const std::string body = R"({"message":"removal refused for the test"})";
        const std::string res =
            "HTTP/1.1 500 Internal Server Error\r\nContent-Type: "
            "application/json\r\nContent-Length: " +
            std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
        [[maybe_unused]] ssize_t n = ::send(client, res.data(), res.size(), MSG_NOSIGNAL);
        return true;
    }
    // Whether the client's next bytes on `client` hold the needle of hold_answers_to().
    bool asks_for_held_answer(int client) {
        std::string needle;
        {
            std::lock_guard l(needle_mutex_);
            needle = needle_;
        }
        if (needle.empty()) return false;
        char head[8192];
        const ssize_t n = ::recv(client, head, sizeof(head), MSG_PEEK | MSG_DONTWAIT);
        return n > 0 && std::string_view(head, static_cast<std::size_t>(n)).find(needle) !=
                            std::string_view::npos;
    }
    void loop() {
        while (!stop_) {
            if (cut_) pairs_.clear();
            if (release_.exchange(false))
                for (auto& p : pairs_) p.held = false;
            std::vector<pollfd> fds{{wake_read_.get(), POLLIN, 0}, {listen_fd_.get(), POLLIN, 0}};
            for (auto& p : pairs_) {
                fds.push_back({p.client.get(), POLLIN, 0});
                // A held connection's answers stay in the engine's socket, which is not polled
                // at all (-1): an engine that answered and closed would report POLLHUP for ever.
                fds.push_back({p.held ? -1 : p.engine.get(), POLLIN, 0});
            }
            ++rounds_;
            if (::poll(fds.data(), fds.size(), 100) < 0 && errno != EINTR) return;
            if (fds[0].revents != 0) {
                char b[64];
                while (::read(wake_read_.get(), b, sizeof(b)) > 0) {
                }
            }
            std::vector<Pair> keep;
            for (std::size_t i = 0; i < pairs_.size(); ++i) {
                auto& p = pairs_[i];
                bool ok = true;
                if (fds[2 + 2 * i].revents != 0) {
                    if (!p.held && asks_for_held_answer(p.client.get())) {
                        p.held = true;
                        ++held_;
                    }
                    ok = !refused_removal(p.client.get()) && pump(p.client.get(), p.engine.get());
                }
                if (ok && fds[3 + 2 * i].revents != 0) ok = pump(p.engine.get(), p.client.get());
                if (ok) keep.push_back(std::move(p)); // else both close here
            }
            pairs_ = std::move(keep);
            if (fds[1].revents != 0) {
                for (;;) {
                    internal::UniqueFd c(
                        ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
                    if (!c) break;
                    ++accepted_;
                    internal::UniqueFd t = cut_ ? internal::UniqueFd() : connect_target();
                    if (!t) continue; // refused: c closes here
                    pairs_.push_back(Pair{std::move(c), std::move(t), false});
                }
            }
        }
    }

    struct Pair {
        internal::UniqueFd client, engine;
        bool held = false; // hold_answers_to(): the engine's answers are not passed on
    };
    std::string path_, target_;
    internal::UniqueFd listen_fd_, wake_read_, wake_write_;
    std::atomic<bool> stop_{false}, cut_{false}, refuse_removals_{false}, release_{false};
    std::atomic<std::uint64_t> rounds_{0};
    std::atomic<std::size_t> accepted_{0}, held_{0};
    std::mutex needle_mutex_;
    std::string needle_;
    std::vector<Pair> pairs_; // the thread's own
    std::thread thread_;      // last: starts once the rest is set
};

} // namespace radial::test
