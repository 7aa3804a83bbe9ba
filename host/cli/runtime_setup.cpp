#include "cli/runtime_setup.h"

#include <fmt/format.h>
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <cerrno>
#include <cstring>
#include <radial/host/box_root_client.hpp>
#include <string_view>
#include <vector>

#include "config/box_identity.h"
#include "config/pool_keys.h"
#include "isolation/isolated_runtime.h"
#include "loader/signal_snapshot.h"
#include "log/logger.h"
#include "pool/warm_pool.h"
#include "session/session_record.h"
#include "socket/turn_socket_server.h"
#include "turn/box_user_env.h"
#include "turn/turn_request.h"

namespace radial::cli {

#ifndef RADIAL_VERSION
#define RADIAL_VERSION "0.0.0"
#endif

std::string host_version() { return std::string("radiald ") + RADIAL_VERSION; }

std::string executable_dir() { return boost::dll::program_location().parent_path().string(); }

namespace {

void warn_signals_put_back(const loader::LoadedPlugin& p, const char* when,
                           const std::vector<std::string>& changed) noexcept {
    if (changed.empty()) return;
    log::warn("loader",
              "runtime '{}' ('{}') changed radiald's signal handling when it was {} ({}); put "
              "back: a plugin must leave signal masks and handlers alone (docs/design.md §5.8)",
              p.info.id, p.path, when, fmt::join(changed, ", "));
}

} // namespace

host::RuntimeClient open_runtime(const config::HostConfig& cfg, bool preflight,
                                 std::vector<std::string>* installed) {
    loader::LoadedPlugin plugin;
    try {
        auto plugins = loader::load_plugins(cfg.plugin_dirs);
        // The refusal names what selected the id, --runtime or run.containerRuntime, so a typo
        // in either is fixed where it was made.
        std::vector<std::string> ids;
        for (const auto& p : plugins) ids.push_back(p.info.id);
        if (installed != nullptr) *installed = ids;
        if (!ids.empty() && std::find(ids.begin(), ids.end(), cfg.container_runtime) == ids.end())
            throw StartupError(config::unknown_runtime_message(cfg, ids));
        plugin = loader::select_plugin(plugins, cfg.container_runtime, cfg.plugin_dirs);
        for (const auto& p : plugins) warn_signals_put_back(p, "loaded", p.signals_put_back);
    } catch (const loader::LoadError& e) {
        throw StartupError(e.what());
    }
    log::debug("loader", "runtime '{}' {} from '{}'", plugin.info.id, plugin.info.version,
               plugin.path);

    std::string tag = "plugin:" + plugin.info.id;
    auto log_fn = [tag](std::uint32_t level, std::string_view message) {
        log::write(static_cast<log::Level>(level > 3 ? 3 : level), tag, message);
    };
    // Under run.pluginIsolation = "process" radiald drives a descriptor whose calls run in a
    // radial-plugin-host process (docs/design.md §5.12); the library stays mapped here only for
    // its descriptor.
    std::shared_ptr<const void> keep_alive = plugin.library;
    const radial_runtime_descriptor* descriptor = plugin.descriptor;
    if (!cfg.plugin_in_process) {
        const std::string helper = isolation::find_plugin_host(executable_dir());
        if (helper.empty())
            throw StartupError(fmt::format(
                "{}run.pluginIsolation is \"process\", but there is no radial-plugin-host in "
                "{}/../lib/radial; reinstall radiald, or set run.pluginIsolation = "
                "\"in-process\"",
                cfg.where("run.pluginIsolation"), executable_dir()));
        auto isolated =
            isolation::IsolatedPlugin::make(*plugin.descriptor, plugin.path, helper,
                                            std::chrono::milliseconds(cfg.plugin_call_timeout_ms));
        descriptor = isolated->descriptor();
        keep_alive = std::make_shared<
            std::pair<std::shared_ptr<const void>, std::shared_ptr<isolation::IsolatedPlugin>>>(
            plugin.library, std::move(isolated));
    }
    auto client = [&] {
        // create runs on this thread, as the loader did: its signal mask and the handlers are
        // put back after it too (docs/design.md §5.8).
        const loader::SignalSnapshot signals;
        struct Restore {
            const loader::SignalSnapshot& s;
            const loader::LoadedPlugin& p;
            ~Restore() { warn_signals_put_back(p, "created", s.restore()); }
        } restore{signals, plugin};
        try {
            return host::RuntimeClient::create(keep_alive, descriptor, cfg.runtime_section,
                                               plugin.path, host_version(), log_fn);
        } catch (const host::RuntimeError& e) {
            if (!e.key().empty()) {
                std::string key = cfg.runtime_section.section + "." + e.key();
                // A runtime names the key itself ("reading run.docker.pull: …", as
                // plugins/support/settings_error.h words it): said once, with where it is set.
                std::string_view why = e.what();
                if (const std::string own = "reading " + key + ": "; why.starts_with(own))
                    why.remove_prefix(own.size());
                throw StartupError(fmt::format("{}{}: {}", cfg.where(key), key, why));
            }
            throw StartupError(fmt::format("creating runtime '{}' from '{}': {}", plugin.info.id,
                                           plugin.path, e.what()));
        }
    }();
    // Every call but run gets a deadline, so a stuck plugin fails the command with its name
    // and the call instead of hanging it (run is bounded by the turn's own timeout).
    client.set_call_deadline(std::chrono::milliseconds(cfg.plugin_call_timeout_ms));
    if (preflight) {
        try {
            client.preflight();
        } catch (const host::RuntimeError& e) {
            throw StartupError(
                fmt::format("runtime '{}' cannot run boxes: {}", plugin.info.id, e.what()));
        }
    }
    return client;
}

turn::ResolvedTransport resolve_turn_transport(const config::HostConfig& cfg,
                                               const host::RuntimeClient& client) {
    try {
        auto route = client.tcp_route();
        auto resolved = turn::resolve_transport(
            turn::parse_transport_setting(cfg.turn_transport),
            client.has_capability(RADIAL_CAP_UNIX_SOCKET_MOUNTS), client.info().id,
            cfg.turn_socket_host, route.bind_host, route.box_host);
        if (resolved.transport == socket::Transport::tcp) {
            // A tcp socket works only if the box can reach a host port: asked of the runtime with
            // the network every box gets (docs/design.md §7.4, §9.3), so a box that could never
            // post a record is refused here, not found out by its first turn.
            ContainerSpec probe;
            probe.label = "radial-turn-startup-check";
            probe.image = "startup-check";
            probe.argv = {"true"};
            probe.network = cfg.network;
            probe.host_ports = {1};
            for (const auto& d : client.describe(probe))
                if (d.field == RADIAL_FIELD_HOST_PORTS && d.disposition == RADIAL_DISP_REFUSED)
                    throw turn::TransportError(fmt::format(
                        "run.turnTransport resolves to tcp (bound on {}), but runtime '{}' "
                        "cannot let its boxes reach it: {}; set run.turnTransport to \"unix\" or "
                        "\"auto\" where the runtime can pass a unix socket, or give boxes a "
                        "network (run.network) that reaches the host",
                        resolved.bind_host, client.info().id, d.note));
        }
        return resolved;
    } catch (const turn::TransportError& e) {
        throw StartupError(fmt::format("{}{}", cfg.where("run.turnTransport"), e.what()));
    } catch (const host::RuntimeError& e) {
        throw StartupError(fmt::format("runtime '{}': {}", client.info().id, e.what()));
    }
}

void check_config_against_runtime(const config::HostConfig& cfg,
                                  const host::RuntimeClient& client) {
    const std::string& id = client.info().id;
    if (cfg.codex_auth && !client.has_capability(RADIAL_CAP_HOST_UID_MOUNTS))
        throw StartupError(
            fmt::format("{}run.codexAuth is set but runtime '{}' cannot mount files keyed to the "
                        "host's uid (it does "
                        "not report {}); remove run.codexAuth or select a runtime that does",
                        cfg.where("run.codexAuth"), id, RADIAL_CAP_HOST_UID_MOUNTS));
    if (cfg.codex_auth) {
        // Each turn copies the file again (docs/design.md §8.7); refusing here means a missing or
        // unreadable file is named before any turn is claimed.
        const std::string path = turn::codex_auth_path(cfg.codex_auth_file);
        const std::string key = cfg.codex_auth_file.empty() ? "run.codexAuth" : "run.codexAuthFile";
        if (::access(path.c_str(), R_OK) != 0)
            throw StartupError(fmt::format(
                "{}{}: the Codex credentials file '{}' cannot be read: {}; log in with codex "
                "there, or set run.codexAuthFile to the auth.json to use",
                cfg.where(key), key, path, std::strerror(errno)));
        if (::geteuid() != 0)
            throw StartupError(fmt::format(
                "{}run.codexAuth: giving the credentials to the box user needs radiald to run "
                "as root; run it as root or remove run.codexAuth",
                cfg.where("run.codexAuth")));
    }
    // The warm pool is the daemon's, but a turn is never queued for a daemon that would not
    // start (docs/design.md §7.4).
    if (auto why = pool::pool_refusal(cfg, client))
        throw StartupError(fmt::format("{}{}", cfg.where("run.pool.size"), *why));
    // A representative spec carrying exactly what the operator's config puts on every box.
    ContainerSpec probe;
    probe.label = "radial-turn-startup-check";
    probe.image = "startup-check";
    probe.argv = {"true"};
    probe.network = cfg.network;
    // Every box carries a user: the box ids stand in for the owner radiald will find per turn.
    probe.user = config::uses_box_id_range(cfg)
                     ? fmt::format("{}:{}", config::default_box_ids(cfg).first,
                                   config::default_box_ids(cfg).second)
                     : cfg.user;
    probe.memory_bytes = cfg.memory_bytes;
    probe.cpus_milli = cfg.cpus_milli;
    probe.pids_limit = cfg.pids_limit;
    struct Keyed {
        std::uint32_t field;
        const char* key;
    };
    const Keyed keyed[] = {{RADIAL_FIELD_NETWORK, "run.network"},
                           {RADIAL_FIELD_USER, "run.user"},
                           {RADIAL_FIELD_MEMORY, "run.memory"},
                           {RADIAL_FIELD_CPUS, "run.cpus"},
                           {RADIAL_FIELD_PIDS_LIMIT, "run.pidsLimit"}};
    auto is_bound = [](std::uint32_t f) {
        return f == RADIAL_FIELD_MEMORY || f == RADIAL_FIELD_CPUS || f == RADIAL_FIELD_PIDS_LIMIT;
    };
    try {
        for (const auto& d : client.describe(probe))
            for (const auto& k : keyed) {
                if (d.field != k.field) continue;
                if (d.disposition == RADIAL_DISP_REFUSED)
                    throw StartupError(fmt::format(
                        "{}{}: runtime '{}' refuses it: {}{}", cfg.where(k.key), k.key, id, d.note,
                        is_bound(d.field)
                            ? fmt::format("; choose a runtime that enforces it, or set {} = 0 to "
                                          "run boxes without this bound (only what the runtime "
                                          "itself enforces, if anything, then holds)",
                                          k.key)
                            : std::string()));
                // A bound the runtime meets only in part, or not at all, is said once here rather
                // than discovered by a turn (docs/design.md §6.4).
                if (is_bound(d.field) && d.disposition != RADIAL_DISP_HONOURED)
                    log::warn("runtime", "runtime '{}' {} {}: {}", id,
                              d.disposition == RADIAL_DISP_BRIDGED ? "bridges" : "supersedes",
                              k.key, d.note);
            }
    } catch (const host::RuntimeError& e) {
        throw StartupError(fmt::format("runtime '{}' could not describe a box: {}", id, e.what()));
    }
}

namespace {

// Who on the host already is `uid` or `gid`, or why they are no ids; empty when nobody is.
std::string box_root_ids_taken(std::uint32_t uid, std::uint32_t gid) {
    constexpr std::uint32_t kNoId = static_cast<std::uint32_t>(-1); // chown's "leave it"
    if (uid == kNoId || gid == kNoId) return "(uid_t)-1 is no id";
    if (uid == ::geteuid()) return fmt::format("uid {} is radiald's own", uid);
    if (gid == ::getegid()) return fmt::format("gid {} is radiald's own", gid);
    std::vector<char> buf(16384);
    passwd pw{};
    passwd* found = nullptr;
    if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr)
        return fmt::format("uid {} is host user '{}'", uid, found->pw_name);
    group gr{};
    group* g = nullptr;
    if (::getgrgid_r(gid, &gr, buf.data(), buf.size(), &g) == 0 && g != nullptr)
        return fmt::format("gid {} is host group '{}'", gid, g->gr_name);
    return {};
}

} // namespace

