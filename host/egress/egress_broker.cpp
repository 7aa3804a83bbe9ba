// host/egress/egress_broker.cpp — see egress_broker.h. One accepting thread; one thread per open
// connection (at most run.egress.maxConnections, so a box cannot make the host start more).
#include "egress/egress_broker.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <list>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "egress/box_stream.h"
#include "egress/egress_connection.h"
#include "egress/egress_dial.h"
#include "egress/policy_watch.h"
#include "egress/service_rendezvous.h"
#include "fs/socket_file_access.h"

namespace radial::egress {

struct EgressBroker::Impl {
    detail::BrokerShared shared;
    int listen_fd = -1;
    int wake[2] = {-1, -1};
    std::optional<PolicyWatch> policy_watch; // the operator's policy file, when there is one
    bool bound = false;                      // the socket file is this broker's to remove
    // Whatever a constructor that failed part-way had made, or revocation left: the acceptor is
    // never running here (it starts last and revocation joins it).
    ~Impl() {
        if (bound) ::unlink(shared.options.unix_path.c_str());
        for (const int fd : {listen_fd, wake[0], wake[1]})
            if (fd >= 0) ::close(fd);
    }
    std::thread acceptor;
    mutable std::mutex mutex; // conns
    struct Served {
        std::shared_ptr<detail::Connection> conn;
        std::thread thread;
    };
    std::list<Served> conns;
    bool revoked = false;

    // Joins the threads of connections that are over.
    void reap_finished() {
        std::list<Served> over;
        {
            std::lock_guard lock(mutex);
            for (auto it = conns.begin(); it != conns.end();)
                if (it->conn->done) {
                    over.splice(over.end(), conns, it++);
                } else {
                    ++it;
                }
        }
        for (auto& s : over) s.thread.join();
    }

    void reload() {
        OperatorPolicy policy;
        try {
            policy = read_operator_policy(shared.options.policy_path);
        } catch (const std::exception& e) {
            if (shared.options.on_log)
                shared.options.on_log(
                    fmt::format("egress: the operator's policy is kept as it was: {}", e.what()));
            return;
        }
        std::list<std::shared_ptr<detail::Connection>> open;
        {
            std::lock_guard lock(mutex);
            for (const auto& s : conns) open.push_back(s.conn);
        }
        std::lock_guard lock(shared.policy_mutex);
        shared.rules = effective_rules(shared.options.rules, policy, shared.options.turn_id,
                                       shared.options.ceiling.allow);
        for (const auto& c : open)
            if (!c->done && detail::denied_now(shared, *c)) {
                c->policy_revoked = true;
                c->cut();
            }
    }

    void accept_loop() {
        for (;;) {
            pollfd p[3] = {{listen_fd, POLLIN, 0},
                           {wake[0], POLLIN, 0},
                           {policy_watch ? policy_watch->fd() : -1, POLLIN, 0}};
            if (::poll(p, 3, -1) < 0 && errno != EINTR) return;
            if (p[1].revents != 0 || shared.revoked) return;
            if (p[2].revents != 0 && policy_watch->changed()) reload();
            if (p[0].revents == 0) continue;
            const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0) {
                // Out of descriptors: the pending connection stays readable, so wait a moment
                // (or for the revocation) rather than spin on it.
                if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                    pollfd w{wake[0], POLLIN, 0};
                    ::poll(&w, 1, 100);
                }
                continue;
            }
            reap_finished();
            std::lock_guard lock(mutex);
            if (conns.size() >= shared.options.ceiling.max_connections) {
                detail::refuse_at_once(shared, fd,
                                       fmt::format("the turn's {} connections at once are open "
                                                   "(run.egress.maxConnections)",
                                                   shared.options.ceiling.max_connections));
                continue;
            }
            auto conn = std::make_shared<detail::Connection>();
            conn->client = fd;
            try {
                conns.push_back({conn, std::thread([this, conn] {
                                     detail::serve(shared, *conn);
                                     conn->cut(); // the box sees the end now, not at the reap
                                     conn->done = true;
                                 })});
            } catch (const std::system_error&) {
                // No thread to serve it (the host's task limit): refused, radiald goes on.
                conn->client = -1;
                detail::refuse_at_once(shared, fd,
                                       "the host cannot start another connection now; try again");
            }
        }
    }
};

