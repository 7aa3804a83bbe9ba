// host/egress/service_rendezvous.cpp — see service_rendezvous.h. The wire between two brokers
// (both radiald, the same uid, checked with SO_PEERCRED): the peer sends one line
// "TURN\tWORKSPACE\tSERVICE\n"; the serving broker answers "K TURN\n" carrying the served socket
// (SCM_RIGHTS) or "E WHY\n"; at the relay's end the peer sends "C OUT IN\n" and closes, and a
// serving broker that revokes first sends "R\n" before it shuts the served socket down. Between
// the broker and radial-init: the broker sends 'P' and the port (2 bytes, network order);
// radial-init answers 'K' carrying its connected socket, or 'E'.
#include "egress/service_rendezvous.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <list>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "egress/box_stream.h"
#include "egress/egress_connection.h"

namespace radial::egress::detail {

namespace {

// Real time: deadlines for real peers on real sockets (docs/design.md §12.7).
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
constexpr auto kAnswerTimeout = std::chrono::seconds(10);
constexpr std::size_t kMostLine = 512;

std::int64_t now_ms() {
    return std::chrono::duration_cast<milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

bool send_all(int fd, const std::string& s) {
    std::size_t at = 0;
    while (at < s.size()) {
        const ssize_t w = ::send(fd, s.data() + at, s.size() - at, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        at += static_cast<std::size_t>(w);
    }
    return true;
}

// Sends `text` with `fd` attached (SCM_RIGHTS), in one message.
bool send_with_fd(int sock, const std::string& text, int fd) {
    iovec iov{const_cast<char*>(text.data()), text.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cm), &fd, sizeof fd);
    ssize_t n;
    do n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == static_cast<ssize_t>(text.size());
}

// Waits for `fd` to be readable by `deadline`, while `stop` is false.
bool readable(int fd, Clock::time_point deadline, const std::atomic<bool>& stop) {
    while (!stop) {
        const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) return false;
        pollfd p{fd, POLLIN, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 200)));
        if (n > 0) return true;
        if (n < 0 && errno != EINTR) return false;
    }
    return false;
}

// One line (without its LF) of at most kMostLine bytes, read byte by byte so nothing after it is
// taken; descriptors attached to it are kept in `fds`. False on a timeout, a close or a long line.
bool read_line(int fd, Clock::time_point deadline, const std::atomic<bool>& stop, std::string& line,
               std::vector<int>& fds) {
    line.clear();
    while (line.size() <= kMostLine) {
        if (!readable(fd, deadline, stop)) return false;
        char c = 0;
        std::vector<int> got;
        const ssize_t n = recv_with_rights(fd, &c, 1, 0, got);
        fds.insert(fds.end(), got.begin(), got.end());
        if (n != 1) return false;
        if (c == '\n') return true;
        line.push_back(c);
    }
    return false;
}

void close_all(std::vector<int>& fds) {
    for (const int fd : fds) close_box_socket(fd);
    fds.clear();
}

bool same_uid(int fd) {
    ucred cred{};
    socklen_t len = sizeof cred;
    return ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == ::geteuid();
}

std::uint16_t peer_port(int fd) {
    sockaddr_storage s{};
    socklen_t len = sizeof s;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&s), &len) != 0) return 0;
    if (s.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in&>(s).sin_port);
    if (s.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6&>(s).sin6_port);
    return 0;
}

// A directory of `path` only this uid may enter (0700, ours, no symlink), made if missing.
void private_dir(const std::string& path) {
    if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
        throw std::runtime_error(fmt::format("'{}': {}", path, std::strerror(errno)));
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
        throw std::runtime_error(
            fmt::format("'{}' is not a directory of radiald's own user", path));
    if ((st.st_mode & 077) != 0 && ::chmod(path.c_str(), 0700) != 0)
        throw std::runtime_error(fmt::format("'{}': chmod: {}", path, std::strerror(errno)));
}

sockaddr_un unix_address(const std::string& path) {
    sockaddr_un a{};
    if (path.size() >= sizeof a.sun_path)
        throw std::runtime_error(fmt::format(
            "'{}' is longer than a socket address holds ({} bytes); shorten run.stateDir", path,
            sizeof a.sun_path - 1));
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    return a;
}

} // namespace