BoxRootAnswer resolve_box_root(const config::HostConfig& cfg, const host::RuntimeClient& client) {
    BoxRootAnswer out;
    const std::string& id = client.info().id;
    if (!cfg.user.empty()) {
        out.why_not = fmt::format("run.user is set ('{}')", cfg.user);
    } else {
        try {
            auto answer = host::BoxRootClient::ask(client);
            if (const auto* ids = std::get_if<host::BoxRootIds>(&answer))
                out.ids = std::make_pair(ids->host_uid, ids->host_gid);
            else
                out.why_not = std::get<std::string>(answer);
        } catch (const host::RuntimeError& e) {
            throw StartupError(fmt::format(
                "runtime '{}' could not say whether boxes may run as root in a user namespace "
                "of their own: {}",
                id, e.what()));
        }
    }
    // radiald hands a box-root turn's workspace to these ids for the turn (docs/design.md §8.8):
    // ids that are someone else's would hand it to that someone.
    if (out.ids)
        if (std::string whose = box_root_ids_taken(out.ids->first, out.ids->second); !whose.empty())
            throw StartupError(fmt::format(
                "runtime '{}' says its boxes run as root in a user namespace of their own with "
                "host ids {}:{}, but {}; radiald hands a turn's workspace to those ids, so they "
                "must be nobody's on the host: check the engine's user-namespace remapping "
                "(dockerd --userns-remap, /etc/subuid and /etc/subgid) or set run.user",
                id, out.ids->first, out.ids->second, whose));
    if (out.ids)
        log::info("runtime",
                  "runtime '{}': boxes run as root in a user namespace of their own (host ids "
                  "{}:{}); a workspace-write turn can install into the image's system "
                  "directories (docs/design.md §8.8)",
                  id, out.ids->first, out.ids->second);
    else // said by `config check`; at debug here, so every turn's stderr does not repeat it
        log::debug(
            "runtime",
            "runtime '{}': boxes never run as root, so a workspace-write turn cannot install "
            "into the image's system directories (only where the image lets any user "
            "write): {}{}",
            id, out.why_not,
            // The runtime's answer may cite it already (the docker plugin's does).
            out.why_not.find("docs/design.md §8.8") == std::string::npos ? " (docs/design.md §8.8)"
                                                                         : "");
    return out;
}

