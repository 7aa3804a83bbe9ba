#include "service_spec.h"

#include <radial/internal/names.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "support/box_init.h"
#include "support/settings_error.h"

namespace radial::swarm {

namespace {

using radial::plugin::Error;

bool is_zero(std::string_view digits) {
    return std::all_of(digits.begin(), digits.end(), [](char c) { return c == '0'; });
}

std::int64_t nano_cpus(std::uint64_t milli) { return static_cast<std::int64_t>(milli) * 1'000'000; }

} // namespace

std::optional<std::string> user_problem(const std::string& user) {
    auto colon = user.find(':');
    std::string uid = user.substr(0, colon);
    std::string gid = colon == std::string::npos ? std::string() : user.substr(colon + 1);
    if (!internal::is_decimal(uid, 10) ||
        (colon != std::string::npos && !internal::is_decimal(gid, 10)))
        return "'" + user +
               "' is not numeric uid[:gid]; a name is resolved inside the image and may be root";
    if (is_zero(uid) || (!gid.empty() && is_zero(gid)))
        return "'" + user + "' is root or root's group";
    if (colon == std::string::npos)
        return "'" + user +
               "' has no gid, so docker would take the group from the image, or root's group 0 "
               "when the image does not list the uid; give uid:gid";
    return std::nullopt;
}

SwarmSettings parse_swarm_settings(radial::plugin::Config& config) {
    SwarmSettings s;
    long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus > 0) s.cpus_milli = std::min<std::uint64_t>(s.cpus_milli, std::uint64_t(cpus) * 1000);
    if (auto v = config.string("host")) {
        if (!v->starts_with("unix:///") && !v->starts_with("tcp://"))
            plugin_support::refuse_setting(
                config, "host",
                "'" + *v +
                    "' is not an engine address; give unix:///var/run/docker.sock or "
                    "tcp://host:port of a swarm manager's engine");
        s.host = *v;
    }
    if (auto v = config.size_bytes("memory")) {
        if (*v < (6ull << 20))
            plugin_support::refuse_setting(config, "memory", "below the engine's minimum of 6 MiB");
        s.memory_bytes = *v;
    }
    if (auto v = config.cpus_milli("cpus")) {
        if (*v < 10)
            plugin_support::refuse_setting(config, "cpus",
                                           "the smallest CPU cap is 0.01; give e.g. 2 or 0.5");
        s.cpus_milli = *v;
    }
    if (auto v = config.integer("pidsLimit")) {
        if (*v <= 0)
            plugin_support::refuse_setting(config, "pidsLimit", "give a positive cap such as 256");
        s.pids_limit = *v;
    }
    if (auto v = config.string("user")) {
        if (auto problem = user_problem(*v))
            plugin_support::refuse_setting(config, "user", *problem);
        s.user = *v;
    }
    if (auto v = config.size_bytes("tmpfsSize")) s.tmpfs_size_bytes = *v;
    if (auto v = config.string("pull")) {
        if (*v != "never" && *v != "always")
            plugin_support::refuse_setting(
                config, "pull",
                "'" + *v +
                    "' is not a pull policy for swarm; give \"never\" (run the manager's "
                    "local image by id) or \"always\" (each node pulls the reference)");
        s.pull = *v;
    }
    if (auto v = config.strings("constraints")) {
        for (const auto& c : *v)
            if (c.find("==") == std::string::npos && c.find("!=") == std::string::npos)
                plugin_support::refuse_setting(
                    config, "constraints",
                    "'" + c + "' is not a placement constraint; give e.g. \"node.role==worker\"");
        s.constraints = *v;
    }
    if (auto v = config.size_bytes("reserveMemory")) s.reserve_memory_bytes = *v;
    if (auto v = config.cpus_milli("reserveCpus")) s.reserve_cpus_milli = *v;
    if (auto v = config.boolean("hostNetwork")) s.host_network = *v;
    if (auto v = config.boolean("noDefaultBridge")) s.no_default_bridge = *v;
    if (auto v = config.duration_ms("commandTimeout")) s.command_timeout_ms = *v;
    if (auto v = config.duration_ms("stopGrace")) s.stop_grace_ms = *v;
    if (auto v = config.size_bytes("logMaxSize")) {
        if (*v < (1ull << 20))
            plugin_support::refuse_setting(config, "logMaxSize",
                                           "give at least \"1m\", e.g. \"256m\"");
        s.log_max_size_bytes = *v;
    }
    if (auto v = plugin_support::box_init_setting(config)) s.init_path = *v;
    return s;
}

