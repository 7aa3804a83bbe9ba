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
#include "config/config_reader.h"
#include "config/config_text.h"
#include "config/pool_keys.h"
#include "config/run_keys.h"
#include "log/logger.h"
#include "text/nearest_word.h"

namespace radial::config {
namespace fs = std::filesystem;

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

namespace {

HostConfig load_parsed(const std::optional<std::string>& file, std::string text,
                       const std::optional<std::string>& runtime_override,
                       const std::string& exe_dir, const KnownRuntimes& known_runtimes);

} // namespace

HostConfig load(const std::optional<std::string>& file,
                const std::optional<std::string>& runtime_override, const std::string& exe_dir,
                const KnownRuntimes& known_runtimes) {
    // Read here, not by toml::parse_file: a file that cannot be opened is then said with its
    // errno, not as a parse error at 0:0, and a fifo is refused, not waited on (docs/design.md
    // §7.7).
    if (!file) return load_parsed(std::nullopt, {}, runtime_override, exe_dir, known_runtimes);
    return load_text(*file, read_config_text(*file), runtime_override, exe_dir, known_runtimes);
}

HostConfig load_text(const std::string& file, std::string text,
                     const std::optional<std::string>& runtime_override, const std::string& exe_dir,
                     const KnownRuntimes& known_runtimes) {
    return load_parsed(file, std::move(text), runtime_override, exe_dir, known_runtimes);
}

namespace {

HostConfig load_parsed(const std::optional<std::string>& file, std::string text,
                       const std::optional<std::string>& runtime_override,
                       const std::string& exe_dir, const KnownRuntimes& known_runtimes) {
    HostConfig cfg;
    toml::table root;
    if (file) {
        cfg.file = *file;
        try {
            root = toml::parse(text, *file);
        } catch (const toml::parse_error& e) {
            throw ConfigError(
                fmt::format("{}: {}", position(*file, e.source()), toml_problem(e.description())));
        }
        cfg.file_text = std::move(text);
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
    if (const auto* redact = root["redact"].as_table()) read_redact_table(r, *redact, cfg);
    RunTable read;
    if (run != nullptr) read_run_table(r, *run, cfg, read);
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
    if (read.plugin_dirs.empty()) {
        cfg.plugin_dirs.push_back(
            (fs::path(exe_dir) / ".." / "lib" / "radial" / "runtimes").lexically_normal().string());
    } else {
        for (const auto& d : read.plugin_dirs) {
            if (d.empty())
                r.fail("run.pluginDir",
                       "must not be empty (it would name the config file's own directory); "
                       "name the directory of the runtime plugins, or remove the key for the "
                       "default, <radiald's directory>/../lib/radial/runtimes");
            cfg.plugin_dirs.push_back((base / d).lexically_normal().string());
        }
    }
    for (const auto& [name, table] : read.runtime) {
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
    check_pool(r, cfg);

    cfg.state_dir = read.state_dir.empty() ? default_state_dir()
                                           : (base / read.state_dir).lexically_normal().string();
    return cfg;
}

} // namespace

} // namespace radial::config