void check_pool_ids(const config::HostConfig& cfg, const BoxRootAnswer& box_root) {
    // Only with the runtime's answer: under a box root no id is leased (docs/design.md §8.8).
    if (auto why = box_root.ids ? std::nullopt : config::pool_id_shortfall(cfg))
        throw StartupError(fmt::format("{}{}", cfg.where("run.pool.size"), *why));
}

CheckedRuntime open_checked_runtime(const config::HostConfig& cfg, bool preflight) {
    std::vector<std::string> installed;
    host::RuntimeClient client = open_runtime(cfg, false, &installed);
    check_config_against_runtime(cfg, client);
    turn::ResolvedTransport transport = resolve_turn_transport(cfg, client);
    BoxRootAnswer box_root;
    if (preflight) {
        try {
            client.preflight();
        } catch (const host::RuntimeError& e) {
            throw StartupError(
                fmt::format("runtime '{}' cannot run boxes: {}", client.info().id, e.what()));
        }
        box_root = resolve_box_root(cfg, client);
        check_pool_ids(cfg, box_root);
    }
    return CheckedRuntime{std::move(client), std::move(transport), std::move(box_root),
                          std::move(installed)};
}

std::string journal_path(const config::HostConfig& cfg) {
    return cfg.state_dir + "/journal.sqlite3";
}

