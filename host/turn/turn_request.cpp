#include "turn/turn_request.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "config/bounded_units.h"
#include "config/box_identity.h"
#include "turn/request_policy.h"
#include "turn/turn_egress.h"
#include "turn/turn_secrets.h"
#include "turn/turn_setup_error.h"
#include "turn/workspace_mode.h"

namespace radial::turn {
namespace fs = std::filesystem;

std::string new_turn_id() {
    std::uint64_t bits = 0;
    std::ifstream urandom("/dev/urandom", std::ios::binary);
    urandom.read(reinterpret_cast<char*>(&bits), sizeof(bits));
    if (!urandom)
        throw TurnSetupError(
            "drawing a turn id: reading '/dev/urandom' failed; give the turn an explicit id, "
            "or make /dev/urandom readable");
    // Real time: a turn id names when it was drawn, by a command (docs/design.md §12.7).
    std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&now, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof(stamp), "%Y%m%dt%H%M%S", &tm);
    return fmt::format("{}-{:012x}", stamp, bits & 0xffffffffffffULL);
}

void validate_turn_id(const std::string& id) {
    if (!internal::is_turn_id(id))
        throw RequestError(
            fmt::format("turn id '{}' must be 1 to {} characters of a-z, 0-9 and '-', "
                        "not starting with '-'",
                        id, kMaxTurnIdBytes));
}

std::string_view to_string(RequestKind k) noexcept {
    return k == RequestKind::check ? "check" : "turn";
}

std::optional<RequestKind> parse_request_kind(std::string_view text) noexcept {
    if (text == "turn") return RequestKind::turn;
    if (text == "check") return RequestKind::check;
    return std::nullopt;
}

std::string turn_label(const config::HostConfig& cfg, const std::string& turn_id) {
    return box_label(cfg, RequestKind::turn, turn_id);
}

std::string box_label(const config::HostConfig& cfg, RequestKind kind, const std::string& id) {
    return fmt::format("radial-{}-{}-{}", to_string(kind), cfg.instance_id, id);
}

std::vector<std::string> instance_label_prefixes(const config::HostConfig& cfg) {
    // The warm pool's boxes too (pool/pool_box.h): "radial-pool-<instanceId>-".
    return {box_label(cfg, RequestKind::turn, ""), box_label(cfg, RequestKind::check, ""),
            fmt::format("radial-pool-{}-", cfg.instance_id)};
}

namespace {

nlohmann::ordered_json request_json_object(const TurnRequest& r) {
    nlohmann::ordered_json j;
    j["version"] = kRequestJsonVersion;
    j["kind"] = std::string(to_string(r.kind));
    j["turnId"] = r.turn_id;
    j["image"] = r.image;
    j["argv"] = r.argv;
    if (!r.workdir.empty()) j["workdir"] = r.workdir;
    if (!r.workspace.empty()) j["workspace"] = r.workspace;
    // Secret values never leave the process: a resolved secret is written by name, like one that
    // is not resolved yet.
    auto env = nlohmann::ordered_json::object();
    std::vector<std::string> secrets = r.secrets;
    for (const auto& e : r.env) {
        if (!e.secret)
            env[e.name] = e.value;
        else if (std::find(secrets.begin(), secrets.end(), e.name) == secrets.end())
            secrets.push_back(e.name);
    }
    j["env"] = env;
    j["secrets"] = secrets;
    auto mounts = nlohmann::ordered_json::array();
    for (const auto& m : r.mounts)
        mounts.push_back({{"source", m.source}, {"target", m.target}, {"readOnly", m.read_only}});
    j["mounts"] = mounts;
    if (r.timeout_ms) j["timeoutMs"] = r.timeout_ms;
    j["recordType"] = r.record_type;
    if (!r.mode.empty()) j["mode"] = r.mode;
    if (!r.workspace_mount.empty()) j["workspaceMount"] = r.workspace_mount;
    if (!r.session.empty()) j["session"] = r.session;
    if (!r.egress.empty()) j["egress"] = r.egress;
    if (!r.offer.empty()) j["offer"] = r.offer;
    return j;
}

} // namespace