std::vector<radial::plugin::Disposition> describe_for_swarm(const ContainerSpec& spec,
                                                            const SwarmSettings& settings) {
    std::vector<radial::plugin::Disposition> out;
    bool any_secret =
        std::any_of(spec.env.begin(), spec.env.end(), [](const EnvVar& e) { return e.secret; });
    for (std::uint32_t field : carried_fields(spec)) {
        switch (field) {
            case RADIAL_FIELD_USER:
                if (auto problem = user_problem(spec.user))
                    out.push_back(
                        {field, RADIAL_DISP_REFUSED,
                         "the swarm runtime never runs a task as root or in root's group: " +
                             *problem});
                else
                    out.push_back({field, RADIAL_DISP_HONOURED, {}});
                break;
            case RADIAL_FIELD_ENV:
                if (any_secret)
                    out.push_back(
                        {field, RADIAL_DISP_BRIDGED,
                         "secret variables travel as swarm secrets (encrypted at rest in the "
                         "raft log, with a key on disk unless the swarm is autolocked; mounted "
                         "from a tmpfs under /run/secrets) and an entry step (/bin/sh in the "
                         "image) exports them before exec; they are not in the service's "
                         "environment"});
                else
                    out.push_back({field, RADIAL_DISP_HONOURED, {}});
                break;
            case RADIAL_FIELD_MOUNTS:
                out.push_back(
                    {field, RADIAL_DISP_HONOURED,
                     "bind mounts come from the filesystem of the node the task lands on"});
                break;
            case RADIAL_FIELD_HOST_PORTS:
                if (!spec.network.empty() && spec.network != "none")
                    out.push_back({field, RADIAL_DISP_HONOURED,
                                   "reachability follows the network '" + spec.network + "'"});
                else if (settings.host_network)
                    out.push_back(
                        {field, RADIAL_DISP_BRIDGED,
                         "the task joins its node's host network (run.swarm.hostNetwork): "
                         "it reaches these ports, and every other address the node "
                         "reaches"});
                else
                    out.push_back(
                        {field, RADIAL_DISP_REFUSED,
                         "a swarm task without a network has loopback only and cannot reach a host "
                         "port; set run.swarm.hostNetwork = true (tasks then share their node's "
                         "network) or run.network to a swarm network that reaches "
                         "run.turnSocketHost (docs/cluster.md)"});
                break;
            case RADIAL_FIELD_NETWORK:
                if (spec.network == "none")
                    out.push_back(
                        {field, RADIAL_DISP_HONOURED,
                         "the task gets no network attachment: loopback only where its node's "
                         "engine has no default bridge; the run is refused otherwise "
                         "(run.swarm.noDefaultBridge)"});
                else
                    out.push_back({field, RADIAL_DISP_HONOURED,
                                   "the network must be swarm-scoped (overlay) or 'host'"});
                break;
            default: out.push_back({field, RADIAL_DISP_HONOURED, {}});
        }
    }
    return out;
}

std::string service_name(const std::string& label) {
    // Swarm's names: [a-zA-Z0-9][a-zA-Z0-9_.-]*, at most 63 characters, unique among services.
    constexpr std::size_t kMax = 63;
    const bool fits =
        !label.empty() && label.size() <= kMax &&
        std::isalnum(static_cast<unsigned char>(label[0])) &&
        std::all_of(label.begin(), label.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
        });
    if (fits) return label;
    // As much of the label as fits, then an FNV-1a hash of all of it: distinct labels keep
    // distinct names.
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : label) h = (h ^ c) * 1099511628211ull;
    std::string prefix;
    for (char c : label) {
        if (prefix.size() == kMax - 18) break;
        if (std::isalnum(static_cast<unsigned char>(c)) || c == '-') prefix += c;
    }
    if (prefix.empty() || !std::isalnum(static_cast<unsigned char>(prefix[0])))
        prefix.insert(0, "r");
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return prefix + "-" + hex;
}