namespace {

// turn::new_turn_id(): "20261206t164431-" and 12 hex digits; a session's generated id is one.
constexpr std::size_t kGeneratedIdBytes = 28;
// The longest name radiald binds in a turn's socket directory: egress.sock, beside turn.sock.
constexpr std::string_view kLongestSocketName = "/egress.sock";

// <stateDir>/turns/<id>/egress.sock: a one-shot turn's socket directory.
std::size_t turn_socket_bytes(const config::HostConfig& cfg, std::size_t id_bytes) {
    return cfg.state_dir.size() + std::string_view("/turns/").size() + id_bytes +
           kLongestSocketName.size();
}

// <stateDir>/sessions/<id>.run/egress.sock: a session's socket directory.
std::size_t session_socket_bytes(const config::HostConfig& cfg, std::size_t id_bytes) {
    return cfg.state_dir.size() + std::string_view("/sessions/").size() + id_bytes +
           std::string_view(".run").size() + kLongestSocketName.size();
}

} // namespace

void check_socket_paths_fit(const config::HostConfig& cfg) {
    // Every one-shot turn over the unix transport binds there (a pool box's directory,
    // <stateDir>/pool/<id>/run, is shorter). A session's directory is longer, and is checked when
    // the session is made (check_session_socket_fits): a state directory that only sessions
    // outgrow still runs every other turn.
    const std::size_t turn = turn_socket_bytes(cfg, kGeneratedIdBytes);
    if (turn <= socket::kMaxUnixPathBytes) return;
    throw StartupError(fmt::format(
        "{}run.stateDir: '{}' is {} bytes, so a unix socket radiald binds under it for a turn "
        "(<stateDir>/turns/<id>/egress.sock, for a generated id) would be {} bytes, over the "
        "limit of {} bytes of a socket address; choose a state directory of at most {} bytes",
        cfg.where("run.stateDir"), cfg.state_dir, cfg.state_dir.size(), turn,
        socket::kMaxUnixPathBytes, cfg.state_dir.size() - (turn - socket::kMaxUnixPathBytes)));
}

void check_session_socket_fits(const config::HostConfig& cfg, const std::string& id) {
    const std::size_t bytes = session_socket_bytes(cfg, id.size());
    if (bytes <= socket::kMaxUnixPathBytes) return;
    const std::size_t over = bytes - socket::kMaxUnixPathBytes;
    const bool generated_fits =
        session_socket_bytes(cfg, kGeneratedIdBytes) <= socket::kMaxUnixPathBytes;
    throw turn::RequestError(fmt::format(
        "session '{}': the session's turns bind their unix sockets under run.stateDir '{}', as "
        "'{}/egress.sock' ({} bytes), over the limit of {} bytes of a socket address; {}",
        id, cfg.state_dir, session::session_socket_dir(cfg.state_dir, id), bytes,
        socket::kMaxUnixPathBytes,
        id.size() > over
            ? fmt::format("give a --session-id of at most {} bytes{}, or choose a run.stateDir of "
                          "at most {} bytes",
                          id.size() - over,
                          generated_fits ? " (or leave it out: a generated id fits)" : "",
                          cfg.state_dir.size() - over)
            : fmt::format("choose a run.stateDir of at most {} bytes",
                          cfg.state_dir.size() - over)));
}

} // namespace radial::cli
