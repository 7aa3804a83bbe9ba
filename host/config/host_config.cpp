#include "config/host_config.h"

#include <fmt/format.h>
#include <radial/internal/config_section_toml.h>
#include <radial/internal/names.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <radial/names.hpp>
#include <radial/units.hpp>
#include <set>

#include "config/bounded_units.h"
#include "config/metrics_endpoint.h"
#include "config/turn_bounds.h"
#include "log/logger.h"
#include "text/nearest_word.h"

namespace radial::config {
namespace fs = std::filesystem;

namespace {

// More parallel turns than this is a typo, not a plan: each one holds a box, a socket and a thread.
constexpr std::int64_t kMaxConcurrentTurns = 256;

std::string position(const std::string& file, const toml::source_region& r) {
    return fmt::format("{}:{}:{}", file, r.begin.line, r.begin.column);
}

class Reader {
public:
    Reader(HostConfig& cfg) : cfg_(cfg) {}

    [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
        throw ConfigError(fmt::format("{}{}: {}", cfg_.where(key), key, problem));
    }

    void remember(const std::string& key, const toml::node& n) {
        cfg_.positions[key] = position(cfg_.file, n.source());
    }

    std::string string(const std::string& key, const toml::node& n) {
        remember(key, n);
        if (!n.is_string()) fail(key, "must be a string");
        return std::string(*n.as_string());
    }

    std::vector<std::string> strings(const std::string& key, const toml::node& n) {
        remember(key, n);
        const auto* a = n.as_array();
        if (a == nullptr) fail(key, "must be an array of strings");
        std::vector<std::string> out;
        for (const auto& item : *a) {
            if (!item.is_string()) fail(key, "must be an array of strings");
            out.emplace_back(*item.as_string());
        }
        return out;
    }

    // A duration string from `min` to `max` ms (docs/design.md §7.3).
    std::uint64_t duration(const std::string& key, const toml::node& n, std::uint64_t min,
                           std::uint64_t max, std::string_view example) {
        remember(key, n);
        std::uint64_t ms = 0;
        const auto* str = n.as_string();
        std::string problem = duration_problem(
            str != nullptr ? std::string_view(str->get()) : std::string_view("(not a string)"), ms,
            min, max, example);
        if (!problem.empty()) fail(key, problem);
        return ms;
    }

    // A size from `min` to `max` bytes: a string such as "256m", or with `integers` a number of
    // bytes (docs/design.md §7.3).
    std::uint64_t size(const std::string& key, const toml::node& n, std::uint64_t min,
                       std::uint64_t max, std::string_view example, bool integers = true) {
        remember(key, n);
        std::uint64_t bytes = 0;
        std::string text = "(not a string)";
        if (const auto* str = n.as_string())
            text = str->get();
        else if (const auto* i = n.as_integer(); i != nullptr && integers)
            text = fmt::format("{}", i->get());
        std::string problem = size_problem(text, bytes, min, max, example);
        if (!problem.empty()) fail(key, problem);
        return bytes;
    }

    // An array of absolute paths, each normalised without a trailing '/'.
    std::vector<std::string> absolute_paths(const std::string& key, const toml::node& n) {
        std::vector<std::string> out = strings(key, n);
        for (auto& p : out) {
            if (p.empty() || p.front() != '/')
                fail(key, fmt::format("'{}' is not an absolute path", p));
            p = fs::path(p).lexically_normal().string();
            if (p.size() > 1 && p.back() == '/') p.pop_back();
        }
        return out;
    }

    // Flattens a runtime's table into entries with keys relative to `prefix` ("run.docker").
    void flatten(const std::string& prefix, const toml::table& t, host::ConfigSection& out) {
        internal::flatten_config_section(
            t, "", out,
            [&](const std::string& key, const toml::node& n) { remember(prefix + "." + key, n); },
            [&](const std::string& key, const toml::node&, const char* problem) {
                fail(prefix + "." + key, problem);
            });
    }

private:
    HostConfig& cfg_;
};

} // namespace

std::string default_state_dir() {
    if (::geteuid() == 0) return "/var/lib/radial";
    if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg != nullptr && xdg[0] == '/')
        return std::string(xdg) + "/radial";
    if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/')
        return std::string(home) + "/.local/state/radial";
    return "/tmp/radial-state-" + std::to_string(::geteuid());
}

