#include "turn/turn_request.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "config/box_identity.h"
#include "turn/request_policy.h"
#include "turn/workspace_mode.h"

namespace radial::turn {
namespace fs = std::filesystem;

std::string new_turn_id() {
    std::uint64_t bits = 0;
    std::ifstream urandom("/dev/urandom", std::ios::binary);
    urandom.read(reinterpret_cast<char*>(&bits), sizeof(bits));
    if (!urandom) throw std::runtime_error("reading /dev/urandom for a turn id failed");
    std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&now, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof(stamp), "%Y%m%dt%H%M%S", &tm);
    return fmt::format("{}-{:012x}", stamp, bits & 0xffffffffffffULL);
}

void validate_turn_id(const std::string& id) {
    bool ok = !id.empty() && id.size() <= kMaxTurnIdBytes && id.front() != '-';
    for (char c : id) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-');
    if (!ok)
        throw RequestError(
            fmt::format("turn id '{}' must be 1 to {} characters of a-z, 0-9 and '-', "
                        "not starting with '-'",
                        id, kMaxTurnIdBytes));
}

std::string turn_label(const config::HostConfig& cfg, const std::string& turn_id) {
    return fmt::format("radial-turn-{}-{}", cfg.instance_id, turn_id);
}

std::string request_journal_json(const TurnRequest& r) {
    nlohmann::ordered_json j;
    j["turnId"] = r.turn_id;
    j["image"] = r.image;
    j["argv"] = r.argv;
    if (!r.workspace.empty()) j["workspace"] = r.workspace;
    if (!r.workdir.empty()) j["workdir"] = r.workdir;
    if (!r.mounts.empty()) {
        auto mounts = nlohmann::ordered_json::array();
        for (const auto& m : r.mounts)
            mounts.push_back(
                {{"source", m.source}, {"target", m.target}, {"readOnly", m.read_only}});
        j["mounts"] = mounts;
    }
    auto env = nlohmann::ordered_json::array();
    for (const auto& e : r.env) {
        if (e.secret)
            env.push_back({{"name", e.name}, {"secret", true}});
        else
            env.push_back({{"name", e.name}, {"value", e.value}});
    }
    j["env"] = env;
    if (r.timeout_ms) j["timeoutMs"] = r.timeout_ms;
    j["recordType"] = r.record_type;
    if (!r.mode.empty()) j["mode"] = r.mode;
    if (!r.workspace_mount.empty()) j["workspaceMount"] = r.workspace_mount;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ContainerSpec build_container_spec(const TurnRequest& req, const config::HostConfig& cfg) {
    if (req.image.empty()) throw RequestError("the turn names no image; pass --image IMAGE");
    if (req.argv.empty()) throw RequestError("the turn has no command; put it after '--'");
    validate_turn_id(req.turn_id);
    std::string image = check_image(req.image, cfg);
    check_record_type(req.record_type);
    check_exec_size(req);

    ContainerSpec s;
    s.label = turn_label(cfg, req.turn_id);
    s.image = image;
    s.argv = req.argv;
    s.env = req.env;
    s.timeout_ms = req.timeout_ms;
    s.network = cfg.network;
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
