#include "config/run_keys.h"

#include <fmt/format.h>
#include <radial/internal/names.h>

#include <radial/units.hpp>

#include "config/key_table.h"
#include "config/metrics_endpoint.h"
#include "config/pool_keys.h"
#include "config/turn_bounds.h"
#include "config/workspace_keys.h"
#include "log/logger.h"

namespace radial::config {
namespace {

// More parallel turns than this is a typo, not a plan: each one holds a box, a socket and a thread.
constexpr std::int64_t kMaxConcurrentTurns = 256;

// The same rule as turn::is_image_digest; the config reader does not depend on turn/.
bool is_pinned_digest(const std::string& d) {
    return d.size() == 71 && d.compare(0, 7, "sha256:") == 0 &&
           d.find_first_not_of("0123456789abcdef", 7) == std::string::npos;
}

// Reads `table` by `readers`; every key read is remembered where it stands in the file first, so
// a refusal (and a later one, such as two bounds set at once) names its line.
void read_keys_of(Reader& r, const toml::table& table, std::string_view prefix,
                  const std::vector<KeyReader>& readers, const UnknownKeys& unknown,
                  const std::function<bool(const std::string&, const toml::node&)>& other = {}) {
    std::vector<KeyReader> remembering;
    for (const auto& k : readers)
        remembering.push_back(
            {k.name, [&r, &read = k.read](const std::string& key, const toml::node& v) {
                 r.remember(key, v);
                 read(key, v);
             }});
    read_keys(
        table, prefix, remembering, unknown,
        [&](const std::string& key, const toml::node& v, const std::string& problem) {
            r.remember(key, v);
            r.fail(key, problem);
        },
        other);
}

// A whole number from `min` to `max`, or `problem`.
std::int64_t whole(Reader& r, const std::string& key, const toml::node& v, std::int64_t min,
                   std::int64_t max, const std::string& problem) {
    r.remember(key, v);
    const auto* i = v.as_integer();
    if (i == nullptr || i->get() < min || i->get() > max) r.fail(key, problem);
    return i->get();
}

bool boolean(Reader& r, const std::string& key, const toml::node& v) {
    r.remember(key, v);
    if (!v.is_boolean()) r.fail(key, "must be true or false");
    return v.as_boolean()->get();
}

// A string that must be one of `allowed`, or `problem`.
std::string one_of(Reader& r, const std::string& key, const toml::node& v,
                   std::initializer_list<std::string_view> allowed, const std::string& problem) {
    std::string s = r.string(key, v);
    for (auto a : allowed)
        if (s == a) return s;
    r.fail(key, problem);
}

// run.memory (docs/design.md §6.4); 0 leaves the bound to the runtime.
void read_memory(Reader& r, const std::string& key, const toml::node& v, HostConfig& cfg) {
    const std::uint64_t bytes =
        r.size(key, v, 0, units::kMaxSizeBytes, "\"2g\" (0: the runtime's own)");
    // No engine starts a box in less (docker's minimum is 6 MiB).
    if (bytes != 0 && bytes < (6ull << 20))
        r.fail(key, "must be a size of at least \"6m\", such as \"2g\" (0: the runtime's own)");
    cfg.memory_bytes = bytes;
}

// run.cpus (docs/design.md §6.4): a count, a fraction or a string; 0 leaves it to the runtime.
void read_cpus(Reader& r, const std::string& key, const toml::node& v, HostConfig& cfg) {
    std::optional<std::uint64_t> milli;
    // Only a written zero means "the runtime's own": a tiny count that rounds to 0 is refused,
    // not taken for no bound at all.
    bool zero = false;
    if (const auto* i = v.as_integer(); i != nullptr && i->get() >= 0 && i->get() <= 1'000'000) {
        milli = static_cast<std::uint64_t>(i->get()) * 1000;
        zero = i->get() == 0;
    } else if (const auto* f = v.as_floating_point();
               f != nullptr && f->get() >= 0 && f->get() <= 1e6) {
        milli = static_cast<std::uint64_t>(f->get() * 1000.0 + 0.5);
        zero = f->get() == 0;
    } else if (const auto* str = v.as_string()) {
        milli = units::parse_cpus_milli(str->get());
        zero = str->get().find_first_not_of("0.") == std::string::npos;
    }
    if (!milli || (*milli < 10 && !(zero && *milli == 0)))
        r.fail(key,
               "must be a CPU count of at least 0.01, such as 2 or 0.5 (0: the runtime's own)");
    const std::uint64_t host = online_cpus_milli();
    if (host != 0 && *milli > host)
        r.fail(key, fmt::format("{} CPUs is more than this host's {} online CPUs; give at most {}",
                                static_cast<double>(*milli) / 1000, host / 1000, host / 1000));
    cfg.cpus_milli = *milli;
}

// run.boxIdRange: "FIRST-LAST", decimal. Not above 2^31-1: some tools take ids as signed.
void read_box_id_range(Reader& r, const std::string& key, const toml::node& v, HostConfig& cfg) {
    const std::string text = r.string(key, v);
    const auto dash = text.find('-');
    auto number = [](const std::string& s) -> std::optional<std::uint64_t> {
        if (!internal::is_decimal(s, 10)) return std::nullopt;
        return std::stoull(s);
    };
    auto first = dash == std::string::npos ? std::nullopt : number(text.substr(0, dash));
    auto last = dash == std::string::npos ? std::nullopt : number(text.substr(dash + 1));
    if (!first || !last || *first == 0 || *first > *last || *last > 2147483647)
        r.fail(key,
               "must be \"FIRST-LAST\", decimal ids with 0 < FIRST <= LAST <= 2147483647, e.g. "
               "\"2000000000-2000065535\"");
    cfg.box_id_first = static_cast<std::uint32_t>(*first);
    cfg.box_id_last = static_cast<std::uint32_t>(*last);
}

void read_allowed_images(Reader& r, const std::string& key, const toml::node& v, HostConfig& cfg) {
    cfg.allowed_images = r.strings(key, v);
    for (const auto& pattern : cfg.allowed_images) {
        if (pattern.empty()) r.fail(key, "must not contain an empty pattern");
        // "PATTERN@sha256:<64 hex>" pins the image (turn/image_pin.h).
        const auto at = pattern.rfind("@sha256:");
        if (at != std::string::npos && !is_pinned_digest(pattern.substr(at + 1)))
            r.fail(key, fmt::format("'{}' pins no digest: give PATTERN@sha256: and the 64 "
                                    "lower-case hex digits of the image's content digest",
                                    pattern));
    }
}

void read_secret_names(Reader& r, const std::string& key, const toml::node& v, HostConfig& cfg) {
    cfg.secret_names = r.strings(key, v);
    for (const auto& pattern : cfg.secret_names)
        if (pattern.empty() ||
            pattern.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                      "0123456789_*?[]!-") != std::string::npos)
            r.fail(key, fmt::format("'{}' is not a pattern of variable names (A-Z, a-z, 0-9, '_' "
                                    "and the shell's * ? [...]), e.g. \"GITHUB_TOKEN\" or "
                                    "\"TEAM_A_*\"",
                                    pattern));
}

void read_plugin_dirs(Reader& r, const std::string& key, const toml::node& v, RunTable& out) {
    r.remember(key, v);
    if (const auto* a = v.as_array()) {
        if (a->empty()) r.fail(key, "must name at least one directory");
        for (const auto& item : *a) {
            if (!item.is_string()) r.fail(key, "must be a string or an array of strings");
            out.plugin_dirs.emplace_back(*item.as_string());
        }
    } else {
        out.plugin_dirs.push_back(r.string(key, v));
    }
}

// A service of another workspace is reached by the edges of [run.workspaces] alone, never by an
// allow rule, a name map or DNS (docs/design.md §9.7, "Between boxes").
void reserved_suffix(Reader& r, const std::string& key, const std::string& host) {
    if (egress::is_service_host(host) || host == "*.radial")
        r.fail(key, fmt::format("'{}' is under the reserved suffix '{}', which names services of "
                                "[run.workspaces] (their edges decide who reaches them); remove it",
                                host, egress::kServiceSuffix));
}

// [run.egress] (docs/design.md §9.7).
std::vector<KeyReader> egress_readers(Reader& r, egress::EgressCeiling& out) {
    auto policy = [&r](auto read) {
        return [&r, read](const std::string& key, const toml::node& v) {
            try {
                read(key, v);
            } catch (const egress::PolicyError& e) {
                r.fail(key, e.what());
            }
        };
    };
    return {
        {"allow", policy([&](const std::string& key, const toml::node& v) {
             for (const auto& text : r.strings(key, v)) {
                 out.allow.push_back(egress::parse_allow_rule(text));
                 reserved_suffix(r, key, out.allow.back().host);
             }
         })},
        {"allowRanges", policy([&](const std::string& key, const toml::node& v) {
             for (const auto& text : r.strings(key, v))
                 out.allow_ranges.push_back(egress::parse_range(text));
         })},
        {"denyRanges", policy([&](const std::string& key, const toml::node& v) {
             for (const auto& text : r.strings(key, v))
                 out.deny_ranges.push_back(egress::parse_range(text));
         })},
        {"hosts", policy([&](const std::string& key, const toml::node& v) {
             const auto* t = v.as_table();
             if (t == nullptr) r.fail(key, "must be a table of name = \"address\"");
             for (const auto& [hk, hv] : *t) {
                 const auto* addr = hv.as_string();
                 boost::system::error_code ec;
                 if (addr != nullptr) boost::asio::ip::make_address(addr->get(), ec);
                 if (addr == nullptr || ec)
                     r.fail(key, fmt::format("'{}' must map to an IP address", hk.str()));
                 const std::string name =
                     egress::parse_allow_rule(std::string(hk.str()) + ":1").host;
                 // The broker looks a name up exactly: a wildcard here would never be used, and
                 // its names would go to DNS unpinned.
                 if (name.starts_with("*."))
                     r.fail(key, fmt::format("'{}' is a wildcard; hosts maps one name to one "
                                             "address, so list each name",
                                             hk.str()));
                 reserved_suffix(r, key, name);
                 out.hosts[name] = addr->get();
             }
         })},
        {"maxConnections",
         [&](const std::string& key, const toml::node& v) {
             out.max_connections = static_cast<std::size_t>(
                 whole(r, key, v, 1, 1024, "must be a number of connections from 1 to 1024"));
         }},
        {"maxBytesIn",
         [&](const std::string& key, const toml::node& v) {
             out.max_bytes_in =
                 r.size(key, v, 1, units::kMaxSizeBytes, "\"1g\" or \"256m\"", false);
         }},
        {"maxBytesOut",
         [&](const std::string& key, const toml::node& v) {
             out.max_bytes_out =
                 r.size(key, v, 1, units::kMaxSizeBytes, "\"1g\" or \"256m\"", false);
         }},
        {"runtimePolicy", [&](const std::string& key,
                              const toml::node& v) { out.runtime_policy = boolean(r, key, v); }},
    };
}

const UnknownKeys kEgressKeys{"[run.egress]", ""};
const UnknownKeys kRedactKeys{"[redact]", ""};
const UnknownKeys kPoolKeys{"[run.pool]", ""};
const UnknownKeys kRunKeys{"[run]", "the configuration reference in docs/configuration.md"};

std::vector<KeyReader> redact_readers(Reader& r, HostConfig& cfg) {
    return {
        {"envNames", [&](const std::string& key,
                         const toml::node& v) { cfg.redact.env_names = r.strings(key, v); }},
        {"values", [&](const std::string& key,
                       const toml::node& v) { cfg.redact.values = r.strings(key, v); }},
        {"minLength",
         [&](const std::string& key, const toml::node& v) {
             cfg.redact.min_length = static_cast<std::size_t>(
                 whole(r, key, v, 1, std::numeric_limits<std::int64_t>::max(),
                       "must be a positive number of bytes"));
         }},
    };
}

std::vector<KeyReader> run_readers(Reader& r, HostConfig& cfg, RunTable& out) {
    using V = const toml::node&;
    using K = const std::string&;
    std::vector<KeyReader> readers{
        {"containerRuntime", [&](K key, V v) { cfg.container_runtime = r.string(key, v); }},
        {"pluginDir", [&](K key, V v) { read_plugin_dirs(r, key, v, out); }},
        {"pluginIsolation",
         [&](K key, V v) {
             cfg.plugin_in_process =
                 one_of(r, key, v, {"in-process", "process"},
                        "must be \"in-process\" or \"process\" (a plugin host process of its own, "
                        "docs/configuration.md)") == "in-process";
         }},
        {"defaultTimeout",
         [&](K key, V v) {
             cfg.default_timeout_ms =
                 r.duration(key, v, 1, 30ull * 24 * 3'600'000, "\"30m\" or \"2h\"");
         }},
        {"maxTimeout",
         [&](K key, V v) {
             cfg.max_timeout_ms =
                 r.duration(key, v, 1, 30ull * 24 * 3'600'000, "\"1h\" or \"12h\"");
         }},
        {"pluginCallTimeout",
         [&](K key, V v) {
             cfg.plugin_call_timeout_ms = r.duration(key, v, 1, 3'600'000, "\"120s\" or \"2m\"");
         }},
        {"instanceId",
         [&](K key, V v) {
             cfg.instance_id = r.string(key, v);
             // No '-' (radial/internal/names.h says why).
             if (!internal::is_instance_id(cfg.instance_id))
                 r.fail(key,
                        "must match [a-z0-9]{1,32} (no '-'): it becomes part of every box label");
         }},
        {"stateDir",
         [&](K key, V v) {
             out.state_dir = r.string(key, v);
             if (out.state_dir.empty())
                 r.fail(key,
                        "must not be empty; name a directory, or remove the key for the "
                        "default, " +
                            default_state_dir());
         }},
        {"sharedWorkspaces", [&](K key, V v) { cfg.shared_workspaces = boolean(r, key, v); }},
        {"codexAuth", [&](K key, V v) { cfg.codex_auth = boolean(r, key, v); }},
        {"codexAuthFile",
         [&](K key, V v) {
             cfg.codex_auth_file = r.string(key, v);
             if (cfg.codex_auth_file.empty() || cfg.codex_auth_file.front() != '/')
                 r.fail(key, "must be an absolute path, such as \"/root/.codex/auth.json\"");
         }},
        {"network",
         [&](K key, V v) {
             cfg.network = r.string(key, v);
             // Another container's network namespace is that box's own: its loopback, where its
             // radial-init serves its turn's egress endpoint (docs/design.md §9.7).
             if (cfg.network.starts_with("container:"))
                 r.fail(key, "'" + cfg.network +
                                 "' joins another container's network namespace, and with it "
                                 "that box's loopback; name a network, or leave it unset for none");
         }},
        {"user", [&](K key, V v) { cfg.user = r.string(key, v); }},
        {"boxIdRange", [&](K key, V v) { read_box_id_range(r, key, v, cfg); }},
        {"turnTransport",
         [&](K key, V v) {
             cfg.turn_transport = one_of(r, key, v, {"auto", "unix", "tcp"},
                                         "must be \"auto\", \"unix\" or \"tcp\"");
         }},
        {"turnSocketHost",
         [&](K key, V v) {
             cfg.turn_socket_host = r.string(key, v);
             if (cfg.turn_socket_host.empty()) r.fail(key, "must not be empty");
         }},
        // A record is read into memory whole: more than 1g is a typo.
        {"maxRecordBytes",
         [&](K key, V v) { cfg.max_record_bytes = r.size(key, v, 1, 1ull << 30, "\"1m\""); }},
        {"minFreeBytes",
         [&](K key, V v) {
             cfg.min_free_bytes =
                 r.size(key, v, 0, units::kMaxSizeBytes, "\"16m\" (0: no reserve)");
         }},
        {"maxSnapshots",
         [&](K key, V v) {
             cfg.max_snapshots = static_cast<std::size_t>(whole(
                 r, key, v, 0, 10000, "must be a number of snapshots from 0 to 10000 (0: none)"));
         }},
        {"maxSnapshotBytes",
         [&](K key, V v) {
             cfg.max_snapshot_bytes =
                 r.size(key, v, 0, units::kMaxSizeBytes, "\"4g\" (0: no bound)");
         }},
        {"mode",
         [&](K key, V v) {
             cfg.mode = one_of(r, key, v, {"read-only", "workspace-write"},
                               "must be \"read-only\" or \"workspace-write\"");
         }},
        {"workspaceMount",
         [&](K key, V v) {
             cfg.workspace_mount =
                 one_of(r, key, v, {"/work", "same-path"}, "must be \"/work\" or \"same-path\"");
         }},
        {"homeSize",
         [&](K key, V v) {
             cfg.home_size_bytes =
                 r.size(key, v, 1ull << 20, units::kMaxSizeBytes, "\"256m\"", false);
         }},
        {"memory", [&](K key, V v) { read_memory(r, key, v, cfg); }},
        {"cpus", [&](K key, V v) { read_cpus(r, key, v, cfg); }},
        {"pidsLimit",
         [&](K key, V v) {
             cfg.pids_limit =
                 whole(r, key, v, 0, std::numeric_limits<std::int64_t>::max(),
                       "must be a whole number of processes, such as 256 (0: the runtime's own)");
         }},
        {"maxConcurrentTurns",
         [&](K key, V v) {
             cfg.max_concurrent_turns = static_cast<std::size_t>(whole(
                 r, key, v, 1, kMaxConcurrentTurns,
                 fmt::format("must be a whole number of turns from 1 to {}", kMaxConcurrentTurns)));
         }},
        {"logLevel",
         [&](K key, V v) {
             cfg.log_level = r.string(key, v);
             if (!log::parse_level(cfg.log_level))
                 r.fail(key, fmt::format(
                                 "must be \"debug\", \"info\", \"warn\" or \"error\"{}",
                                 cfg.log_level == "warning" ? " (\"warn\", not \"warning\")" : ""));
         }},
        // An hour: a cleanup that needs longer is work of its own, not a stop.
        {"stopGrace",
         [&](K key, V v) {
             cfg.stop_grace_ms =
                 r.duration(key, v, 0, 3'600'000, "\"10s\" or \"0s\" (killed at once)");
         }},
        // A day is already far past any init system's stop timeout.
        {"shutdownGrace",
         [&](K key, V v) {
             cfg.shutdown_grace_ms =
                 r.duration(key, v, 0, 24ull * 3'600'000, "\"30s\", \"2m\" or \"0s\"");
         }},
        {"workspaceRoots",
         [&](K key, V v) {
             cfg.workspace_roots = r.absolute_paths(key, v);
             for (const auto& root : cfg.workspace_roots)
                 if (root == "/")
                     r.fail(key,
                            "must not contain '/': it would let a request mount any host path; "
                            "name the directories workspaces live in");
         }},
        {"protectedPaths", [&](K key, V v) { cfg.protected_paths = r.absolute_paths(key, v); }},
        {"allowedImages", [&](K key, V v) { read_allowed_images(r, key, v, cfg); }},
        {"secretNames", [&](K key, V v) { read_secret_names(r, key, v, cfg); }},
        {"metrics",
         [&](K key, V v) {
             cfg.metrics = r.string(key, v);
             std::string problem;
             if (!parse_metrics_endpoint(cfg.metrics, problem)) r.fail(key, problem);
         }},
        {"egress",
         [&](K key, V v) {
             r.remember(key, v);
             if (v.as_table() == nullptr) r.fail(key, "must be a table ([run.egress])");
             read_keys_of(r, *v.as_table(), key, egress_readers(r, cfg.egress), kEgressKeys);
         }},
        {"workspaces",
         [&](K key, V v) {
             r.remember(key, v);
             if (v.as_table() == nullptr) r.fail(key, "must be a table ([run.workspaces.NAME])");
             read_workspaces(r, key, *v.as_table(), cfg.workspaces);
         }},
        {"pool",
         [&](K key, V v) {
             r.remember(key, v);
             if (v.as_table() == nullptr) r.fail(key, "must be a table ([run.pool])");
             read_keys_of(r, *v.as_table(), key, pool_readers(r, cfg.pool), kPoolKeys);
         }},
    };
    add_turn_bound_readers(readers, cfg,
                           [&](K key, const std::string& problem) { r.fail(key, problem); });
    return readers;
}

} // namespace