std::string HostConfig::where(const std::string& key) const {
    auto it = positions.find(key);
    if (it != positions.end()) return it->second + ": ";
    return file.empty() ? std::string() : file + ": ";
}

// The same rule as turn::is_image_digest; the config reader does not depend on turn/.
static bool is_pinned_digest(const std::string& d) {
    return d.size() == 71 && d.compare(0, 7, "sha256:") == 0 &&
           d.find_first_not_of("0123456789abcdef", 7) == std::string::npos;
}

std::uint64_t online_cpus_milli() noexcept {
    const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? static_cast<std::uint64_t>(n) * 1000 : 0;
}

// The host's bounds against the runtime's own section (docs/design.md §6.4): a default cpus
// above this host's CPUs is lowered (an engine refuses more than it has); a runtime key of the
// same name is the operator's for that runtime, so the host's default gives way to it, and the
// two set at once is one too many.
static void settle_limits(Reader& r, HostConfig& cfg) {
    if (!cfg.positions.count("run.cpus")) {
        const std::uint64_t host = online_cpus_milli();
        if (host != 0) cfg.cpus_milli = std::min(cfg.cpus_milli, host);
    }
    for (const char* name : {"memory", "cpus", "pidsLimit"}) {
        bool in_runtime = false;
        for (const auto& e : cfg.runtime_section.entries) in_runtime |= e.key == name;
        if (!in_runtime) continue;
        const std::string key = fmt::format("run.{}", name);
        if (cfg.positions.count(key))
            r.fail(key, fmt::format("is set, and so is {}.{}; set the bound once (run.{} for "
                                    "every runtime)",
                                    cfg.runtime_section.section, name, name));
        if (key == "run.memory") cfg.memory_bytes = 0;
        if (key == "run.cpus") cfg.cpus_milli = 0;
        if (key == "run.pidsLimit") cfg.pids_limit = 0;
    }
}

// [run.egress] (docs/design.md §9.7).
static void read_egress(Reader& r, const toml::table& table, egress::EgressCeiling& out) {
    for (const auto& [k, v] : table) {
        const std::string name(k.str());
        const std::string key = "run.egress." + name;
        r.remember(key, v);
        try {
            if (name == "allow") {
                for (const auto& text : r.strings(key, v))
                    out.allow.push_back(egress::parse_allow_rule(text));
            } else if (name == "allowRanges" || name == "denyRanges") {
                auto& ranges = name == "allowRanges" ? out.allow_ranges : out.deny_ranges;
                for (const auto& text : r.strings(key, v))
                    ranges.push_back(egress::parse_range(text));
            } else if (name == "hosts") {
                const auto* t = v.as_table();
                if (t == nullptr) r.fail(key, "must be a table of name = \"address\"");
                for (const auto& [hk, hv] : *t) {
                    const auto* addr = hv.as_string();
                    boost::system::error_code ec;
                    if (addr != nullptr) boost::asio::ip::make_address(addr->get(), ec);
                    if (addr == nullptr || ec)
                        r.fail(key, fmt::format("'{}' must map to an IP address", hk.str()));
                    out.hosts[egress::parse_allow_rule(std::string(hk.str()) + ":1").host] =
                        addr->get();
                }
            } else if (name == "maxConnections") {
                const auto* i = v.as_integer();
                if (i == nullptr || i->get() < 1 || i->get() > 1024)
                    r.fail(key, "must be a number of connections from 1 to 1024");
                out.max_connections = static_cast<std::size_t>(i->get());
            } else if (name == "maxBytesIn" || name == "maxBytesOut") {
                (name == "maxBytesIn" ? out.max_bytes_in : out.max_bytes_out) =
                    r.size(key, v, 1, units::kMaxSizeBytes, "\"1g\" or \"256m\"", false);
            } else if (name == "runtimePolicy") {
                const auto* b = v.as_boolean();
                if (b == nullptr) r.fail(key, "must be true or false");
                out.runtime_policy = b->get();
            } else {
                r.fail(key,
                       "unknown key; [run.egress] takes allow, allowRanges, denyRanges, "
                       "hosts, maxConnections, maxBytesIn, maxBytesOut and runtimePolicy");
            }
        } catch (const egress::PolicyError& e) {
            r.fail(key, e.what());
        }
    }
}

