#include "docker_argv.h"

#include <radial/internal/names.h>

#include <nlohmann/json.hpp>
#include <set>

#include "box_user.h"
#include "oci_runtime_profile.h"
#include "support/spec_key.h"

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

// `exec` said explicitly: docker's --tmpfs default is noexec, which breaks every tool that builds
// and runs a binary under TMPDIR (test binaries, native modules). nosuid and nodev stay: a binary
// written there gains no privilege, and no_new_privileges holds anyway.
std::string tmpfs_options(std::uint64_t size_bytes) {
    return "rw,exec,nosuid,nodev,size=" + std::to_string(size_bytes);
}

// A tmpfs other than /tmp is the box's own scratch (its home, docs/design.md §8.7): owned by the
// box user, mode 0700. Root-owned, as docker makes it by default, it would be unwritable, since a
// box never runs as root; /tmp keeps docker's 1777.
std::string owned_tmpfs_options(std::uint64_t size_bytes, const BoxUser& owner) {
    return tmpfs_options(size_bytes) + ",uid=" + std::to_string(owner.uid) +
           ",gid=" + std::to_string(owner.gid) + ",mode=0700";
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

nlohmann::json docker_create_body(const ContainerSpec& spec, const DockerSettings& settings,
                                  const std::vector<std::string>& image_entrypoint,
                                  bool namespaced_root) {
    SpecCheck check(spec);
    if (!radial::plugin::valid_label(spec.label))
        check.fail("label", "'" + spec.label + "' does not match [A-Za-z0-9][A-Za-z0-9_.-]{0,127}",
                   "give a valid box label");
    check.plain_word("image", spec.image, "give an image reference such as radial/busybox:latest");
    if (spec.argv.empty()) check.fail("argv", "is empty", "give the command to run");
    for (std::size_t i = 0; i < spec.argv.size(); ++i)
        check.no_nul(plugin_support::spec_key("argv", i), spec.argv[i]);

    const std::string& user = spec.user.empty() ? settings.user : spec.user;
    if (auto problem = user_problem(user, namespaced_root))
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

    using json = nlohmann::json;
    json host = json::object();
    json binds = json::array();
    json body = {{"Image", spec.image},  {"Labels", {{std::string(kLabelKey), spec.label}}},
                 {"User", user},         {"AttachStdin", false},
                 {"AttachStdout", true}, {"AttachStderr", true},
                 {"OpenStdin", false},   {"Tty", false}};
    // An image's HEALTHCHECK would have the engine run its command in the box, beside the turn
    // and between a session's turns, outside radial-init (no deadline, no filter) and outside any
    // session check of what changed (docs/design.md §13.8): a box runs what its turn runs only.
    body["Healthcheck"] = {{"Test", json::array({"NONE"})}};
    // Another OCI runtime (gVisor's runsc) when the operator chose one (docs/design.md §13.9).
    if (!settings.oci_runtime.empty()) host["Runtime"] = settings.oci_runtime;
    if (settings.init_path.empty())
        host["Init"] = true;
    else
        binds.push_back(settings.init_path + ":" + std::string(kBoxInitPath) + ":ro");
    // The engine keeps no copy of the output: radiald streams it (attach) and redacts it.
    host["LogConfig"] = {{"Type", "none"}, {"Config", json::object()}};
    host["CapDrop"] = json::array({"ALL"});
    host["SecurityOpt"] = json::array({"no-new-privileges"});
    const std::uint64_t memory = spec.memory_bytes != 0 ? spec.memory_bytes : settings.memory_bytes;
    // Raised to the least the OCI runtime starts a box with (docs/design.md §13.9).
    host["PidsLimit"] =
        host_pids_limit(oci_runtime_profile(settings.oci_runtime),
                        spec.pids_limit != 0 ? spec.pids_limit : settings.pids_limit);
    host["Memory"] = memory;
    host["MemorySwap"] = memory; // the same value: no swap
    host["NanoCpus"] = cpus * 1'000'000;
    host["ReadonlyRootfs"] = spec.read_only_rootfs != Tristate::no;
    // The writable root layer's bound, where the operator asked for one (docs/design.md §13.1).
    if (settings.writable_layer_bytes != 0)
        host["StorageOpt"] = {{"size", std::to_string(settings.writable_layer_bytes)}};

    bool spec_has_tmp = false;
    for (std::size_t i = 0; i < spec.tmpfs.size(); ++i) {
        const auto& t = spec.tmpfs[i];
        check.absolute_path(plugin_support::spec_key("tmpfs", i), "target", t.target, true);
        if (t.target.find(',') != std::string::npos)
            check.fail(plugin_support::spec_key("tmpfs", i),
                       "target '" + t.target + "' contains ','", "use a path without ','");
        spec_has_tmp = spec_has_tmp || t.target == "/tmp";
    }
    json tmpfs = json::object();
    if (!spec_has_tmp) tmpfs["/tmp"] = tmpfs_options(settings.tmpfs_size_bytes);
    const BoxUser owner = *parse_box_user(user, namespaced_root); // user_problem() accepted it
    for (const auto& t : spec.tmpfs) {
        const std::uint64_t size = t.size_bytes != 0 ? t.size_bytes : settings.tmpfs_size_bytes;
        tmpfs[t.target] =
            t.target == "/tmp" ? tmpfs_options(size) : owned_tmpfs_options(size, owner);
    }
    host["Tmpfs"] = tmpfs;

    if (!spec.network.empty())
        check.plain_word("network", spec.network, "give a docker network name");
    host["NetworkMode"] = spec.network.empty() ? std::string("none") : spec.network;

    json extra_hosts = json::array();
    for (std::size_t i = 0; i < spec.extra_hosts.size(); ++i) {
        const auto& h = spec.extra_hosts[i];
        check.plain_word(plugin_support::spec_key("extraHosts", i), h, "give name:address");
        if (h.find(':') == std::string::npos || h.front() == ':')
            check.fail(plugin_support::spec_key("extraHosts", i), "'" + h + "' is not name:address",
                       "give name:address such as db:127.0.0.1");
        extra_hosts.push_back(h);
    }
    if (!extra_hosts.empty()) host["ExtraHosts"] = extra_hosts;

    for (std::size_t i = 0; i < spec.mounts.size(); ++i) {
        const auto& m = spec.mounts[i];
        check.absolute_path(plugin_support::spec_key("mounts", i), "source", m.source, true);
        check.absolute_path(plugin_support::spec_key("mounts", i), "target", m.target, true);
        // rslave: the host's later mounts below the source reach the box, never the reverse
        // (radial_spec_propagation).
        std::string options = m.read_only ? "ro" : "";
        if (m.receives_host_mounts) {
            if (!oci_runtime_profile(settings.oci_runtime).mount_propagation)
                check.fail(plugin_support::spec_key("mounts", i),
                           "mount '" + m.target +
                               "' must receive the host's later mounts, which "
                               "run.docker.ociRuntime '" +
                               settings.oci_runtime + "' does not pass on",
                           "use the engine's default runtime (runc) for pooled boxes");
            options += options.empty() ? "rslave" : ",rslave";
        }
        binds.push_back(m.source + ":" + m.target + (options.empty() ? "" : ":" + options));
    }
    if (!binds.empty()) host["Binds"] = binds;

    if (!spec.workdir.empty()) {
        check.absolute_path("workdir", "directory", spec.workdir, false);
        body["WorkingDir"] = spec.workdir;
    }

    // Plain values travel only in this request body, over the engine socket: never on a command
    // line, never in a file, never in a client's environment (docs/design.md §6.3, §13.1). Secret
    // ones never in it either when radial-init runs the box: the engine keeps the body on disk
    // (the container's config, containerd's metadata), so they go to radial-init over the attach
    // stream after start, and live only in memory (secret_env_block, docs/design.md §13.8).
    const bool secrets_by_stdin = !settings.init_path.empty();
    bool any_secret = false;
    std::set<std::string_view> seen;
    json env = json::array();
    for (std::size_t i = 0; i < spec.env.size(); ++i) {
        const auto& e = spec.env[i];
        std::string field = plugin_support::spec_key("env", i);
        check.no_nul(field, e.name);
        if (!is_env_name(e.name))
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
        // Without radial-init a secret could only go in this body, which the engine keeps on disk:
        // refused rather than left at rest (docs/design.md §6.3).
        if (e.secret && !secrets_by_stdin)
            throw Error(RADIAL_E_REFUSED, field,
                        "preparing box '" + spec.label + "': secret '" + e.name +
                            "' would be kept on the host's disk in the container's "
                            "configuration, since no radial-init runs the box; set "
                            "run.docker.boxInit to radial-init's path (installed in lib/radial/, "
                            "beside the runtimes directory)");
        any_secret = any_secret || e.secret;
        if (!e.secret) env.push_back(e.name + "=" + e.value);
    }
    if (!env.empty()) body["Env"] = env;
    if (any_secret && secrets_by_stdin) {
        body["AttachStdin"] = true;
        body["OpenStdin"] = true;
    }

    json cmd = json::array();
    if (!settings.init_path.empty()) {
        // radial-init TIMEOUT_MS GRACE_MS -- <the image's entrypoint> ARGV: what docker would have
        // run, under an init that ends the box at the deadline by itself (docs/design.md §13.8).
        body["Entrypoint"] = json::array({std::string(kBoxInitPath)});
        if (any_secret) cmd.push_back("--env-from-stdin");
        cmd.push_back(std::to_string(spec.timeout_ms));
        // The box's own grace at its deadline, for when no radiald is left: run.stopGrace and the
        // plugin's killGrace after it, so that with radiald alive its stop comes first and a box
        // that ended in the grace is one whose command ended, not one radial-init ended.
        cmd.push_back(std::to_string(spec.stop_grace_ms + settings.kill_grace_ms));
        cmd.push_back("--");
        for (const auto& a : image_entrypoint) cmd.push_back(a);
    }
    for (const auto& a : spec.argv) cmd.push_back(a);
    body["Cmd"] = cmd;
    body["HostConfig"] = host;
    return body;
}

std::string secret_env_block(const ContainerSpec& spec) {
    std::string entries;
    for (const auto& e : spec.env) {
        if (!e.secret) continue;
        entries += e.name;
        entries += '=';
        entries += e.value;
        entries += '\0';
    }
    if (entries.empty()) return {};
    return "radial-env " + std::to_string(entries.size()) + "\n" + entries;
}

std::vector<std::string> docker_pull_argv(const DockerSettings& settings, std::string_view image) {
    std::vector<std::string> argv = docker_client_argv(settings);
    append(argv, {"pull", "--quiet", std::string(image)});
    return argv;
}

std::optional<std::vector<std::string>> parse_runtime_names(const nlohmann::json& runtimes) {
    if (!runtimes.is_object()) return std::nullopt;
    std::vector<std::string> names;
    for (const auto& item : runtimes.items()) names.push_back(item.key());
    return names; // nlohmann::json keeps object keys sorted
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

std::optional<UsernsRoot> parse_userns_root(const nlohmann::json& info) {
    if (!info.is_object()) return std::nullopt;
    const auto options = info.find("SecurityOptions");
    if (options == info.end() || !options->is_array()) return std::nullopt;
    bool remapped = false;
    for (const auto& o : *options)
        remapped = remapped || (o.is_string() && o.get<std::string>() == "name=userns");
    const auto root_dir = info.find("DockerRootDir");
    if (!remapped || root_dir == info.end() || !root_dir->is_string()) return std::nullopt;
    // dockerd keeps a remapped engine's data in <data-root>/<uid>.<gid> (docs/design.md §8.8).
    std::string_view dir = root_dir->get_ref<const std::string&>();
    while (!dir.empty() && dir.back() == '/') dir.remove_suffix(1);
    dir = dir.substr(dir.rfind('/') + 1);
    const auto dot = dir.find('.');
    if (dot == std::string_view::npos) return std::nullopt;
    auto id = [](std::string_view digits) -> std::optional<std::uint32_t> {
        if (!radial::internal::is_decimal(digits) || digits.size() > 10) return std::nullopt;
        const std::uint64_t v = std::stoull(std::string(digits));
        if (v == 0 || v > kMaxBoxId) return std::nullopt;
        return static_cast<std::uint32_t>(v);
    };
    const auto uid = id(dir.substr(0, dot)), gid = id(dir.substr(dot + 1));
    if (!uid || !gid) return std::nullopt;
    return UsernsRoot{*uid, *gid};
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

std::optional<std::vector<ListedBox>> parse_container_list(std::string_view body) {
    auto list = nlohmann::json::parse(body, nullptr, false);
    if (!list.is_array()) return std::nullopt;
    std::vector<ListedBox> boxes;
    for (const auto& c : list) {
        if (!c.is_object()) continue;
        auto id = c.find("Id");
        auto labels = c.find("Labels");
        if (id == c.end() || !id->is_string() || !is_hex(id->get<std::string>())) continue;
        if (labels == c.end() || !labels->is_object()) continue;
        auto value = labels->find(std::string(kLabelKey));
        if (value == labels->end() || !value->is_string()) continue;
        boxes.push_back({id->get<std::string>(), value->get<std::string>()});
    }
    return boxes;
}

} // namespace radial::docker
