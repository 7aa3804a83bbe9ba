#include "docker_argv.h"

#include <nlohmann/json.hpp>
#include <set>

#include "box_user.h"

namespace radial::docker {

namespace {

using radial::plugin::Error;

// Builds "preparing box 'L': <field> <cause>; <fix>" errors keyed by the field.
class SpecCheck {
public:
    explicit SpecCheck(const ContainerSpec& spec) : label_(spec.label) {}

    [[noreturn]] void fail(const std::string& field, const std::string& cause,
                           const std::string& fix) const {
        throw Error(RADIAL_E_INVALID, field,
                    "preparing box '" + label_ + "': " + field + " " + cause + "; " + fix);
    }
    void no_nul(const std::string& field, std::string_view value) const {
        if (value.find('\0') != std::string_view::npos)
            fail(field, "contains a NUL byte, which no command line can carry", "remove it");
    }
    void absolute_path(const std::string& field, std::string_view what, std::string_view path,
                       bool colon_forbidden) const {
        no_nul(field, path);
        if (path.empty() || path.front() != '/')
            fail(field, std::string(what) + " '" + std::string(path) + "' is not an absolute path",
                 "give an absolute path");
        if (colon_forbidden && path.find(':') != std::string_view::npos)
            fail(field,
                 std::string(what) + " '" + std::string(path) +
                     "' contains ':', which docker's -v and --tmpfs syntax cannot express",
                 "use a path without ':'");
    }
    // A value passed as an option's argument or as the image: no leading '-', no whitespace.
    void plain_word(const std::string& field, std::string_view value, std::string_view fix) const {
        no_nul(field, value);
        if (value.empty()) fail(field, "is empty", std::string(fix));
        if (value.front() == '-')
            fail(field,
                 "'" + std::string(value) + "' starts with '-', which docker reads as an option",
                 std::string(fix));
        for (unsigned char c : value)
            if (c <= ' ' || c == 0x7f)
                fail(field,
                     "'" + std::string(value) + "' contains whitespace or a control character",
                     std::string(fix));
    }

private:
    std::string label_;
};

std::string indexed(const char* field, std::size_t i) {
    return std::string(field) + "[" + std::to_string(i) + "]";
}

bool valid_env_name(std::string_view name) {
    if (name.empty()) return false;
    for (std::size_t i = 0; i < name.size(); ++i) {
        char c = name[i];
        bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        if (!alpha && (i == 0 || c < '0' || c > '9')) return false;
    }
    return true;
}

// `exec` said explicitly: docker's --tmpfs default is noexec, which breaks every tool that builds
// and runs a binary under TMPDIR (test binaries, native modules). nosuid and nodev stay: a binary
// written there gains no privilege, and no_new_privileges holds anyway.
std::string tmpfs_option(std::string_view target, std::uint64_t size_bytes) {
    return std::string(target) + ":rw,exec,nosuid,nodev,size=" + std::to_string(size_bytes);
}

bool is_hex(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

void append(std::vector<std::string>& argv, std::initializer_list<std::string> items) {
    argv.insert(argv.end(), items.begin(), items.end());
}

} // namespace

std::string format_cpus(std::uint64_t cpus_milli) {
    std::string out = std::to_string(cpus_milli / 1000);
    if (std::uint64_t frac = cpus_milli % 1000; frac != 0) {
        std::string digits = std::to_string(frac);
        digits.insert(0, 3 - digits.size(), '0');
        while (digits.back() == '0') digits.pop_back();
        out += "." + digits;
    }
    return out;
}

std::vector<std::string> docker_client_argv(const DockerSettings& settings) {
    std::vector<std::string> argv{settings.binary};
    if (!settings.host.empty()) append(argv, {"--host", settings.host});
    return argv;
}

std::vector<std::string> docker_run_argv(const ContainerSpec& spec, const DockerSettings& settings,
                                         std::string_view cidfile,
                                         const std::vector<std::string>& image_entrypoint) {
    SpecCheck check(spec);
    if (!radial::plugin::valid_label(spec.label))
        check.fail("label", "'" + spec.label + "' does not match [A-Za-z0-9][A-Za-z0-9_.-]{0,127}",
                   "give a valid box label");
    check.plain_word("image", spec.image, "give an image reference such as radial/busybox:latest");
    if (spec.argv.empty()) check.fail("argv", "is empty", "give the command to run");
    for (std::size_t i = 0; i < spec.argv.size(); ++i)
        check.no_nul(indexed("argv", i), spec.argv[i]);

    const std::string& user = spec.user.empty() ? settings.user : spec.user;
    if (auto problem = user_problem(user))
        throw Error(RADIAL_E_INVALID, "user",
                    "preparing box '" + spec.label + "': user " + *problem);
    const std::uint64_t cpus = spec.cpus_milli != 0 ? spec.cpus_milli : settings.cpus_milli;
    if (settings.host_cpus_milli != 0 && cpus > settings.host_cpus_milli)
        check.fail("cpus",
                   format_cpus(cpus) + " CPUs is more than this host's " +
                       format_cpus(settings.host_cpus_milli) +
                       " online CPUs, and docker refuses --cpus above that",
                   "give at most " + format_cpus(settings.host_cpus_milli));
    if (spec.pids_limit < 0)
        check.fail("pidsLimit", std::to_string(spec.pids_limit) + " is negative",
                   "give a positive cap, or 0 for the runtime's default");

    std::vector<std::string> argv = docker_client_argv(settings);
    append(argv,
           {"run", "--name", spec.label, "--label", std::string(kLabelKey) + "=" + spec.label});
    if (!settings.oci_runtime.empty()) append(argv, {"--runtime", settings.oci_runtime});
    if (settings.init_path.empty())
        argv.emplace_back("--init");
    else
        append(argv, {"-v", settings.init_path + ":" + std::string(kBoxInitPath) + ":ro",
                      "--entrypoint", std::string(kBoxInitPath)});
    append(argv, {"--log-driver", "none", "--pull", settings.pull, "--cap-drop=ALL",
                  "--security-opt", "no-new-privileges"});
    std::uint64_t memory = spec.memory_bytes != 0 ? spec.memory_bytes : settings.memory_bytes;
    append(argv, {"--pids-limit",
                  std::to_string(spec.pids_limit != 0 ? spec.pids_limit : settings.pids_limit),
                  "--memory", std::to_string(memory), "--memory-swap", std::to_string(memory),
                  "--cpus", format_cpus(cpus), "--user", user});
    if (spec.read_only_rootfs != Tristate::no) argv.emplace_back("--read-only");

    bool spec_has_tmp = false;
    for (std::size_t i = 0; i < spec.tmpfs.size(); ++i) {
        const auto& t = spec.tmpfs[i];
        check.absolute_path(indexed("tmpfs", i), "target", t.target, true);
        if (t.target.find(',') != std::string::npos)
            check.fail(indexed("tmpfs", i), "target '" + t.target + "' contains ','",
                       "use a path without ','");
        spec_has_tmp = spec_has_tmp || t.target == "/tmp";
    }
    if (!spec_has_tmp) append(argv, {"--tmpfs", tmpfs_option("/tmp", settings.tmpfs_size_bytes)});
    for (const auto& t : spec.tmpfs)
        append(argv,
               {"--tmpfs", tmpfs_option(t.target, t.size_bytes != 0 ? t.size_bytes
                                                                    : settings.tmpfs_size_bytes)});

    if (!spec.network.empty())
        check.plain_word("network", spec.network, "give a docker network name");
    append(argv, {"--network", spec.network.empty() ? std::string("none") : spec.network});

    for (std::size_t i = 0; i < spec.extra_hosts.size(); ++i) {
        const auto& h = spec.extra_hosts[i];
        check.plain_word(indexed("extraHosts", i), h, "give name:address");
        if (h.find(':') == std::string::npos || h.front() == ':')
            check.fail(indexed("extraHosts", i), "'" + h + "' is not name:address",
                       "give name:address such as db:127.0.0.1");
        append(argv, {"--add-host", h});
    }

    for (std::size_t i = 0; i < spec.mounts.size(); ++i) {
        const auto& m = spec.mounts[i];
        check.absolute_path(indexed("mounts", i), "source", m.source, true);
        check.absolute_path(indexed("mounts", i), "target", m.target, true);
        append(argv, {"-v", m.source + ":" + m.target + (m.read_only ? ":ro" : "")});
    }

    if (!spec.workdir.empty()) {
        check.absolute_path("workdir", "directory", spec.workdir, false);
        append(argv, {"-w", spec.workdir});
    }

    std::set<std::string_view> seen;
    std::vector<std::string> env_args;
    bool env_file = false;
    for (std::size_t i = 0; i < spec.env.size(); ++i) {
        const auto& e = spec.env[i];
        std::string field = indexed("env", i);
        check.no_nul(field, e.name);
        if (!valid_env_name(e.name))
            check.fail(field, "name '" + e.name + "' does not match [A-Za-z_][A-Za-z0-9_]*",
                       "rename the variable");
        if (e.value.find('\0') != std::string::npos)
            check.fail(field,
                       "value of '" + e.name +
                           "' contains a NUL byte, which no environment "
                           "can carry",
                       "remove it");
        if (!seen.insert(e.name).second)
            check.fail(field, "repeats the name '" + e.name + "'", "give each variable once");
        if (client_sensitive_env(e.name)) {
            // The client would act on this name itself, so its value may only travel in the
            // env-file; the message names the variable, never the value (it may be a secret).
            if (auto problem = env_file_problem(e.name, e.value))
                check.fail(field,
                           "value of '" + e.name + "' " + *problem +
                               ", which docker's --env-file cannot carry, and '" + e.name +
                               "' is a name the docker client itself would act on, so the value "
                               "cannot travel through the client's environment either",
                           "change the value or pass it under another name");
            env_file = true;
        } else {
            append(env_args, {"-e", e.name});
        }
    }
    if (env_file) append(argv, {"--env-file", std::string(kEnvFilePath)});
    argv.insert(argv.end(), env_args.begin(), env_args.end());

    if (!cidfile.empty()) append(argv, {"--cidfile", std::string(cidfile)});
    argv.push_back(spec.image);
    if (!settings.init_path.empty()) {
        // radial-init TIMEOUT_MS GRACE_MS -- <the image's entrypoint> ARGV: what docker would have
        // run, under an init that ends the box at the deadline by itself.
        append(argv,
               {std::to_string(spec.timeout_ms), std::to_string(settings.kill_grace_ms), "--"});
        argv.insert(argv.end(), image_entrypoint.begin(), image_entrypoint.end());
    }
    argv.insert(argv.end(), spec.argv.begin(), spec.argv.end());
    return argv;
}

std::vector<std::string> docker_rm_argv(const DockerSettings& settings,
                                        const std::vector<std::string>& ids) {
    std::vector<std::string> argv = docker_client_argv(settings);
    append(argv, {"rm", "--force", "--volumes"});
    argv.insert(argv.end(), ids.begin(), ids.end());
    return argv;
}

std::vector<std::string> docker_list_argv(const DockerSettings& settings) {
    std::vector<std::string> argv = docker_client_argv(settings);
    append(argv, {"ps", "--all", "--no-trunc", "--filter", "label=" + std::string(kLabelKey),
                  "--format", "{{.ID}}\t{{json (.Label \"" + std::string(kLabelKey) + "\")}}"});
    return argv;
}

std::vector<std::string> docker_info_argv(const DockerSettings& settings) {
    std::vector<std::string> argv = docker_client_argv(settings);
    append(argv, {"info", "--format", "{{json .ServerVersion}}"});
    return argv;
}

std::vector<std::string> docker_runtimes_argv(const DockerSettings& settings) {
    std::vector<std::string> argv = docker_client_argv(settings);
    append(argv, {"info", "--format", "{{json .Runtimes}}"});
    return argv;
}

std::optional<std::vector<std::string>> parse_runtime_names(std::string_view output) {
    auto value = nlohmann::json::parse(output, nullptr, false);
    if (!value.is_object()) return std::nullopt;
    std::vector<std::string> names;
    for (const auto& item : value.items()) names.push_back(item.key());
    return names; // nlohmann::json keeps object keys sorted
}

std::vector<std::string> docker_image_entrypoint_argv(const DockerSettings& settings,
                                                      std::string_view image) {
    std::vector<std::string> argv = docker_client_argv(settings);
    append(argv,
           {"image", "inspect", "--format", "{{json .Config.Entrypoint}}", std::string(image)});
    return argv;
}

std::optional<std::vector<std::string>> parse_entrypoint(std::string_view output) {
    auto value = nlohmann::json::parse(output, nullptr, false);
    if (value.is_null()) return std::vector<std::string>{};
    if (!value.is_array()) return std::nullopt;
    std::vector<std::string> out;
    for (const auto& item : value) {
        if (!item.is_string()) return std::nullopt;
        out.push_back(item.get<std::string>());
    }
    return out;
}

std::vector<std::string> docker_inspect_argv(const DockerSettings& settings, std::string_view id) {
    std::vector<std::string> argv = docker_client_argv(settings);
    append(argv,
           {"inspect", "--type", "container", "--format", "{{json .State}}", std::string(id)});
    return argv;
}

std::optional<ContainerState> parse_container_state(std::string_view output) {
    auto state = nlohmann::json::parse(output, nullptr, false);
    if (!state.is_object()) return std::nullopt;
    auto started_at = state.find("StartedAt");
    if (started_at == state.end() || !started_at->is_string()) return std::nullopt;
    ContainerState s;
    // Go's zero time.Time, which the engine keeps until the container's process has started.
    s.started = !started_at->get<std::string>().starts_with("0001-01-01");
    if (auto v = state.find("OOMKilled"); v != state.end() && v->is_boolean())
        s.oom_killed = v->get<bool>();
    if (auto v = state.find("ExitCode"); v != state.end() && v->is_number_integer())
        s.exit_code = v->get<int>();
    if (auto v = state.find("Error"); v != state.end() && v->is_string())
        s.error = v->get<std::string>();
    if (auto v = state.find("Status"); v != state.end() && v->is_string())
        s.being_removed = v->get<std::string>() == "removing";
    if (auto v = state.find("Dead"); v != state.end() && v->is_boolean() && v->get<bool>())
        s.being_removed = true;
    return s;
}

std::vector<ListedBox> parse_docker_list(std::string_view output) {
    std::vector<ListedBox> boxes;
    while (!output.empty()) {
        std::size_t end = output.find('\n');
        std::string_view line = output.substr(0, end);
        output.remove_prefix(end == std::string_view::npos ? output.size() : end + 1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        std::size_t tab = line.find('\t');
        if (tab == std::string_view::npos || !is_hex(line.substr(0, tab))) continue;
        auto value = nlohmann::json::parse(line.substr(tab + 1), nullptr, false);
        if (!value.is_string()) continue;
        boxes.push_back({std::string(line.substr(0, tab)), value.get<std::string>()});
    }
    return boxes;
}

std::optional<std::string> parse_server_version(std::string_view output) {
    while (!output.empty() &&
           (output.back() == '\n' || output.back() == '\r' || output.back() == ' '))
        output.remove_suffix(1);
    auto value = nlohmann::json::parse(output, nullptr, false);
    if (!value.is_string() || value.get<std::string>().empty()) return std::nullopt;
    return value.get<std::string>();
}

} // namespace radial::docker