std::string request_to_json(const TurnRequest& r) {
    return request_json_object(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
           "\n";
}

std::uint64_t turn_timeout_ms(std::uint64_t requested_ms, const config::HostConfig& cfg) {
    return requested_ms != 0             ? requested_ms
           : cfg.default_timeout_ms != 0 ? cfg.default_timeout_ms
                                         : cfg.max_timeout_ms;
}

std::string request_journal_json(const TurnRequest& r) {
    return request_json_object(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

TurnRequest request_from_json(std::string_view text) {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object()) throw RequestError("the file is not a JSON object");
    auto field = [&](const char* name) -> const nlohmann::json* {
        auto it = j.find(name);
        return it == j.end() ? nullptr : &*it;
    };
    auto string = [&](const char* name, bool required) {
        const auto* v = field(name);
        if (v == nullptr && !required) return std::string();
        if (v == nullptr || !v->is_string())
            throw RequestError(fmt::format("field '{}' must be a string", name));
        return v->get<std::string>();
    };
    auto strings = [&](const char* name) {
        std::vector<std::string> out;
        const auto* v = field(name);
        if (v == nullptr) return out;
        if (!v->is_array())
            throw RequestError(fmt::format("field '{}' must be an array of strings", name));
        for (const auto& item : *v) {
            if (!item.is_string())
                throw RequestError(fmt::format("field '{}' must be an array of strings", name));
            out.push_back(item.get<std::string>());
        }
        return out;
    };
    TurnRequest r;
    // Version 1 (no "version" field) is the previous release's spool shape: the same fields
    // without "kind", every request a turn.
    int version = 1;
    if (const auto* v = field("version")) {
        if (!v->is_number_unsigned() || v->get<std::uint64_t>() < 1)
            throw RequestError("field 'version' must be a positive number");
        if (v->get<std::uint64_t>() > static_cast<std::uint64_t>(kRequestJsonVersion))
            throw RequestError(fmt::format(
                "field 'version' is {}, but this radiald reads request versions up to {}; it was "
                "written by a newer radiald — run that one, or submit the request again",
                v->get<std::uint64_t>(), kRequestJsonVersion));
        version = static_cast<int>(v->get<std::uint64_t>());
    }
    if (version >= 2) {
        auto kind = parse_request_kind(string("kind", true));
        if (!kind) throw RequestError("field 'kind' must be \"turn\" or \"check\"");
        r.kind = *kind;
    }
    r.turn_id = string("turnId", true);
    r.image = string("image", true);
    r.argv = strings("argv");
    r.workdir = string("workdir", false);
    r.workspace = string("workspace", false);
    r.secrets = strings("secrets");
    r.record_type = string("recordType", true);
    r.mode = string("mode", false);
    r.workspace_mount = string("workspaceMount", false);
    r.session = string("session", false);
    r.egress = strings("egress");
    r.offer = strings("offer");
    if (const auto* env = field("env")) {
        if (!env->is_object()) throw RequestError("field 'env' must be an object of strings");
        for (const auto& [name, value] : env->items()) {
            if (!value.is_string()) throw RequestError("field 'env' must be an object of strings");
            r.env.push_back({name, value.get<std::string>(), false});
        }
    }
    if (const auto* mounts = field("mounts")) {
        if (!mounts->is_array()) throw RequestError("field 'mounts' must be an array");
        for (const auto& m : *mounts) {
            if (!m.is_object() || !m.contains("source") || !m["source"].is_string() ||
                !m.contains("target") || !m["target"].is_string() ||
                (m.contains("readOnly") && !m["readOnly"].is_boolean()))
                throw RequestError("field 'mounts' must hold {source, target, readOnly} objects");
            r.mounts.push_back({m["source"].get<std::string>(), m["target"].get<std::string>(),
                                m.value("readOnly", false)});
        }
    }
    if (const auto* t = field("timeoutMs")) {
        if (!t->is_number_unsigned()) throw RequestError("field 'timeoutMs' must be a number");
        r.timeout_ms = t->get<std::uint64_t>();
    }
    return r;
}

void check_request_kind(const TurnRequest& req) {
    if (req.kind != RequestKind::check) return;
    std::vector<std::string> named = req.secrets;
    for (const auto& e : req.env)
        if (e.secret) named.push_back(e.name);
    if (!named.empty())
        throw RequestError(
            fmt::format("a check carries no secrets, but this one names '{}'; remove it from the "
                        "check's secrets (a command that needs a secret is a turn, not a check)",
                        named.front()));
}

ContainerSpec build_container_spec(const TurnRequest& req, const config::HostConfig& cfg) {
    const char* what = req.kind == RequestKind::check ? "check" : "turn";
    if (req.image.empty())
        throw RequestError(fmt::format(
            "the {} names no image; pass --image IMAGE (in a turn file: image = \"IMAGE\")", what));
    if (req.argv.empty())
        throw RequestError(fmt::format(
            "the {} has no command; put it after '--' (in a turn file: argv = [...])", what));
    check_request_text(req);
    validate_turn_id(req.turn_id);
    check_request_kind(req);
    std::string image = check_image(req.image, cfg);
    check_record_type(req.record_type);
    check_exec_size(req);
    if (req.timeout_ms > kMaxTimeoutMs)
        throw RequestError(fmt::format(
            "timeout {}ms is more than the limit of 720h (30 days); give a shorter timeout",
            req.timeout_ms));
    // Refused at submit as at run: outside run.egress, in a check, or beside run.network.
    turn_egress_rules(req, cfg);
    turn_offers(req, cfg);
    // The variables radiald sets in the box are its own, whichever way the request came.
    for (const auto& e : req.env)
        if (auto problem = reserved_env_problem(e.name, brokered(req)))
            throw RequestError(
                fmt::format("{} '{}' {}", e.secret ? "secret" : "env", e.name, *problem));
    for (const auto& name : req.secrets)
        if (auto problem = reserved_env_problem(name, brokered(req)))
            throw RequestError(fmt::format("secret '{}' {}", name, *problem));
    // Whoever writes a request may relay untrusted input: it takes only the variables of
    // radiald's environment the operator lets requests take (docs/design.md §7.5).
    for (const auto& e : req.env)
        if (e.secret)
            if (auto refusal = secret_name_refusal(e.name, cfg.secret_names)) throw *refusal;
    for (const auto& name : req.secrets)
        if (auto refusal = secret_name_refusal(name, cfg.secret_names)) throw *refusal;

    ContainerSpec s;
    s.label = box_label(cfg, req.kind, req.turn_id);
    s.image = image;
    s.argv = req.argv;
    s.env = req.env;
    // No turn without a deadline where the operator set one (docs/design.md §3.7): a request's
    // own timeout, else run.defaultTimeout, else run.maxTimeout; none above run.maxTimeout.
    s.timeout_ms = turn_timeout_ms(req.timeout_ms, cfg);
    if (cfg.max_timeout_ms != 0 && s.timeout_ms > cfg.max_timeout_ms)
        throw RequestError(fmt::format(
            "timeout {} is more than run.maxTimeout ({}); {}", config::duration_text(s.timeout_ms),
            config::duration_text(cfg.max_timeout_ms),
            req.timeout_ms != 0 ? "give a shorter timeout"
                                : "it is run.defaultTimeout's: the operator must lower it"));
    s.stop_grace_ms = cfg.stop_grace_ms;
    s.network = cfg.network;
    // The host's bounds on every box, whatever the runtime's defaults (docs/design.md §6.4).
    s.memory_bytes = cfg.memory_bytes;
    s.cpus_milli = cfg.cpus_milli;
    s.pids_limit = cfg.pids_limit;
    // Never the workspace's owner or group unless the operator asked (box_identity.h).
    const auto [box_uid, box_gid] = config::default_box_ids(cfg);
    const bool as_owner = cfg.user == config::kWorkspaceOwnerUser;
    s.user = cfg.user.empty() ? fmt::format("{}:{}", box_uid, box_gid) : cfg.user;
    if (as_owner && req.workspace.empty())
        throw RequestError(
            "run.user = \"workspace-owner\" runs the box as the workspace's owner, but the turn "
            "has no workspace; pass --workspace, or unset run.user");
    const WorkspaceMode mode = effective_mode(req.mode, cfg.mode);
    std::string workspace_at; // where the workspace appears in the box (workspace_mode.h)
    if (!req.workspace.empty()) {
        std::error_code ec;
        fs::path ws = fs::absolute(req.workspace, ec).lexically_normal();
        if (!fs::is_directory(ws, ec))
            throw RequestError(
                fmt::format("workspace '{}' is not an existing directory; create it "
                            "or pass another --workspace",
                            req.workspace));
        // The resolved path is what the box gets: a symlink swapped after this check cannot
        // redirect the mount.
        std::string path = checked_host_source("workspace", ws.string(), true, cfg);
        workspace_at = workspace_target(req.workspace_mount, cfg.workspace_mount, path);
        if (workspace_at != kWorkspaceTarget)
            workspace_at = checked_box_target("workspaceMount", workspace_at);
        s.mounts.push_back({path, workspace_at, false});
        s.workdir = workspace_at;
        struct stat st {};
        if (as_owner) {
            if (::stat(path.c_str(), &st) != 0 || st.st_uid == 0)
                throw RequestError(fmt::format(
                    "run.user = \"workspace-owner\": workspace '{}' belongs to root, and a box "
                    "never runs as root; unset run.user",
                    path));
            s.user = fmt::format("{}:{}", st.st_uid, box_gid);
        }
    }
    for (std::size_t i = 0; i < req.mounts.size(); ++i) {
        const auto& m = req.mounts[i];
        std::string at = fmt::format("mounts[{}]", i);
        if (m.source.empty() || m.source.front() != '/' || m.target.empty() ||
            m.target.front() != '/')
            throw RequestError(
                fmt::format("{}: source '{}' and target '{}' must both be absolute paths", at,
                            m.source, m.target));
        std::error_code ec;
        if (!fs::exists(m.source, ec))
            throw RequestError(fmt::format(
                "{}: source '{}' does not exist; create it before the turn runs", at, m.source));
        // run.mode = "read-only" bars every write the box could keep, not the workspace's alone:
        // a read-write mount of the workspace's own directory wrote it (docs/design.md §7.6).
        if (!m.read_only && parse_workspace_mode(cfg.mode) == WorkspaceMode::read_only)
            throw RequestError(fmt::format(
                "{} ('{}' at '{}') is read-write under run.mode = \"read-only\", which a request "
                "may narrow but never widen; set its readOnly = true",
                at, m.source, m.target));
        Mount checked = m;
        checked.source = checked_host_source(at + ".source", m.source, false, cfg);
        checked.target = checked_box_target(at + ".target", m.target);
        for (const auto& other : s.mounts)
            if (other.target == checked.target)
                throw RequestError(
                    fmt::format("{}.target '{}' is already taken by another mount "
                                "or the workspace; pick another path",
                                at, m.target));
        s.mounts.push_back(std::move(checked));
    }
    if (!req.workdir.empty()) {
        if (req.workdir.front() != '/')
            throw RequestError(
                fmt::format("workdir '{}' must be an absolute path in the box", req.workdir));
        s.workdir = req.workdir;
    }
    apply_workspace_mode(s, mode, workspace_at);
    return s;
}

} // namespace radial::turn