EgressBroker::EgressBroker(EgressBrokerOptions options) : impl_(std::make_unique<Impl>()) {
    impl_->shared.options = std::move(options);
    impl_->shared.lookups.most = impl_->shared.options.ceiling.max_connections;
    const auto& o = impl_->shared.options;
    // Watched before it is read, so a change between the two is not missed; one watch for every
    // broker of the process (policy_watch.h).
    if (!o.policy_path.empty()) impl_->policy_watch.emplace(o.policy_path);
    impl_->shared.rules = effective_rules(
        o.rules, o.policy_path.empty() ? OperatorPolicy{} : read_operator_policy(o.policy_path),
        o.turn_id, o.ceiling.allow);
    const std::string& path = impl_->shared.options.unix_path;
    sockaddr_un addr{};
    if (path.empty() || path.front() != '/' || path.size() >= sizeof addr.sun_path)
        throw std::runtime_error(
            fmt::format("egress socket '{}': not an absolute path of at most {} bytes", path,
                        sizeof addr.sun_path - 1));
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    // From here a failure leaves nothing behind: impl_'s destructor closes what was opened and
    // removes the socket file once it is bound.
    auto fail = [&](const char* what) {
        throw std::runtime_error(
            fmt::format("egress socket '{}': {}: {}", path, what, std::strerror(errno)));
    };
    impl_->listen_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int fd = impl_->listen_fd;
    if (fd < 0) fail("socket");
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) fail("bind");
    impl_->bound = true;
    const auto& owner = impl_->shared.options.owner;
    // A session's socket directory is the box user's by now: nothing by name (docs/design.md §9.7).
    if (const std::string problem =
            fs_util::set_socket_file_access(path, owner ? 0600 : 0666, owner);
        !problem.empty())
        throw std::runtime_error(fmt::format("egress socket '{}': {}", path, problem));
    if (::listen(fd, 64) != 0) fail("listen");
    if (::pipe2(impl_->wake, O_CLOEXEC) != 0) fail("pipe");
    if (!impl_->shared.options.offers.empty())
        impl_->shared.offers = std::make_shared<detail::ServiceOffers>(impl_->shared);
    // Before the first connection: an addition `radiald policy` makes is judged against it. Not
    // kept, the turn goes on; `radiald policy` then refuses additions to it, saying so.
    if (!o.ceiling_note.empty()) try {
            write_broker_ceiling(o.ceiling_note, o.ceiling.allow);
        } catch (const std::exception& e) {
            if (o.on_log)
                o.on_log(fmt::format("turn {}: keeping its ceiling for 'radiald policy': {}",
                                     o.turn_id, e.what()));
        }
    try {
        impl_->acceptor = std::thread([this] { impl_->accept_loop(); });
    } catch (const std::system_error& e) {
        if (!o.ceiling_note.empty()) ::unlink(o.ceiling_note.c_str());
        throw std::runtime_error(
            fmt::format("egress socket '{}': no thread to accept on it ({})", path, e.what()));
    }
}

EgressBroker::~EgressBroker() { revoke(); }

void EgressBroker::revoke() noexcept {
    {
        std::lock_guard lock(impl_->mutex);
        if (impl_->revoked) return;
        impl_->revoked = true;
    }
    impl_->shared.revoked = true;
    if (const auto& note = impl_->shared.options.ceiling_note; !note.empty())
        ::unlink(note.c_str());
    const char one = 1;
    [[maybe_unused]] auto w = ::write(impl_->wake[1], &one, 1);
    if (impl_->acceptor.joinable()) impl_->acceptor.join();
    // Served connections first: the peers' relays end now, their receipts saying so.
    if (impl_->shared.offers) impl_->shared.offers->stop();
    ::unlink(impl_->shared.options.unix_path.c_str());
    impl_->bound = false;
    // Connections never accepted go with it, and descriptors the box queued on them are dropped
    // by this close: bounded as a close of the box's socket is (box_stream.h).
    detail::bounded_close(impl_->listen_fd);
    impl_->listen_fd = -1;
    std::list<Impl::Served> all;
    {
        std::lock_guard lock(impl_->mutex);
        all.swap(impl_->conns);
    }
    for (auto& s : all) s.conn->cut();
    for (auto& s : all) s.thread.join();
    // The box's sockets close on threads of their own; none is left mid-exit past the turn.
    detail::await_box_socket_closes(std::chrono::seconds(2));
    auto& sh = impl_->shared;
    if (sh.options.on_log && (sh.receipts_dropped > 0 || sh.empty_connections > 0))
        sh.options.on_log(fmt::format(
            "egress: {} attempt(s) beyond the turn's {} receipts of attempts that opened "
            "nothing, or its {} openings, were not journaled; {} connection(s) closed without a "
            "request",
            sh.receipts_dropped, detail::kMostReceipts, detail::kMostReceipts,
            sh.empty_connections.load()));
    if (sh.options.on_log && sh.receipts_failed > 1)
        sh.options.on_log(
            fmt::format("egress: {} receipt(s) could not be stored", sh.receipts_failed));
}

void EgressBroker::reload_policy() {
    if (!impl_->shared.options.policy_path.empty()) impl_->reload();
}

std::size_t EgressBroker::open_connections() const {
    std::lock_guard lock(impl_->mutex);
    std::size_t n = 0;
    for (const auto& s : impl_->conns) n += s.conn->done ? 0 : 1;
    return n;
}

std::vector<std::string> ceiling_warnings(const EgressCeiling& ceiling) {
    return range_warnings(
        ceiling, detail::own_addresses().value_or(std::vector<boost::asio::ip::address>{}));
}

} // namespace radial::egress
