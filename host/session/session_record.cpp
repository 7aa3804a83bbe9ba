#include "session/session_record.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fs/durable_file.h"
#include "log/logger.h"
#include "turn/turn_request.h"
#include "turn/turn_setup_error.h"

namespace radial::session {
namespace fs = std::filesystem;
using turn::TurnSetupError;

namespace {

std::string record_path(const std::string& state_dir, const std::string& id) {
    return sessions_dir(state_dir) + "/" + id + ".json";
}

nlohmann::json to_json(const SessionRecord& r) {
    return {{"id", r.id},
            {"label", r.label},
            {"image", r.image},
            {"workspace", r.workspace},
            {"workspaceOwner", r.workspace_owner},
            {"workspaceId", r.workspace_id},
            {"mode", r.mode},
            {"workdir", r.workdir},
            {"user", r.user},
            {"boxUser", r.box_user},
            {"runtime", r.runtime},
            {"idleTimeoutMs", r.idle_timeout_ms},
            {"maxLifetimeMs", r.max_lifetime_ms},
            {"createdAtMs", r.created_at_ms},
            {"createdClockLeadMs", r.created_clock_lead_ms},
            {"createdBootId", r.created_boot_id},
            {"imageDigest", r.image_digest},
            {"fromSnapshot", r.from_snapshot},
            {"policy", r.policy},
            {"manifest", manifest_json(r.manifest)},
            {"uncheckedTurn", r.unchecked_turn},
            {"noSnapshotBecause", r.no_snapshot_because},
            {"scanKey", r.scan_key},
            {"fingerprints", fingerprints_json(r.fingerprints)}};
}

SessionRecord from_json(const nlohmann::json& j) {
    SessionRecord r;
    r.id = j.at("id").get<std::string>();
    r.label = j.at("label").get<std::string>();
    r.image = j.at("image").get<std::string>();
    r.workspace = j.at("workspace").get<std::string>();
    r.workspace_owner = j.value("workspaceOwner", "");
    r.workspace_id = j.value("workspaceId", "");
    r.mode = j.at("mode").get<std::string>();
    r.workdir = j.at("workdir").get<std::string>();
    r.user = j.at("user").get<std::string>();
    r.box_user = j.value("boxUser", "");
    r.runtime = j.value("runtime", "");
    r.idle_timeout_ms = j.at("idleTimeoutMs").get<std::uint64_t>();
    r.max_lifetime_ms = j.at("maxLifetimeMs").get<std::uint64_t>();
    r.created_at_ms = j.at("createdAtMs").get<std::int64_t>();
    r.created_clock_lead_ms = j.value("createdClockLeadMs", std::int64_t{-1});
    r.created_boot_id = j.value("createdBootId", "");
    // Records of sessions made before snapshots existed lack these: such a session takes none.
    r.image_digest = j.value("imageDigest", "");
    r.from_snapshot = j.value("fromSnapshot", "");
    r.policy = j.value("policy", "");
    if (j.contains("manifest")) r.manifest = manifest_from_json(j.at("manifest"));
    r.unchecked_turn = j.value("uncheckedTurn", "");
    r.no_snapshot_because = j.value("noSnapshotBecause", "");
    r.scan_key = j.value("scanKey", "");
    if (j.contains("fingerprints")) r.fingerprints = fingerprints_from_json(j.at("fingerprints"));
    return r;
}

} // namespace

std::optional<std::string> other_runtime(const SessionRecord& session,
                                         std::string_view runtime_id) {
    if (session.runtime.empty() || session.runtime == runtime_id) return std::nullopt;
    return fmt::format(
        "session '{}' was created under runtime '{}', whose box it is; runtime '{}' neither "
        "lists nor ends it: pass --runtime {} (or set run.containerRuntime = \"{}\")",
        session.id, session.runtime, runtime_id, session.runtime, session.runtime);
}

nlohmann::json manifest_json(const std::vector<ManifestStep>& steps) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& m : steps) {
        out.push_back({{"turn", m.turn},
                       {"argv", m.argv},
                       {"workdir", m.workdir},
                       {"exitCode", m.exit_code},
                       {"env", m.env}});
        if (!m.egress.empty()) out.back()["egress"] = m.egress;
    }
    return out;
}

