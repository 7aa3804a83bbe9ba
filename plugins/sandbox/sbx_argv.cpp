#include "sbx_argv.h"

#include <radial/internal/names.h>

#include <algorithm>
#include <cctype>
#include <radial/plugin/runtime.hpp>

#include "sbx_names.h"
#include "support/spec_key.h"

namespace radial::sandbox {

namespace {

using radial::plugin::Error;

[[noreturn]] void fail(const ContainerSpec& spec, std::int32_t code, const std::string& field,
                       const std::string& cause, const std::string& fix) {
    throw Error(code, field,
                "preparing box '" + spec.label + "': " + field + " " + cause + "; " + fix);
}

void check_absolute(const ContainerSpec& spec, const std::string& field, std::string_view what,
                    std::string_view path) {
    if (path.find('\0') != std::string_view::npos)
        fail(spec, RADIAL_E_INVALID, field,
             std::string(what) + " contains a NUL byte, which no command line can carry",
             "remove it");
    if (path.empty() || path.front() != '/')
        fail(spec, RADIAL_E_INVALID, field,
             std::string(what) + " '" + std::string(path) + "' is not an absolute path",
             "give an absolute path");
    // sbx prints each sandbox's workspaces in `sbx ls`, whose text table radiald reads line by
    // line to find its sandboxes (docs/design.md §13.5): a newline there would forge a row, and
    // with it another sandbox's name for radiald to remove.
    for (char c : path)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            fail(spec, RADIAL_E_INVALID, field,
                 std::string(what) +
                     " contains a control character (a newline, a tab), which sbx's listing "
                     "would print as it is",
                 "use a path without control characters");
}

// The global flag goes right after the command words: Cobra reads a persistent flag there on
// every version, and it can never be taken for a positional or an option's value.
std::vector<std::string> command(std::initializer_list<std::string_view> words,
                                 const SbxFeatures& features) {
    std::vector<std::string> args(words.begin(), words.end());
    if (features.no_input) args.emplace_back("--no-input");
    return args;
}

} // namespace

std::vector<Workspace> sbx_workspaces(const ContainerSpec& spec) {
    std::vector<Workspace> out;
    std::vector<std::size_t> first_mount;
    for (std::size_t i = 0; i < spec.mounts.size(); ++i) {
        const Mount& m = spec.mounts[i];
        const std::string field = plugin_support::spec_key("mounts", i);
        check_absolute(spec, field, "source", m.source);
        check_absolute(spec, field, "target", m.target);
        if (m.source.find(':') != std::string::npos)
            fail(spec, RADIAL_E_INVALID, field,
                 "source '" + m.source +
                     "' contains ':', which sbx's workspace syntax (PATH[:ro]) cannot express",
                 "use a path without ':'");
        bool merged = false;
        for (std::size_t w = 0; w < out.size(); ++w) {
            if (out[w].path != m.source) continue;
            if (out[w].read_only != m.read_only)
                fail(spec, RADIAL_E_INVALID, field,
                     "passes source '" + m.source + "' " +
                         (m.read_only ? "read-only" : "read-write") + " while " +
                         plugin_support::spec_key("mounts", first_mount[w]) + " passes it " +
                         (out[w].read_only ? "read-only" : "read-write") +
                         ", and a sandbox workspace has one mode",
                     "mount it once, or with one mode");
            merged = true;
        }
        if (!merged) {
            out.push_back({m.source, m.read_only});
            first_mount.push_back(i);
        }
    }
    return out;
}

std::string format_sbx_memory(std::uint64_t memory_bytes) {
    constexpr std::uint64_t kMiB = 1ull << 20, kGiB = 1ull << 30;
    if (memory_bytes % kGiB == 0) return std::to_string(memory_bytes / kGiB) + "g";
    return std::to_string(memory_bytes / kMiB + (memory_bytes % kMiB != 0 ? 1 : 0)) + "m";
}

std::vector<std::string> sbx_create_args(const ContainerSpec& spec, const SandboxSettings& settings,
                                         const SbxFeatures& features) {
    if (!spec.network.empty())
        fail(spec, RADIAL_E_REFUSED, "network",
             "'" + spec.network + "' cannot be honoured: a sandbox has no docker network to join",
             "unset run.network under the sandbox runtime");
    std::vector<Workspace> workspaces = sbx_workspaces(spec);
    std::string image = settings.template_image.empty() ? spec.image : settings.template_image;
    if (!image.empty() && settings.template_image.empty()) {
        if (image.front() == '-' || internal::has_space_or_control(image))
            fail(spec, RADIAL_E_INVALID, "image",
                 "'" + image + "' starts with '-' or contains whitespace or a control character",
                 "give an image reference");
    }

    std::vector<std::string> args = command({"create"}, features);
    args.insert(args.end(), {"--name", sandbox_name(spec.label)});
    if (!image.empty()) args.insert(args.end(), {"--template", image});
    // Always bounded: without --memory sbx gives a VM half the host's memory.
    const std::uint64_t memory = spec.memory_bytes != 0 ? spec.memory_bytes : settings.memory_bytes;
    const std::uint64_t cpus = spec.cpus_milli != 0 ? spec.cpus_milli : settings.cpus_milli;
    if (memory != 0) args.insert(args.end(), {"--memory", format_sbx_memory(memory)});
    if (cpus != 0) args.insert(args.end(), {"--cpus", std::to_string((cpus + 999) / 1000)});
    for (const auto& kit : settings.kits) args.insert(args.end(), {"--kit", kit});
    args.insert(args.end(), settings.create_args.begin(), settings.create_args.end());
    args.push_back(settings.agent);
    for (const auto& w : workspaces) args.push_back(w.read_only ? w.path + ":ro" : w.path);
    return args;
}

std::vector<std::string> sbx_exec_args(std::string_view name, const SbxFeatures& features) {
    std::vector<std::string> args = command({"exec"}, features);
    args.insert(args.end(), {"-i", std::string(name), "sh", "-s"});
    return args;
}

namespace {
void check_port(std::string_view name, std::uint32_t port) {
    if (port == 0 || port > 65535)
        throw Error(RADIAL_E_INVALID, "hostPorts",
                    "preparing sandbox '" + std::string(name) + "': host port " +
                        std::to_string(port) + " is not a TCP port; give one in 1..65535");
}
// A destination sbx reads as one network resource: host:port or *.suffix:port, nothing that an
// argv parser could take for a flag, no whitespace or control bytes. The host checked the rule's
// syntax; this keeps a third party's spec from reaching sbx as anything but one resource.
void check_resource(std::string_view name, std::string_view resource) {
    const auto colon = resource.rfind(':');
    const bool ok =
        !resource.empty() && resource.size() <= 260 && resource.front() != '-' &&
        colon != std::string_view::npos && colon > 0 && colon + 1 < resource.size() &&
        std::all_of(resource.begin(), resource.end(),
                    [](unsigned char c) {
                        return std::isalnum(c) || c == '.' || c == '-' || c == '*' || c == ':' ||
                               c == '[' || c == ']' || c == '_';
                    }) &&
        std::all_of(resource.begin() + static_cast<std::ptrdiff_t>(colon) + 1, resource.end(),
                    [](unsigned char c) { return std::isdigit(c); }) &&
        // '*' only as a leading "*." with a name after it, as run.egress.allow has it.
        (resource.find('*') == std::string_view::npos ||
         (resource.rfind('*') == 0 && resource.size() > 2 && resource[1] == '.' && colon > 2));
    if (!ok)
        throw Error(RADIAL_E_INVALID, "egress",
                    "preparing sandbox '" + std::string(name) + "': egress destination '" +
                        std::string(resource) + "' is not host:port");
}
} // namespace

std::vector<std::string> sbx_policy_resource_args(std::string_view name, std::string_view resource,
                                                  const SbxFeatures& features) {
    check_resource(name, resource);
    std::vector<std::string> args = command({"policy", "allow", "network"}, features);
    args.insert(args.end(), {"--sandbox", std::string(name), std::string(resource)});
    return args;
}

std::vector<std::string> sbx_policy_revoke_resource_args(std::string_view name,
                                                         std::string_view resource,
                                                         const SbxFeatures& features) {
    check_resource(name, resource);
    std::vector<std::string> args = command({"policy", "rm", "network"}, features);
    args.insert(args.end(), {"--sandbox", std::string(name), "--resource", std::string(resource)});
    return args;
}

std::vector<std::string> sbx_policy_args(std::string_view name, std::uint32_t port,
                                         const SbxFeatures& features) {
    check_port(name, port);
    return sbx_policy_resource_args(name, "localhost:" + std::to_string(port), features);
}

std::vector<std::string> sbx_policy_revoke_args(std::string_view name, std::uint32_t port,
                                                const SbxFeatures& features) {
    check_port(name, port);
    return sbx_policy_revoke_resource_args(name, "localhost:" + std::to_string(port), features);
}

std::vector<std::string> sbx_remove_args(std::string_view name, const SbxFeatures& features) {
    std::vector<std::string> args = command({"rm"}, features);
    args.insert(args.end(), {"--force", std::string(name)});
    return args;
}

std::vector<std::string> sbx_list_args(const SbxFeatures& features) {
    std::vector<std::string> args = command({"ls"}, features);
    if (features.ls_json) args.emplace_back("--json");
    return args;
}

std::vector<std::string> sbx_version_args() { return {"version"}; }

std::vector<std::string> sbx_help_args() { return {"--help"}; }

std::vector<std::string> sbx_list_help_args() { return {"ls", "--help"}; }

} // namespace radial::sandbox