void read_redact_table(Reader& r, const toml::table& redact, HostConfig& cfg) {
    read_keys_of(r, redact, "redact", redact_readers(r, cfg), kRedactKeys);
}

void read_run_table(Reader& r, const toml::table& run, HostConfig& cfg, RunTable& out) {
    using V = const toml::node&;
    // Any other table is a runtime's settings ([run.docker]): which runtime's is settled once the
    // whole file is read (a table for another runtime is refused then).
    read_keys_of(r, run, "run", run_readers(r, cfg, out), kRunKeys,
                 [&](const std::string& name, V v) {
                     if (v.as_table() == nullptr) return false;
                     r.remember("run." + name, v);
                     out.runtime[name] = v.as_table();
                     return true;
                 });
}

std::vector<std::string> table_keys(std::string_view table) {
    HostConfig cfg;
    Reader r(cfg);
    RunTable out;
    std::vector<KeyReader> readers;
    if (table == "run") readers = run_readers(r, cfg, out);
    if (table == "run.egress") readers = egress_readers(r, cfg.egress);
    if (table == "run.pool") readers = pool_readers(r, cfg.pool);
    if (table == "redact") readers = redact_readers(r, cfg);
    std::vector<std::string> names;
    for (const auto& k : readers) names.emplace_back(k.name);
    return names;
}

} // namespace radial::config
