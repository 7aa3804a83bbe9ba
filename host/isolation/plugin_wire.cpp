#include "isolation/plugin_wire.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace radial::isolation {

using nlohmann::json;

namespace {

bool write_all(int fd, const char* data, std::size_t n) {
    while (n > 0) {
        const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        data += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}

bool read_all(int fd, char* data, std::size_t n) {
    while (n > 0) {
        const ssize_t r = ::read(fd, data, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        data += r;
        n -= static_cast<std::size_t>(r);
    }
    return true;
}

} // namespace

bool write_frame(int fd, char type, std::string_view payload) {
    if (payload.size() > kMaxFramePayload) return false;
    char head[5];
    head[0] = type;
    std::memcpy(head + 1, wire_u32(static_cast<std::uint32_t>(payload.size())).data(), 4);
    // One write for a small frame: a reply and its head arrive together.
    if (payload.size() <= 4096) {
        char buf[5 + 4096];
        std::memcpy(buf, head, 5);
        std::memcpy(buf + 5, payload.data(), payload.size());
        return write_all(fd, buf, 5 + payload.size());
    }
    return write_all(fd, head, 5) && write_all(fd, payload.data(), payload.size());
}

bool read_frame(int fd, Frame& out) {
    unsigned char head[5];
    if (!read_all(fd, reinterpret_cast<char*>(head), 5)) return false;
    const std::uint32_t n = read_wire_u32({reinterpret_cast<const char*>(head) + 1, 4});
    if (n > kMaxFramePayload) return false;
    out.type = static_cast<char>(head[0]);
    out.payload.resize(n);
    return n == 0 || read_all(fd, out.payload.data(), n);
}

namespace {

// One byte of data and room for one descriptor: what send_fd sends and receive_fd takes.
struct FdMessage {
    char byte = 0;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    FdMessage() {
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
    }
    FdMessage(const FdMessage&) = delete;
    FdMessage& operator=(const FdMessage&) = delete;
};

} // namespace

bool send_fd(int sock, int fd_to_pass) {
    FdMessage m;
    cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd_to_pass, sizeof(int));
    for (;;) {
        if (::sendmsg(sock, &m.msg, MSG_NOSIGNAL) == 1) return true;
        if (errno != EINTR) return false;
    }
}

internal::UniqueFd receive_fd(int sock) {
    FdMessage m;
    ssize_t r;
    do {
        r = ::recvmsg(sock, &m.msg, MSG_CMSG_CLOEXEC);
    } while (r < 0 && errno == EINTR);
    if (r <= 0) return {};
    for (cmsghdr* c = CMSG_FIRSTHDR(&m.msg); c != nullptr; c = CMSG_NXTHDR(&m.msg, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
            c->cmsg_len == CMSG_LEN(sizeof(int))) {
            int fd = -1;
            std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
            return internal::UniqueFd(fd);
        }
    return {};
}

json spec_to_json(const ContainerSpec& s) {
    json mounts = json::array(), env = json::array(), tmpfs = json::array();
    for (const auto& m : s.mounts)
        mounts.push_back({m.source, m.target, m.read_only, m.receives_host_mounts});
    for (const auto& e : s.env) env.push_back({e.name, e.value, e.secret});
    for (const auto& t : s.tmpfs) tmpfs.push_back({t.target, t.size_bytes});
    return {{"label", s.label},
            {"image", s.image},
            {"mounts", mounts},
            {"argv", s.argv},
            {"env", env},
            {"workdir", s.workdir},
            {"timeout_ms", s.timeout_ms},
            {"host_ports", s.host_ports},
            {"pids_limit", s.pids_limit},
            {"read_only_rootfs", static_cast<std::uint32_t>(s.read_only_rootfs)},
            {"user", s.user},
            {"tmpfs", tmpfs},
            {"extra_hosts", s.extra_hosts},
            {"memory_bytes", s.memory_bytes},
            {"network", s.network},
            {"cpus_milli", s.cpus_milli},
            {"egress", s.egress},
            {"stop_grace_ms", s.stop_grace_ms}};
}

ContainerSpec spec_from_json(const json& j) {
    ContainerSpec s;
    s.label = j.at("label").get<std::string>();
    s.image = j.at("image").get<std::string>();
    for (const auto& m : j.at("mounts"))
        s.mounts.push_back({m.at(0).get<std::string>(), m.at(1).get<std::string>(),
                            m.at(2).get<bool>(), m.at(3).get<bool>()});
    s.argv = j.at("argv").get<std::vector<std::string>>();
    for (const auto& e : j.at("env"))
        s.env.push_back(
            {e.at(0).get<std::string>(), e.at(1).get<std::string>(), e.at(2).get<bool>()});
    s.workdir = j.at("workdir").get<std::string>();
    s.timeout_ms = j.at("timeout_ms").get<std::uint64_t>();
    s.host_ports = j.at("host_ports").get<std::vector<std::uint32_t>>();
    s.pids_limit = j.at("pids_limit").get<std::int64_t>();
    const auto ro = j.at("read_only_rootfs").get<std::uint32_t>();
    s.read_only_rootfs = ro == RADIAL_YES  ? Tristate::yes
                         : ro == RADIAL_NO ? Tristate::no
                                           : Tristate::unset;
    s.user = j.at("user").get<std::string>();
    for (const auto& t : j.at("tmpfs"))
        s.tmpfs.push_back({t.at(0).get<std::string>(), t.at(1).get<std::uint64_t>()});
    s.extra_hosts = j.at("extra_hosts").get<std::vector<std::string>>();
    s.memory_bytes = j.at("memory_bytes").get<std::uint64_t>();
    s.network = j.at("network").get<std::string>();
    s.cpus_milli = j.at("cpus_milli").get<std::uint64_t>();
    s.egress = j.at("egress").get<std::vector<std::string>>();
    s.stop_grace_ms = j.at("stop_grace_ms").get<std::uint64_t>();
    return s;
}

json config_to_json(const host::ConfigSection& section) {
    json entries = json::array();
    for (const auto& e : section.entries)
        entries.push_back({e.key, e.kind, e.string_value, e.int_value, e.float_value, e.items});
    return {{"section", section.section}, {"entries", entries}};
}

host::ConfigSection config_from_json(const json& j) {
    host::ConfigSection s;
    s.section = j.at("section").get<std::string>();
    for (const auto& e : j.at("entries")) {
        host::ConfigEntry c;
        c.key = e.at(0).get<std::string>();
        c.kind = e.at(1).get<std::uint32_t>();
        c.string_value = e.at(2).get<std::string>();
        c.int_value = e.at(3).get<std::int64_t>();
        c.float_value = e.at(4).get<double>();
        c.items = e.at(5).get<std::vector<std::string>>();
        s.entries.push_back(std::move(c));
    }
    return s;
}

std::string to_cbor(const json& j) {
    const auto bytes = json::to_cbor(j);
    return std::string(bytes.begin(), bytes.end());
}

namespace {

// Reads a CBOR document without keeping it, refusing one nested deeper than kMaxCborDepth or
// holding more than kMaxCborItems values. Stopping at a start bounds the reader's recursion, which
// follows the nesting, and the items bound the memory the document would take as a json.
class CborBounds : public nlohmann::json_sax<json> {
public:
    std::string refusal;

    bool null() override { return item(); }
    bool boolean(bool) override { return item(); }
    bool number_integer(number_integer_t) override { return item(); }
    bool number_unsigned(number_unsigned_t) override { return item(); }
    bool number_float(number_float_t, const string_t&) override { return item(); }
    bool string(string_t&) override { return item(); }
    bool binary(binary_t&) override { return item(); }
    bool start_object(std::size_t) override { return enter(); }
    bool key(string_t&) override { return true; }
    bool end_object() override { return leave(); }
    bool start_array(std::size_t) override { return enter(); }
    bool end_array() override { return leave(); }
    bool parse_error(std::size_t, const std::string&,
                     const nlohmann::detail::exception& e) override {
        if (refusal.empty()) refusal = e.what();
        return false;
    }

private:
    bool item() {
        if (++items_ <= kMaxCborItems) return true;
        refusal = "more than " + std::to_string(kMaxCborItems) + " values";
        return false;
    }
    bool enter() {
        if (++depth_ <= kMaxCborDepth) return item();
        refusal = "nested deeper than " + std::to_string(kMaxCborDepth) + " levels";
        return false;
    }
    bool leave() {
        --depth_;
        return true;
    }
    std::size_t depth_ = 0;
    std::size_t items_ = 0;
};

} // namespace

json from_cbor(std::string_view bytes) {
    CborBounds bounds;
    if (!json::sax_parse(bytes.begin(), bytes.end(), &bounds, json::input_format_t::cbor) ||
        !bounds.refusal.empty())
        throw std::runtime_error("a CBOR payload that is " + (bounds.refusal.empty()
                                                                  ? std::string("malformed")
                                                                  : bounds.refusal));
    return json::from_cbor(bytes.begin(), bytes.end());
}

} // namespace radial::isolation