std::string unknown_runtime_message(const HostConfig& cfg, const std::vector<std::string>& known) {
    std::vector<std::string> ids, dirs;
    for (const auto& k : known) ids.push_back("'" + k + "'");
    for (const auto& d : cfg.plugin_dirs) dirs.push_back("'" + d + "'");
    std::string hint;
    if (auto near = text::nearest_word(cfg.container_runtime, known))
        hint = fmt::format("; did you mean '{}'?", *near);
    const bool by_flag = cfg.runtime_selected_by == "--runtime";
    return fmt::format(
        "{}{} '{}' names no installed runtime{} known runtimes are {} (plugins in {}); {} one "
        "of those, or install the plugin (run.pluginDir names where to look)",
        by_flag ? std::string() : cfg.where("run.containerRuntime"), cfg.runtime_selected_by,
        cfg.container_runtime, hint.empty() ? std::string("; the") : hint + " The",
        ids.empty() ? std::string("none") : fmt::to_string(fmt::join(ids, ", ")),
        fmt::join(dirs, ", "), by_flag ? "pass" : "set it to");
}

// run.memory, run.cpus, run.pidsLimit (docs/design.md §6.4); 0 leaves the bound to the runtime.
static void read_limit(Reader& r, const std::string& key, const toml::node& v, HostConfig& cfg) {
    if (key == "run.memory") {
        const std::uint64_t bytes =
            r.size(key, v, 0, units::kMaxSizeBytes, "\"2g\" (0: the runtime's own)");
        // No engine starts a box in less (docker's minimum is 6 MiB).
        if (bytes != 0 && bytes < (6ull << 20))
            r.fail(key, "must be a size of at least \"6m\", such as \"2g\" (0: the runtime's own)");
        cfg.memory_bytes = bytes;
    } else if (key == "run.cpus") {
        std::optional<std::uint64_t> milli;
        if (const auto* i = v.as_integer(); i != nullptr && i->get() >= 0 && i->get() <= 1'000'000)
            milli = static_cast<std::uint64_t>(i->get()) * 1000;
        else if (const auto* f = v.as_floating_point();
                 f != nullptr && f->get() > 0 && f->get() <= 1e6)
            milli = static_cast<std::uint64_t>(f->get() * 1000.0 + 0.5);
        else if (const auto* str = v.as_string())
            milli = units::parse_cpus_milli(str->get());
        if (!milli || (*milli != 0 && *milli < 10))
            r.fail(key,
                   "must be a CPU count of at least 0.01, such as 2 or 0.5 (0: the runtime's own)");
        const std::uint64_t host = online_cpus_milli();
        if (host != 0 && *milli > host)
            r.fail(key,
                   fmt::format("{} CPUs is more than this host's {} online CPUs; give at most {}",
                               static_cast<double>(*milli) / 1000, host / 1000, host / 1000));
        cfg.cpus_milli = *milli;
    } else {
        const auto* i = v.as_integer();
        if (i == nullptr || i->get() < 0)
            r.fail(key, "must be a whole number of processes, such as 256 (0: the runtime's own)");
        cfg.pids_limit = i->get();
    }
}