std::string secret_file_name(std::size_t index) { return "radial-env-" + std::to_string(index); }

std::string entry_script(const std::vector<SecretRef>& secrets) {
    // Command substitution strips trailing newlines; the appended "x", removed afterwards, keeps
    // the value byte for byte. Names are [A-Za-z_][A-Za-z0-9_]* (checked by the host), files ours:
    // nothing here needs quoting beyond what is written. Each value passes through its own
    // variable only: a scratch variable could be one of the box's own, plain or secret, and
    // would be lost (docs/design.md §13.7).
    std::string s;
    for (const auto& sec : secrets) {
        const std::string path = "/run/secrets/" + sec.file;
        const std::string& n = sec.env_name;
        s += n + "=$(cat " + path + " && printf x) || { echo \"radial entry step: cannot read " +
             path + " for " + n + "\" >&2; exit 126; }; " + n + "=\"${" + n + "%x}\"; export " + n +
             "; ";
    }
    s += "exec \"$@\"";
    return s;
}

nlohmann::json service_spec(const ContainerSpec& spec, const SwarmSettings& settings,
                            const std::string& image_ref,
                            const std::vector<std::string>& entrypoint,
                            const std::vector<SecretRef>& secrets, bool under_init) {
    using nlohmann::json;
    const std::string user = spec.user.empty() ? settings.user : spec.user;
    json c = json::object();
    c["Image"] = image_ref;
    c["Labels"] = {{kLabelKey, spec.label}};
    // No image HEALTHCHECK runs beside the turn, outside radial-init (docs/design.md §13.8).
    c["HealthCheck"] = {{"Test", json::array({"NONE"})}};
    json cmd = json::array();
    if (under_init) {
        // radial-init TIMEOUT_MS GRACE_MS -- [the entry step] <the image's entrypoint> ARGV
        cmd = {std::string(plugin_support::kBoxInitPath), "--escape-output",
               std::to_string(spec.timeout_ms), std::to_string(settings.stop_grace_ms), "--"};
    }
    if (!secrets.empty()) {
        cmd.push_back("/bin/sh");
        cmd.push_back("-c");
        cmd.push_back(entry_script(secrets));
        cmd.push_back("radial-entry");
    }
    if (cmd.empty()) {
        c["Args"] = spec.argv;
    } else {
        // The entry step or the init replaces the image's entrypoint, which goes in front of argv.
        for (const auto& a : entrypoint) cmd.push_back(a);
        for (const auto& a : spec.argv) cmd.push_back(a);
        c["Command"] = cmd;
    }
    if (!secrets.empty()) {
        auto colon = user.find(':');
        std::string uid = user.substr(0, colon);
        std::string gid = colon == std::string::npos ? uid : user.substr(colon + 1);
        json files = json::array();
        for (const auto& sec : secrets)
            files.push_back(
                {{"File", {{"Name", sec.file}, {"UID", uid}, {"GID", gid}, {"Mode", 0400}}},
                 {"SecretID", sec.id},
                 {"SecretName", sec.name}});
        c["Secrets"] = files;
    }
    json env = json::array();
    for (const auto& e : spec.env)
        if (!e.secret) env.push_back(e.name + "=" + e.value);
    if (!env.empty()) c["Env"] = env;
    if (!spec.workdir.empty()) c["Dir"] = spec.workdir;
    c["User"] = user;
    c["ReadOnly"] = spec.read_only_rootfs != Tristate::no;
    c["CapabilityDrop"] = json::array({"ALL"});
    // An init as pid 1, radial-init or else docker's: the workload's signals and exits behave as
    // anywhere else (pid 1 ignores a SIGKILL sent from inside its own namespace), and zombies are
    // reaped.
    if (!under_init) c["Init"] = true;
    c["StopGracePeriod"] = static_cast<std::int64_t>(settings.stop_grace_ms) * 1'000'000;
    json mounts = json::array();
    if (under_init)
        mounts.push_back({{"Type", "bind"},
                          {"Source", settings.init_path},
                          {"Target", std::string(plugin_support::kBoxInitPath)},
                          {"ReadOnly", true}});
    for (const auto& m : spec.mounts)
        mounts.push_back({{"Type", "bind"},
                          {"Source", m.source},
                          {"Target", m.target},
                          {"ReadOnly", m.read_only}});
    bool tmp_given = false;
    for (const auto& t : spec.tmpfs) {
        tmp_given = tmp_given || t.target == "/tmp";
        std::uint64_t size = t.size_bytes != 0 ? t.size_bytes : settings.tmpfs_size_bytes;
        mounts.push_back({{"Type", "tmpfs"},
                          {"Target", t.target},
                          {"TmpfsOptions", {{"SizeBytes", size}, {"Mode", 01777}}}});
    }
    if (!tmp_given && spec.read_only_rootfs != Tristate::no)
        mounts.push_back(
            {{"Type", "tmpfs"},
             {"Target", "/tmp"},
             {"TmpfsOptions", {{"SizeBytes", settings.tmpfs_size_bytes}, {"Mode", 01777}}}});
    if (!mounts.empty()) c["Mounts"] = mounts;
    if (!spec.extra_hosts.empty()) {
        // The API wants "address name" where the spec has "name:address".
        json hosts = json::array();
        for (const auto& h : spec.extra_hosts) {
            auto colon = h.find(':');
            hosts.push_back(
                colon == std::string::npos ? h : h.substr(colon + 1) + " " + h.substr(0, colon));
        }
        c["Hosts"] = hosts;
    }

    json limits = {
        {"MemoryBytes", spec.memory_bytes != 0 ? spec.memory_bytes : settings.memory_bytes},
        {"NanoCPUs", nano_cpus(spec.cpus_milli != 0 ? spec.cpus_milli : settings.cpus_milli)},
        {"Pids", spec.pids_limit != 0 ? spec.pids_limit : settings.pids_limit}};
    json resources = {{"Limits", limits}};
    json reservations = json::object();
    if (settings.reserve_memory_bytes != 0)
        reservations["MemoryBytes"] = settings.reserve_memory_bytes;
    if (settings.reserve_cpus_milli != 0)
        reservations["NanoCPUs"] = nano_cpus(settings.reserve_cpus_milli);
    if (!reservations.empty()) resources["Reservations"] = reservations;

    json task = {{"ContainerSpec", c},
                 // Service logs are read back from the node's log driver: "local" keeps the bytes
                 // as they were written, where json-file replaces bytes that are not UTF-8. Its
                 // default rotation (20 MB, compressed) loses what a lagging reader has not read;
                 // one uncompressed file of logMaxSize, kept once more, bounds the node's disk
                 // per turn instead (the files go with the service).
                 {"LogDriver",
                  {{"Name", "local"},
                   {"Options",
                    {{"max-size", std::to_string(settings.log_max_size_bytes)},
                     {"max-file", "2"},
                     {"compress", "false"}}}}},
                 {"Resources", resources},
                 {"RestartPolicy", {{"Condition", "none"}, {"MaxAttempts", 0}}}};
    if (!settings.constraints.empty()) task["Placement"] = {{"Constraints", settings.constraints}};
    // "none" is no attachment (swarm has no network "none"): loopback only where the node has no
    // default bridge, which the run checked (swarm_run.cpp) before anything was created.
    if (!spec.network.empty() && spec.network != "none")
        task["Networks"] = json::array({{{"Target", spec.network}}});
    else if (!spec.host_ports.empty() && settings.host_network)
        task["Networks"] = json::array({{{"Target", "host"}}});

    return {{"Name", service_name(spec.label)},
            {"Labels", {{kLabelKey, spec.label}}},
            {"TaskTemplate", task},
            {"Mode", {{"ReplicatedJob", {{"MaxConcurrent", 1}, {"TotalCompletions", 1}}}}}};
}

} // namespace radial::swarm
