// host/egress/operator_policy.cpp — see operator_policy.h.
#include "egress/operator_policy.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "fs/durable_file.h"

namespace radial::egress {

namespace {

std::vector<AllowRule> rules_of(const nlohmann::json& j, const std::string& path,
                                const std::string& where) {
    std::vector<AllowRule> out;
    if (j.is_null()) return out;
    if (!j.is_array())
        throw PolicyError(fmt::format("'{}': {} is not a list of host:port rules", path, where));
    for (const auto& e : j) {
        if (!e.is_string())
            throw PolicyError(
                fmt::format("'{}': {} holds a rule that is not a string", path, where));
        try {
            out.push_back(parse_allow_rule(e.get<std::string>()));
        } catch (const PolicyError& err) {
            throw PolicyError(fmt::format("'{}': {}: {}", path, where, err.what()));
        }
    }
    return out;
}

nlohmann::json texts(const std::vector<AllowRule>& rules) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& r : rules) a.push_back(r.text());
    return a;
}

bool named(const std::vector<AllowRule>& rules, std::string_view host, std::uint16_t port,
           bool literal) {
    return std::any_of(rules.begin(), rules.end(), [&](const AllowRule& a) {
        return literal ? a.host == host && a.port == port : matches(a, host, port);
    });
}

} // namespace

bool TurnEgressRules::permits(std::string_view host, std::uint16_t port, bool literal) const {
    return named(allow, host, port, literal) && !named(deny, host, port, literal);
}

bool TurnEgressRules::denies(std::string_view host, std::uint16_t port, bool literal) const {
    return named(deny, host, port, literal);
}

std::string operator_policy_path(const std::string& state_dir) {
    return state_dir + "/egress-policy.json";
}

std::string broker_ceilings_dir(const std::string& state_dir) {
    return state_dir + "/egress-brokers";
}

std::string broker_ceiling_path(const std::string& state_dir, const std::string& turn_id) {
    return broker_ceilings_dir(state_dir) + "/" + turn_id + ".json";
}

void write_broker_ceiling(const std::string& path, const std::vector<AllowRule>& allow) {
    const auto dir = std::filesystem::path(path).parent_path();
    if (::mkdir(dir.c_str(), 0700) == 0) ::chmod(dir.c_str(), 0700);
    nlohmann::ordered_json j;
    j["allow"] = texts(allow);
    fs_util::replace_file(dir, path, j.dump() + "\n", 0600);
}

std::optional<std::vector<AllowRule>> read_broker_ceiling(const std::string& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::stringstream text;
    text << in.rdbuf();
    const auto j = nlohmann::json::parse(text.str(), nullptr, false);
    if (!j.is_object() || !j.contains("allow") || !j["allow"].is_array())
        throw PolicyError(fmt::format("'{}' is not a broker's ceiling", path));
    std::vector<AllowRule> out;
    for (const auto& r : j["allow"]) {
        if (!r.is_string()) throw PolicyError(fmt::format("'{}' is not a broker's ceiling", path));
        out.push_back(parse_allow_rule(r.get<std::string>()));
    }
    return out;
}

std::string operator_policy_events_path(const std::string& state_dir) {
    return state_dir + "/egress-policy-events.jsonl";
}

OperatorPolicy read_operator_policy(const std::string& path) {
    OperatorPolicy p;
    std::ifstream in(path);
    if (!in) {
        if (errno == ENOENT) return p;
        throw PolicyError(fmt::format("'{}': cannot be read: {}", path, std::strerror(errno)));
    }
    std::stringstream text;
    text << in.rdbuf();
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text.str());
    } catch (const nlohmann::json::exception& e) {
        throw PolicyError(
            fmt::format("'{}' is not JSON ({}); remove it to drop every change "
                        "'radiald policy' made",
                        path, e.what()));
    }
    if (!j.is_object()) throw PolicyError(fmt::format("'{}' is not a JSON object", path));
    p.deny = rules_of(j.value("deny", nlohmann::json()), path, "deny");
    const auto turns = j.value("turns", nlohmann::json::object());
    if (!turns.is_object()) throw PolicyError(fmt::format("'{}': turns is not an object", path));
    for (const auto& [id, t] : turns.items()) {
        if (!t.is_object())
            throw PolicyError(fmt::format("'{}': turns.{} is not an object", path, id));
        auto& c = p.turns[id];
        c.allow = rules_of(t.value("allow", nlohmann::json()), path, "turns." + id + ".allow");
        c.deny = rules_of(t.value("deny", nlohmann::json()), path, "turns." + id + ".deny");
    }
    return p;
}

void write_operator_policy(const std::string& path, const OperatorPolicy& policy) {
    nlohmann::ordered_json j;
    j["deny"] = texts(policy.deny);
    j["turns"] = nlohmann::ordered_json::object();
    for (const auto& [id, c] : policy.turns)
        j["turns"][id] = {{"allow", texts(c.allow)}, {"deny", texts(c.deny)}};
    const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    const std::string tmp = path + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    auto fail = [&](const char* what) {
        const std::string err = std::strerror(errno);
        if (fd >= 0) ::close(fd);
        ::unlink(tmp.c_str());
        throw std::runtime_error(fmt::format("'{}': {}: {}", path, what, err));
    };
    if (fd < 0) fail("creating its temporary file");
    for (std::size_t done = 0; done < text.size();) {
        const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) fail("writing");
        done += static_cast<std::size_t>(w);
    }
    if (::fsync(fd) != 0) fail("fsync");
    if (::close(fd) != 0) {
        ::unlink(tmp.c_str());
        throw std::runtime_error(fmt::format("'{}': close: {}", path, std::strerror(errno)));
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const std::string err = std::strerror(errno);
        ::unlink(tmp.c_str());
        throw std::runtime_error(fmt::format("'{}': rename: {}", path, err));
    }
}

OperatorPolicyLock::OperatorPolicyLock(const std::string& path) {
    const std::string lock = path + ".lock";
    fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd_ < 0) throw std::runtime_error(fmt::format("'{}': {}", lock, std::strerror(errno)));
    while (::flock(fd_, LOCK_EX) != 0)
        if (errno != EINTR) {
            const std::string err = std::strerror(errno);
            ::close(fd_);
            throw std::runtime_error(fmt::format("'{}': flock: {}", lock, err));
        }
}

OperatorPolicyLock::~OperatorPolicyLock() {
    if (fd_ >= 0) ::close(fd_);
}

TurnEgressRules effective_rules(const std::vector<AllowRule>& turn_rules,
                                const OperatorPolicy& policy, const std::string& turn_id,
                                const std::vector<AllowRule>& ceiling) {
    TurnEgressRules r;
    r.allow = turn_rules;
    r.deny = policy.deny;
    if (const auto it = policy.turns.find(turn_id); it != policy.turns.end()) {
        for (const auto& added : it->second.allow)
            if (std::any_of(ceiling.begin(), ceiling.end(),
                            [&](const AllowRule& c) { return covers(c, added); }))
                r.allow.push_back(added);
        r.deny.insert(r.deny.end(), it->second.deny.begin(), it->second.deny.end());
    }
    return r;
}

} // namespace radial::egress