HostConfig load(const std::optional<std::string>& file,
                const std::optional<std::string>& runtime_override, const std::string& exe_dir,
                const KnownRuntimes& known_runtimes) {
    HostConfig cfg;
    toml::table root;
    if (file) {
        cfg.file = *file;
        std::error_code ec;
        if (!fs::is_regular_file(*file, ec))
            throw ConfigError(
                fmt::format("reading config '{}': no such file; pass an existing "
                            "file with --config",
                            *file));
        try {
            root = toml::parse_file(*file);
        } catch (const toml::parse_error& e) {
            throw ConfigError(fmt::format("{}: {}", position(*file, e.source()), e.description()));
        }
    }
    Reader r(cfg);

    const toml::table* run = nullptr;
    for (const auto& [k, v] : root) {
        std::string key(k.str());
        r.remember(key, v);
        if (key != "run" && key != "redact")
            r.fail(key, "unknown table or key; radiald reads only [run] and [redact]");
        if (v.as_table() == nullptr) r.fail(key, "must be a table");
        if (key == "run") run = v.as_table();
    }
    if (const auto* redact = root["redact"].as_table()) {
        for (const auto& [k, v] : *redact) {
            std::string name(k.str());
            std::string key = "redact." + name;
            r.remember(key, v);
            auto strings = [&] {
                std::vector<std::string> out;
                const auto* a = v.as_array();
                if (a == nullptr) r.fail(key, "must be an array of strings");
                for (const auto& item : *a) {
                    if (!item.is_string()) r.fail(key, "must be an array of strings");
                    out.emplace_back(*item.as_string());
                }
                return out;
            };
            if (name == "envNames") {
                cfg.redact.env_names = strings();
            } else if (name == "values") {
                cfg.redact.values = strings();
            } else if (name == "minLength") {
                const auto* i = v.as_integer();
                if (i == nullptr || i->get() < 1) r.fail(key, "must be a positive number of bytes");
                cfg.redact.min_length = static_cast<std::size_t>(i->get());
            } else {
                r.fail(key, "unknown key; [redact] takes envNames, values and minLength");
            }
        }
    }

    std::vector<std::string> dirs;
    std::string state_dir;
    std::map<std::string, const toml::table*> sections;
    if (run != nullptr) {
        for (const auto& [k, v] : *run) {
            std::string name(k.str());
            std::string key = "run." + name;
            r.remember(key, v);
            if (name == "containerRuntime") {
                cfg.container_runtime = r.string(key, v);
            } else if (name == "pluginDir") {
                if (const auto* a = v.as_array()) {
                    if (a->empty()) r.fail(key, "must name at least one directory");
                    for (const auto& item : *a) {
                        if (!item.is_string())
                            r.fail(key, "must be a string or an array of strings");
                        dirs.emplace_back(*item.as_string());
                    }
                } else {
                    dirs.push_back(r.string(key, v));
                }
            } else if (name == "instanceId") {
                cfg.instance_id = r.string(key, v);
                // No '-' (radial/internal/names.h says why).
                if (!internal::is_instance_id(cfg.instance_id))
                    r.fail(
                        key,
                        "must match [a-z0-9]{1,32} (no '-'): it becomes part of every box label");
            } else if (name == "sharedWorkspaces") {
                r.remember(key, v);
                if (!v.is_boolean()) r.fail(key, "must be true or false");
                cfg.shared_workspaces = v.as_boolean()->get();
            } else if (name == "codexAuth") {
                r.remember(key, v);
                if (!v.is_boolean()) r.fail(key, "must be true or false");
                cfg.codex_auth = v.as_boolean()->get();
            } else if (name == "codexAuthFile") {
                cfg.codex_auth_file = r.string(key, v);
                if (cfg.codex_auth_file.empty() || cfg.codex_auth_file.front() != '/')
                    r.fail(key, "must be an absolute path, such as \"/root/.codex/auth.json\"");
            } else if (name == "network") {
                cfg.network = r.string(key, v);
            } else if (name == "user") {
                cfg.user = r.string(key, v);
            } else if (name == "boxIdRange") {
                // "FIRST-LAST", decimal. Not above 2^31-1: some tools take ids as signed.
                const std::string text = r.string(key, v);
                const auto dash = text.find('-');
                auto number = [](const std::string& s) -> std::optional<std::uint64_t> {
                    if (!internal::is_decimal(s, 10)) return std::nullopt;
                    return std::stoull(s);
                };
                auto first =
                    dash == std::string::npos ? std::nullopt : number(text.substr(0, dash));
                auto last =
                    dash == std::string::npos ? std::nullopt : number(text.substr(dash + 1));
                if (!first || !last || *first == 0 || *first > *last || *last > 2147483647)
                    r.fail(key,
                           "must be \"FIRST-LAST\", decimal ids with 0 < FIRST <= LAST <= "
                           "2147483647, e.g. \"2000000000-2000065535\"");
                cfg.box_id_first = static_cast<std::uint32_t>(*first);
                cfg.box_id_last = static_cast<std::uint32_t>(*last);
            } else if (name == "turnTransport") {
                cfg.turn_transport = r.string(key, v);
                if (cfg.turn_transport != "auto" && cfg.turn_transport != "unix" &&
                    cfg.turn_transport != "tcp")
                    r.fail(key, "must be \"auto\", \"unix\" or \"tcp\"");
            } else if (name == "turnSocketHost") {
                cfg.turn_socket_host = r.string(key, v);
                if (cfg.turn_socket_host.empty()) r.fail(key, "must not be empty");
            } else if (name == "stateDir") {
                state_dir = r.string(key, v);
                if (state_dir.empty()) r.fail(key, "must not be empty");
            } else if (name == "maxRecordBytes") {
                // A record is read into memory whole: more than 1g is a typo.
                cfg.max_record_bytes = r.size(key, v, 1, 1ull << 30, "\"1m\"");
            } else if (name == "minFreeBytes") {
                cfg.min_free_bytes =
                    r.size(key, v, 0, units::kMaxSizeBytes, "\"16m\" (0: no reserve)");
            } else if (name == "maxSnapshots") {
                const auto* i = v.as_integer();
                if (i == nullptr || i->get() < 0 || i->get() > 10000)
                    r.fail(key, "must be a number of snapshots from 0 to 10000 (0: none)");
                cfg.max_snapshots = static_cast<std::size_t>(i->get());
            } else if (name == "mode") {
                cfg.mode = r.string(key, v);
                if (cfg.mode != "read-only" && cfg.mode != "workspace-write")
                    r.fail(key, "must be \"read-only\" or \"workspace-write\"");
            } else if (name == "workspaceMount") {
                cfg.workspace_mount = r.string(key, v);
                if (cfg.workspace_mount != "/work" && cfg.workspace_mount != "same-path")
                    r.fail(key, "must be \"/work\" or \"same-path\"");
            } else if (name == "homeSize") {
                cfg.home_size_bytes =
                    r.size(key, v, 1ull << 20, units::kMaxSizeBytes, "\"256m\"", false);
            } else if (name == "memory" || name == "cpus" || name == "pidsLimit") {
                read_limit(r, key, v, cfg);
            } else if (name == "maxConcurrentTurns") {
                const auto* i = v.as_integer();
                if (i == nullptr || i->get() < 1 || i->get() > kMaxConcurrentTurns)
                    r.fail(key, fmt::format("must be a whole number of turns from 1 to {}",
                                            kMaxConcurrentTurns));
                cfg.max_concurrent_turns = static_cast<std::size_t>(i->get());
            } else if (name == "logLevel") {
                cfg.log_level = r.string(key, v);
                if (!log::parse_level(cfg.log_level))
                    r.fail(key, "must be \"debug\", \"info\", \"warn\" or \"error\"");
            } else if (name == "stopGrace") {
                // An hour: a cleanup that needs longer is work of its own, not a stop.
                cfg.stop_grace_ms =
                    r.duration(key, v, 0, 3'600'000, "\"10s\" or \"0s\" (killed at once)");
            } else if (name == "shutdownGrace") {
                // A day is already far past any init system's stop timeout.
                cfg.shutdown_grace_ms =
                    r.duration(key, v, 0, 24ull * 3'600'000, "\"30s\", \"2m\" or \"0s\"");
            } else if (name == "workspaceRoots" || name == "protectedPaths") {
                auto& out = name == "workspaceRoots" ? cfg.workspace_roots : cfg.protected_paths;
                out = r.absolute_paths(key, v);
                if (name == "workspaceRoots")
                    for (const auto& root : out)
                        if (root == "/")
                            r.fail(key,
                                   "must not contain '/': it would let a request mount "
                                   "any host path; name the directories workspaces live in");
            } else if (name == "allowedImages") {
                cfg.allowed_images = r.strings(key, v);
                for (const auto& pattern : cfg.allowed_images) {
                    if (pattern.empty()) r.fail(key, "must not contain an empty pattern");
                    // "PATTERN@sha256:<64 hex>" pins the image (turn/image_pin.h).
                    const auto at = pattern.rfind("@sha256:");
                    if (at != std::string::npos && !is_pinned_digest(pattern.substr(at + 1)))
                        r.fail(key, fmt::format("'{}' pins no digest: give PATTERN@sha256: and "
                                                "the 64 lower-case hex digits of the image's "
                                                "content digest",
                                                pattern));
                }
            } else if (name == "metrics") {
                cfg.metrics = r.string(key, v);
                std::string problem;
                if (!parse_metrics_endpoint(cfg.metrics, problem)) r.fail(key, problem);
            } else if (name == "pluginIsolation") {
                const std::string mode = r.string(key, v);
                if (mode != "in-process" && mode != "process")
                    r.fail(key,
                           "must be \"in-process\" or \"process\" (a plugin host process "
                           "of its own, docs/configuration.md)");
                cfg.plugin_in_process = mode == "in-process";
            } else if (name == "pluginCallTimeout") {
                cfg.plugin_call_timeout_ms = r.duration(key, v, 1, 3'600'000, "\"120s\" or \"2m\"");
            } else if (read_turn_bound(name, v, cfg,
                                       [&](const std::string& problem) { r.fail(key, problem); })) {
            } else if (name == "egress" && v.as_table() != nullptr) {
                read_egress(r, *v.as_table(), cfg.egress);
            } else if (const auto* t = v.as_table()) {
                sections[name] = t;
            } else {
                r.fail(key,
                       "unknown key; see the configuration reference in docs/configuration.md");
            }
        }
    }
    if (runtime_override) cfg.container_runtime = *runtime_override;
    // What selected the runtime, for messages: a user who gave --runtime must not be told to look
    // for run.containerRuntime in a file that may not even set it (docs/design.md §7.2).
    if (runtime_override) cfg.runtime_selected_by = "--runtime";
    const std::string& selected_by = cfg.runtime_selected_by;
    if (!is_runtime_id(cfg.container_runtime)) {
        std::string problem =
            fmt::format("'{}' is not a runtime id ([a-z0-9-]{{1,32}})", cfg.container_runtime);
        // A flag has no place in the file to point at.
        if (runtime_override) throw ConfigError("--runtime: " + problem);
        r.fail("run.containerRuntime", problem);
    }

    fs::path base = file ? fs::absolute(*file).parent_path() : fs::current_path();
    if (dirs.empty()) {
        cfg.plugin_dirs.push_back(
            (fs::path(exe_dir) / ".." / "lib" / "radial" / "runtimes").lexically_normal().string());
    } else {
        for (const auto& d : dirs) {
            if (d.empty()) r.fail("run.pluginDir", "must not be empty");
            cfg.plugin_dirs.push_back((base / d).lexically_normal().string());
        }
    }
    for (const auto& [name, table] : sections) {
        std::string key = "run." + name;
        if (name != cfg.container_runtime && known_runtimes) {
            const auto known = known_runtimes(cfg.plugin_dirs);
            if (!known.empty() &&
                std::find(known.begin(), known.end(), cfg.container_runtime) == known.end())
                throw ConfigError(unknown_runtime_message(cfg, known));
        }
        if (name != cfg.container_runtime)
            r.fail(key, fmt::format("configures runtime '{}' but {} {} '{}'; remove [{}] or "
                                    "select that runtime (a settings block that does nothing is "
                                    "refused)",
                                    name, selected_by, runtime_override ? "selects" : "is",
                                    cfg.container_runtime, key));
        cfg.runtime_section.section = key;
        r.flatten(key, *table, cfg.runtime_section);
    }
    if (cfg.runtime_section.section.empty())
        cfg.runtime_section.section = "run." + cfg.container_runtime;
    settle_limits(r, cfg);

    cfg.state_dir =
        state_dir.empty() ? default_state_dir() : (base / state_dir).lexically_normal().string();
    return cfg;
}

} // namespace radial::config