std::vector<std::string> manifest_env(const ContainerSpec& exec) {
    std::vector<std::string> env;
    for (const auto& e : exec.env) {
        if (e.name.rfind("RADIAL_", 0) == 0) continue;
        env.push_back(e.secret ? e.name : e.name + "=" + e.value);
    }
    std::sort(env.begin(), env.end());
    return env;
}

std::vector<ManifestStep> manifest_from_json(const nlohmann::json& j) {
    std::vector<ManifestStep> steps;
    for (const auto& m : j)
        steps.push_back({m.at("turn").get<std::string>(),
                         m.at("argv").get<std::vector<std::string>>(),
                         m.at("workdir").get<std::string>(), m.at("exitCode").get<int>(),
                         m.value("env", std::vector<std::string>{}),
                         m.value("egress", std::vector<std::string>{})});
    return steps;
}

std::string session_label(const config::HostConfig& cfg, const std::string& id) {
    return session_label_prefix(cfg) + id;
}

std::string session_label_prefix(const config::HostConfig& cfg) {
    return fmt::format("radial-session-{}-", cfg.instance_id);
}

std::string sessions_dir(const std::string& state_dir) { return state_dir + "/sessions"; }

std::string session_socket_dir(const std::string& state_dir, const std::string& id) {
    return sessions_dir(state_dir) + "/" + id + ".run";
}

std::string session_identity_dir(const std::string& state_dir, const std::string& id) {
    return sessions_dir(state_dir) + "/" + id + ".identity";
}

std::string session_lock_dir(const std::string& state_dir, const std::string& id) {
    const std::string dir = sessions_dir(state_dir) + "/" + id + ".lock";
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
        throw TurnSetupError(
            fmt::format("creating the session lock '{}': {}", dir, std::strerror(errno)));
    return dir;
}

void reclaim_socket_dir(const std::string& state_dir, const std::string& id) {
    if (::geteuid() != 0) return;
    const std::string dir = session_socket_dir(state_dir, id);
    struct stat st {};
    // The sessions directory is root's 0700: the box cannot swap this path, only its contents.
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        ::lchown(dir.c_str(), 0, 0) != 0 || ::chmod(dir.c_str(), 0700) != 0)
        throw TurnSetupError(fmt::format(
            "taking back the session's socket directory '{}': {}; remove the session and "
            "create another",
            dir, std::strerror(errno)));
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        std::error_code rm;
        fs::remove_all(e.path(), rm); // never follows a link
        if (rm) throw TurnSetupError(fmt::format("emptying '{}': {}", dir, rm.message()));
    }
}

