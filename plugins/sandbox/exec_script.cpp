#include "exec_script.h"

#include <radial/plugin/runtime.hpp>
#include <random>

#include "sbx_argv.h"
#include "support/spec_key.h"

namespace radial::sandbox {

namespace {

using radial::plugin::Error;

[[noreturn]] void fail(const ContainerSpec& spec, const std::string& field,
                       const std::string& cause, const std::string& fix) {
    throw Error(RADIAL_E_INVALID, field,
                "preparing box '" + spec.label + "': " + field + " " + cause + "; " + fix);
}

void no_nul(const ContainerSpec& spec, const std::string& field, std::string_view value) {
    if (value.find('\0') != std::string_view::npos)
        fail(spec, field, "contains a NUL byte, which no shell word can carry", "remove it");
}

// "/a/b/" and "/a/b" name one place; so do "/a//b" and "/a/b".
std::string normal_path(std::string_view path) {
    std::string out;
    for (char c : path)
        if (!(c == '/' && !out.empty() && out.back() == '/')) out += c;
    while (out.size() > 1 && out.back() == '/') out.pop_back();
    return out;
}

bool inside(const std::string& path, const std::string& dir) {
    return path.size() > dir.size() && path.starts_with(dir) && path[dir.size()] == '/';
}

std::string parent_of(const std::string& path) {
    auto slash = path.rfind('/');
    return slash == 0 ? std::string("/") : path.substr(0, slash);
}

} // namespace

std::string posix_quote(std::string_view value) {
    std::string out = "'";
    for (char c : value) {
        if (c == '\'')
            out += "'\\''";
        else
            out += c;
    }
    out += '\'';
    return out;
}

std::string sbx_bridge_lines(const ContainerSpec& spec) {
    sbx_workspaces(spec); // the same refusals as the create step, before anything is written

    struct Bridge {
        std::string source, target;
        std::size_t mount;
    };
    std::vector<Bridge> bridges;
    for (std::size_t i = 0; i < spec.mounts.size(); ++i) {
        std::string target = normal_path(spec.mounts[i].target);
        std::string source = normal_path(spec.mounts[i].source);
        if (target == "/")
            fail(spec, plugin_support::spec_key("mounts", i),
                 "target is '/', which cannot become a symlink",
                 "mount it at a directory below '/'");
        for (std::size_t j = 0; j < i; ++j)
            if (normal_path(spec.mounts[j].target) == target)
                fail(spec, plugin_support::spec_key("mounts", i),
                     "target '" + target + "' is also " + plugin_support::spec_key("mounts", j) +
                         "'s target",
                     "give each mount its own target");
        if (target != source) bridges.push_back({source, target, i});
    }
    for (const auto& b : bridges) {
        for (std::size_t i = 0; i < spec.mounts.size(); ++i) {
            const std::string source = normal_path(spec.mounts[i].source);
            const std::string target = normal_path(spec.mounts[i].target);
            // Workspaces appear at their host paths: a symlink there is written into host files.
            if (b.target == source || inside(b.target, source))
                fail(spec, plugin_support::spec_key("mounts", b.mount),
                     "target '" + b.target + "' lies inside workspace '" + source +
                         "', which passes through from the host, so the bridging symlink would "
                         "be written into the host's files",
                     "give it a target outside every mount source");
            if (i != b.mount && inside(target, b.target))
                fail(spec, plugin_support::spec_key("mounts", i),
                     "target '" + target + "' lies inside " +
                         plugin_support::spec_key("mounts", b.mount) + "'s target '" + b.target +
                         "', which the sandbox bridges with a symlink into the host's workspace",
                     "mount it outside '" + b.target + "'");
        }
    }

    std::string script;
    if (!bridges.empty()) {
        // Targets such as /work or /run/radial-forge need root to create; sbx templates run as a
        // non-root user with passwordless sudo, so bridging borrows it (and only bridging does).
        script +=
            "radial_root=\n"
            "if [ \"$(id -u)\" != 0 ] && command -v sudo >/dev/null 2>&1; then "
            "radial_root='sudo -n'; fi\n";
        for (const auto& b : bridges) {
            std::string t = posix_quote(b.target);
            script += "$radial_root mkdir -p " + posix_quote(parent_of(b.target)) + "\n";
            // A directory the image has there would take the symlink inside it. Under docker
            // the mount covers it, whatever it holds; here an empty one goes and one with files
            // is moved aside, so the command sees the workspace either way (docs/design.md
            // §13.3).
            script += "if [ -d " + t + " ] && [ ! -L " + t + " ]; then $radial_root rmdir " + t +
                      " 2>/dev/null || $radial_root mv " + t + " " +
                      posix_quote(b.target + ".radial-covered") + ".$$; fi\n";
            script += "$radial_root ln -sfn " + posix_quote(b.source) + " " + t + "\n";
        }
    }
    return script;
}

std::string sbx_env_lines(const ContainerSpec& spec) {
    std::string script;
    for (std::size_t i = 0; i < spec.env.size(); ++i) {
        const EnvVar& e = spec.env[i];
        if (!is_env_name(e.name))
            fail(spec, plugin_support::spec_key("env", i),
                 "name '" + e.name + "' is not a shell variable name",
                 "use letters, digits and '_', not starting with a digit");
        no_nul(spec, plugin_support::spec_key("env", i), e.value);
        script += "export " + e.name + "=" + posix_quote(e.value) + "\n";
    }
    if (!spec.workdir.empty()) {
        no_nul(spec, "workdir", spec.workdir);
        script += "cd " + posix_quote(spec.workdir) + "\n";
    }
    return script;
}

std::string sbx_argv_words(const ContainerSpec& spec) {
    if (spec.argv.empty()) fail(spec, "argv", "is empty", "give the command to run");
    std::string words;
    for (std::size_t i = 0; i < spec.argv.size(); ++i) {
        no_nul(spec, plugin_support::spec_key("argv", i), spec.argv[i]);
        words += (i == 0 ? "" : " ") + posix_quote(spec.argv[i]);
    }
    return words;
}

std::string sbx_exec_script(const ContainerSpec& spec, std::string_view started_marker) {
    // One statement each: the refusals come in the fields' order.
    std::string script = "set -e\n";
    script += sbx_bridge_lines(spec);
    script += sbx_env_lines(spec);
    // The last line before the command: without it the runtime knows that sbx or the set-up
    // failed, whatever the exit status says (docs/design.md §13.3).
    if (!started_marker.empty())
        script += "printf '%s\\n' " + posix_quote(started_marker) + " >&2\n";
    script += "exec " + sbx_argv_words(spec) + " </dev/null\n";
    return script;
}

std::string exec_started_marker() {
    std::random_device random;
    std::string marker = "radial-exec-started-";
    static constexpr char kHex[] = "0123456789abcdef";
    for (int i = 0; i < 4; ++i) { // 128 bits
        const unsigned word = random();
        for (int j = 0; j < 8; ++j) marker += kHex[(word >> (4 * j)) & 0xf];
    }
    return marker;
}

} // namespace radial::sandbox