struct ServiceOffers::Impl {
    BrokerShared& shared;
    explicit Impl(BrokerShared& s) : shared(s) {}
    struct Offer {
        std::string service, socket_path;
        std::uint16_t port = 0;
        int listen_fd = -1, lock_fd = -1;
    };
    std::vector<Offer> offers;
    int wake[2] = {-1, -1};
    std::thread acceptor;
    std::atomic<bool> stopping{false};

    std::mutex control_mutex; // one question to radial-init at a time, and `control`
    std::condition_variable control_came;
    int control = -1;
    bool control_taken = false; // one per turn: once it is gone, no other is taken

    struct Served {
        std::thread thread;
        std::atomic<bool> done{false};
        std::atomic<int> box_socket{-1}; // the served socket kept here (shut down at the end)
        int rendezvous = -1;
        std::mutex fd_mutex;
    };
    std::mutex served_mutex;
    std::list<Served> served;

    void claim(Offer& o) {
        const auto& opt = shared.options;
        const std::string dir = opt.services_dir + "/" + opt.workspace;
        private_dir(opt.services_dir);
        private_dir(dir);
        o.socket_path = dir + "/" + o.service + ".sock";
        const std::string lock = dir + "/" + o.service + ".lock";
        const auto address = unix_address(o.socket_path);
        o.lock_fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (o.lock_fd < 0)
            throw std::runtime_error(fmt::format("'{}': {}", lock, std::strerror(errno)));
        if (::flock(o.lock_fd, LOCK_EX | LOCK_NB) != 0) {
            char holder[256] = {};
            const ssize_t n = ::pread(o.lock_fd, holder, sizeof holder - 1, 0);
            throw std::runtime_error(fmt::format(
                "service '{}' of workspace '{}' is offered by turn '{}' already; one turn "
                "serves a service at a time (end that turn, or offer another service)",
                o.service, opt.workspace, n > 0 ? std::string(holder, n) : "(unknown)"));
        }
        // Held: whatever socket file is there was a dead server's.
        if (::ftruncate(o.lock_fd, 0) != 0 ||
            ::pwrite(o.lock_fd, opt.turn_id.data(), opt.turn_id.size(), 0) < 0)
            throw std::runtime_error(fmt::format("'{}': {}", lock, std::strerror(errno)));
        ::unlink(o.socket_path.c_str());
        o.listen_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (o.listen_fd < 0 ||
            ::bind(o.listen_fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
            ::chmod(o.socket_path.c_str(), 0600) != 0 || ::listen(o.listen_fd, 16) != 0)
            throw std::runtime_error(fmt::format("'{}': {}", o.socket_path, std::strerror(errno)));
    }

    void release() noexcept {
        for (auto& o : offers) {
            // The socket goes before the lock: a new offer never finds a live-looking file.
            if (o.listen_fd >= 0) {
                ::unlink(o.socket_path.c_str());
                ::close(o.listen_fd);
            }
            if (o.lock_fd >= 0) ::close(o.lock_fd);
            o.listen_fd = o.lock_fd = -1;
        }
        for (int& fd : wake)
            if (fd >= 0) ::close(std::exchange(fd, -1));
    }

    // Asks radial-init for a connection to `port`; the checked socket, or -1 with `why`.
    int ask_box(std::uint16_t port, std::string& why) {
        // A peer may come before radial-init's control connection (the box is starting):
        // it waits for it, bounded, rather than being refused for being early.
        std::unique_lock lock(control_mutex);
        control_came.wait_for(lock, kAnswerTimeout, [this] { return control_taken || stopping; });
        if (control < 0) {
            why = "the serving box's radial-init has no control connection";
            return -1;
        }
        const std::string ask{'P', static_cast<char>(port >> 8), static_cast<char>(port & 0xff)};
        std::vector<int> fds;
        char answer = 0;
        if (!send_all(control, ask) ||
            !readable(control, Clock::now() + kAnswerTimeout, stopping) ||
            recv_with_rights(control, &answer, 1, 0, fds) != 1) {
            close_all(fds);
            why = "the serving box's radial-init did not answer; its control connection is closed";
            close_box_connection(std::exchange(control, -1));
            return -1;
        }
        if (answer != 'K' || fds.size() != 1) {
            close_all(fds);
            why = answer == 'E' ? fmt::format("nothing listens on port {} in the serving box", port)
                                : "the serving box's answer was malformed";
            return -1;
        }
        const int fd = fds.front();
        why = box_loopback_tcp_refusal(fd);
        if (why.empty() && peer_port(fd) != port)
            why = fmt::format("the handed socket is not connected to port {}", port);
        if (!why.empty()) {
            close_box_socket(fd);
            why = "the serving box handed a socket that was refused: " + why;
            return -1;
        }
        if (const int fl = ::fcntl(fd, F_GETFL); fl >= 0 && (fl & O_NONBLOCK) != 0)
            ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return fd;
    }

    void serve_peer(Served& s, const Offer& o) noexcept {
        Receipt r;
        r.kind = "SERVED";
        r.started_ms = now_ms();
        r.verdict = "refused";
        r.via = "rendezvous";
        r.destination =
            fmt::format("{}.{}{}:{}", o.service, shared.options.workspace, kServiceSuffix, o.port);
        try {
            serve_peer_until_receipt(s, o, r);
        } catch (const std::exception& e) {
            r.reason = fmt::format("broker error: {}", e.what());
        }
        r.ended_ms = now_ms();
        shared.store(shared.options.on_receipt, r, BrokerShared::Cap::openings);
        std::lock_guard lock(s.fd_mutex);
        if (const int fd = s.box_socket.exchange(-1); fd >= 0) close_box_socket(fd);
        ::close(std::exchange(s.rendezvous, -1));
    }

    void serve_peer_until_receipt(Served& s, const Offer& o, Receipt& r) {
        std::string line;
        std::vector<int> fds;
        if (!same_uid(s.rendezvous)) {
            r.reason = "the connecting process is not radiald's user";
            return;
        }
        const bool asked =
            read_line(s.rendezvous, Clock::now() + kAnswerTimeout, stopping, line, fds);
        close_all(fds); // a broker sends none
        const auto t1 = line.find('\t'), t2 = line.find('\t', t1 == std::string::npos ? 0 : t1 + 1);
        if (!asked || t1 == std::string::npos || t2 == std::string::npos) {
            r.reason = "the peer broker's request could not be read";
            return;
        }
        r.peer = line.substr(0, t1);
        const std::string peer_ws = line.substr(t1 + 1, t2 - t1 - 1);
        r.address = fmt::format("turn {} (workspace {})", r.peer, peer_ws);
        // The edge judged again by this turn's own config: the peer's broker may have read
        // another one (docs/design.md §9.7, "Between boxes").
        std::string why;
        if (line.substr(t2 + 1) != o.service || !valid_net_name(peer_ws))
            why = "the peer broker asked for another service";
        else
            why = edge_refusal(shared.options.net, peer_ws, {o.service, shared.options.workspace},
                               o.port);
        int fd = -1;
        if (why.empty()) fd = ask_box(o.port, why);
        if (fd < 0) {
            r.reason = why;
            send_all(s.rendezvous, "E " + why + "\n");
            return;
        }
        s.box_socket = fd;
        if (stopping) {
            r.reason = "revoked at the turn's end";
            return;
        }
        if (!send_with_fd(s.rendezvous, "K " + shared.options.turn_id + "\n", fd)) {
            r.reason = "the peer broker went away";
            return;
        }
        r.verdict = "allowed";
        // Open for the life of the peer's relay: its counts, or its close, end it.
        for (;;) {
            if (stopping) break;
            pollfd p{s.rendezvous, POLLIN, 0};
            const int n = ::poll(&p, 1, 200);
            if (n > 0 || (n < 0 && errno != EINTR)) break;
        }
        if (stopping) {
            r.reason = "revoked at the turn's end: the serving turn ended";
            // The peer's relay ends now; its counts follow within a moment.
            readable(s.rendezvous, Clock::now() + std::chrono::seconds(2),
                     std::atomic<bool>{false});
        }
        if (read_line(s.rendezvous, Clock::now() + std::chrono::seconds(2),
                      std::atomic<bool>{false}, line, fds) &&
            line.starts_with("C ")) {
            unsigned long long out = 0, in = 0;
            if (std::sscanf(line.c_str(), "C %llu %llu", &out, &in) == 2) {
                r.bytes_out = out;
                r.bytes_in = in;
            }
            if (r.reason.empty()) r.reason = "the peer's connection ended";
        } else if (r.reason.empty()) {
            r.reason = "the peer broker closed the rendezvous";
        }
        close_all(fds);
    }

    void accept_loop() {
        std::vector<pollfd> p;
        for (const auto& o : offers) p.push_back({o.listen_fd, POLLIN, 0});
        p.push_back({wake[0], POLLIN, 0});
        for (;;) {
            if (::poll(p.data(), p.size(), -1) < 0 && errno != EINTR) return;
            if (p.back().revents != 0 || stopping) return;
            reap();
            for (std::size_t i = 0; i + 1 < p.size(); ++i) {
                if (p[i].revents == 0) continue;
                const int fd = ::accept4(p[i].fd, nullptr, nullptr, SOCK_CLOEXEC);
                if (fd < 0) continue;
                std::lock_guard lock(served_mutex);
                if (served.size() >= shared.options.ceiling.max_connections) {
                    send_all(fd,
                             "E the serving turn's connections at once are open "
                             "(run.egress.maxConnections)\n");
                    ::close(fd);
                    continue;
                }
                auto& s = served.emplace_back();
                s.rendezvous = fd;
                const Offer& o = offers[i];
                try {
                    s.thread = std::thread([this, &s, &o] {
                        serve_peer(s, o);
                        s.done = true;
                    });
                } catch (const std::system_error&) {
                    ::close(fd);
                    served.pop_back();
                }
            }
        }
    }

    void reap() {
        std::list<Served> over;
        {
            std::lock_guard lock(served_mutex);
            for (auto it = served.begin(); it != served.end();)
                if (it->done)
                    over.splice(over.end(), served, it++);
                else
                    ++it;
        }
        for (auto& s : over) s.thread.join();
    }
};

ServiceOffers::ServiceOffers(BrokerShared& shared) : impl_(std::make_unique<Impl>(shared)) {
    const auto& o = shared.options;
    try {
        for (const auto& [service, port] : o.offers) {
            impl_->offers.push_back({service, "", port, -1, -1});
            impl_->claim(impl_->offers.back());
        }
        if (::pipe2(impl_->wake, O_CLOEXEC) != 0)
            throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
        impl_->acceptor = std::thread([this] { impl_->accept_loop(); });
    } catch (const std::system_error& e) {
        impl_->release();
        throw std::runtime_error(
            fmt::format("no thread to serve the offered services ({})", e.what()));
    } catch (...) {
        impl_->release();
        throw;
    }
}

ServiceOffers::~ServiceOffers() { stop(); }

bool ServiceOffers::take_control(int fd, std::string& why) {
    std::lock_guard lock(impl_->control_mutex);
    if (impl_->stopping) {
        why = "revoked at the turn's end";
        return false;
    }
    if (impl_->control_taken) {
        why = "refused: a second control connection (the turn's radial-init opened one)";
        return false;
    }
    char first = 0;
    std::vector<int> fds;
    const ssize_t n = recv_with_rights(fd, &first, 1, 0, fds);
    const bool clean = fds.empty();
    for (const int f : fds) close_box_socket(f);
    if (n != 1 || first != kControl || !clean) {
        why = "refused: a control connection's first byte carried descriptors";
        return false;
    }
    impl_->control = fd;
    impl_->control_taken = true;
    impl_->control_came.notify_all();
    return true;
}

void ServiceOffers::stop() noexcept {
    if (impl_->stopping.exchange(true)) return;
    {
        std::lock_guard lock(impl_->control_mutex); // a peer waiting for the control sees it
        impl_->control_came.notify_all();
    }
    if (impl_->wake[1] >= 0) {
        const char one = 1;
        [[maybe_unused]] auto w = ::write(impl_->wake[1], &one, 1);
    }
    if (impl_->acceptor.joinable()) impl_->acceptor.join();
    {
        // Revocation: every served connection is shut down, whichever process holds it (the
        // peer's broker holds its duplicate), after telling the peer why.
        std::lock_guard lock(impl_->served_mutex);
        for (auto& s : impl_->served) {
            std::lock_guard l(s.fd_mutex);
            if (s.rendezvous >= 0) send_all(s.rendezvous, "R\n");
            if (const int fd = s.box_socket.load(); fd >= 0) ::shutdown(fd, SHUT_RDWR);
        }
    }
    for (auto& s : impl_->served) s.thread.join();
    impl_->served.clear();
    {
        std::lock_guard lock(impl_->control_mutex);
        if (impl_->control >= 0) close_box_connection(std::exchange(impl_->control, -1));
    }
    impl_->release();
}

bool dial_service(BrokerShared& shared, const ServiceName& name, ServedSocket& out,
                  std::string& why) {
    const auto& o = shared.options;
    const std::string path = o.services_dir + "/" + name.workspace + "/" + name.service + ".sock";
    const std::string dest = name.service + "." + name.workspace + std::string(kServiceSuffix);
    sockaddr_un a{};
    try {
        a = unix_address(path);
    } catch (const std::exception& e) {
        why = e.what();
        return false;
    }
    // Not blocking: a serving broker that does not accept (its radiald stopped) lets its backlog
    // fill, and a blocking connect would then hold this connection, and the turn's end, for good.
    out.rendezvous = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    const auto connect_by = Clock::now() + kAnswerTimeout;
    int rc = -1, err = 0;
    while (out.rendezvous >= 0) {
        rc = ::connect(out.rendezvous, reinterpret_cast<const sockaddr*>(&a), sizeof a);
        err = rc == 0 ? 0 : errno;
        if (err != EAGAIN || shared.revoked || Clock::now() >= connect_by) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (out.rendezvous < 0 || rc != 0) {
        why = err == EAGAIN || shared.revoked
                  ? fmt::format("{}: the serving broker takes no connection now", dest)
                  : fmt::format("no turn serves {} now (nothing listens at {})", dest, path);
        return false;
    }
    if (const int flags = ::fcntl(out.rendezvous, F_GETFL);
        flags < 0 || ::fcntl(out.rendezvous, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        why = fmt::format("{}: {}", dest, std::strerror(errno));
        return false;
    }
    if (!same_uid(out.rendezvous)) {
        why = fmt::format("{}: the process at {} is not radiald's user", dest, path);
        return false;
    }
    if (!send_all(out.rendezvous,
                  fmt::format("{}\t{}\t{}\n", o.turn_id, o.workspace, name.service))) {
        why = fmt::format("{}: the serving broker went away", dest);
        return false;
    }
    std::string line;
    std::vector<int> fds;
    const bool answered =
        read_line(out.rendezvous, Clock::now() + 2 * kAnswerTimeout, shared.revoked, line, fds);
    if (!answered || !line.starts_with("K ") || fds.size() != 1) {
        close_all(fds);
        why = answered && line.starts_with("E ")
                  ? fmt::format("{}: the serving turn refused: {}", dest, line.substr(2))
              : shared.revoked ? "revoked at the turn's end"
                               : fmt::format("{}: the serving broker did not answer", dest);
        return false;
    }
    out.served_by = line.substr(2);
    out.socket = fds.front();
    // Checked again here: it is a box's socket whoever passed it on.
    if (const std::string no = box_loopback_tcp_refusal(out.socket); !no.empty()) {
        close_box_socket(std::exchange(out.socket, -1));
        why = fmt::format("{}: refused: {}", dest, no);
        return false;
    }
    return true;
}

bool served_side_revoked(const ServedSocket& s) noexcept {
    char c = 0;
    return s.rendezvous >= 0 && ::recv(s.rendezvous, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 1 &&
           c == 'R';
}

void end_rendezvous(ServedSocket& s, const Receipt& r) noexcept {
    if (s.rendezvous < 0) return;
    try {
        send_all(s.rendezvous, fmt::format("C {} {}\n", r.bytes_out, r.bytes_in));
    } catch (...) {
    }
    ::close(std::exchange(s.rendezvous, -1));
}

} // namespace radial::egress::detail