void save_session(const std::string& state_dir, const SessionRecord& r) {
    const std::string dir = sessions_dir(state_dir);
    std::error_code ec;
    fs::create_directories(dir, ec);
    ::chmod(dir.c_str(), 0700);
    const std::string path = record_path(state_dir, r.id);
    try {
        if (!fs_util::publish_file(
                dir, path,
                to_json(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
                0600))
            throw TurnSetupError(
                fmt::format("session '{}' exists already ({}); pick another id or remove it with "
                            "'radiald session rm {}'",
                            r.id, path, r.id));
    } catch (const TurnSetupError&) {
        throw;
    } catch (const std::exception& e) {
        throw TurnSetupError(fmt::format("writing session record '{}': {}", path, e.what()));
    }
}

void update_session(const std::string& state_dir, const SessionRecord& r) {
    const std::string path = record_path(state_dir, r.id);
    try {
        fs_util::replace_file(
            sessions_dir(state_dir), path,
            to_json(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", 0600);
    } catch (const std::exception& e) {
        throw TurnSetupError(fmt::format("writing session record '{}': {}", path, e.what()));
    }
}

std::optional<SessionRecord> load_session(const std::string& state_dir, const std::string& id) {
    // An id names a file under the sessions directory: never a path ("../…").
    try {
        turn::validate_turn_id(id);
    } catch (const turn::RequestError&) {
        throw turn::RequestError(fmt::format(
            "session id '{}' is not one radiald makes (a-z, 0-9, '-'); see 'radiald session ls'",
            id));
    }
    const std::string path = record_path(state_dir, id);
    errno = 0;
    std::ifstream in(path);
    if (!in) {
        // Only a record that is not there is no session: a failure to open one that is (no
        // descriptor left, no memory) must not refuse its turn for good as "no such session".
        const int open_errno = errno != 0 ? errno : EIO;
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return std::nullopt;
        throw TurnSetupError(
            fmt::format("cannot read session record '{}': {}", path, std::strerror(open_errno)));
    }
    try {
        SessionRecord r = from_json(nlohmann::json::parse(in));
        if (r.id != id) throw std::runtime_error("it names session '" + r.id + "'");
        return r;
    } catch (const std::exception& e) {
        throw TurnSetupError(fmt::format(
            "session record '{}' is not one radiald wrote ({}); remove it", path, e.what()));
    }
}

std::vector<SessionRecord> list_sessions(const std::string& state_dir) {
    std::vector<SessionRecord> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(sessions_dir(state_dir), ec)) {
        if (e.path().extension() != ".json") continue;
        try {
            if (auto r = load_session(state_dir, e.path().stem().string()))
                out.push_back(std::move(*r));
        } catch (const std::exception& x) {
            log::warn("session", "{}", x.what());
        }
    }
    std::sort(out.begin(), out.end(),
              [](const SessionRecord& a, const SessionRecord& b) { return a.id < b.id; });
    return out;
}

std::vector<std::string> session_labels(const config::HostConfig& cfg) {
    std::vector<std::string> labels;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(sessions_dir(cfg.state_dir), ec)) {
        if (e.path().extension() != ".json") continue;
        const std::string id = e.path().stem().string();
        try {
            if (auto r = load_session(cfg.state_dir, id)) labels.push_back(std::move(r->label));
        } catch (const std::exception& x) {
            // Unreadable now (no descriptor left) or not one radiald wrote: its box may still
            // live under the label its id gives, whose ids must stay leased.
            log::warn("session", "{}; its box '{}' is taken for live", x.what(),
                      session_label(cfg, id));
            labels.push_back(session_label(cfg, id));
        }
    }
    std::sort(labels.begin(), labels.end());
    return labels;
}

void remove_session(const std::string& state_dir, const std::string& id) noexcept {
    // The record first, the lock last: a turn that locks a lock directory made after this one
    // went then finds no record and ends (begin_session_turn), instead of writing the record of a
    // removed session back.
    std::error_code ec;
    fs::remove(record_path(state_dir, id), ec);
    if (ec)
        log::warn("session", "removing session record '{}': {}", record_path(state_dir, id),
                  ec.message());
    fs::remove_all(session_socket_dir(state_dir, id), ec);
    if (ec)
        log::warn("session", "removing '{}': {}", session_socket_dir(state_dir, id), ec.message());
    fs::remove(sessions_dir(state_dir) + "/" + id + ".lock", ec);
}

[[gnu::noinline]] std::unique_ptr<turn::WorkspaceLock> lock_session(const std::string& state_dir,
                                                                    const std::string& id,
                                                                    std::string& refused) {
    try {
        if (auto held = turn::WorkspaceLock::try_acquire(session_lock_dir(state_dir, id))) {
            reclaim_socket_dir(state_dir, id); // held: no other turn uses it now
            return std::make_unique<turn::WorkspaceLock>(std::move(*held));
        }
        refused = fmt::format(
            "session '{}' is running another turn (one turn per session at a time); wait for it "
            "to end",
            id);
    } catch (const std::exception& e) {
        refused = e.what();
    }
    return nullptr;
}

} // namespace radial::session
