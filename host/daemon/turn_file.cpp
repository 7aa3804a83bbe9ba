#include "daemon/turn_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <radial/internal/unique_fd.h>
#include <sys/stat.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <radial/container_spec.hpp>
#include <radial/units.hpp>
#include <set>

#include "config/bounded_units.h"
#include "config/config_text.h"
#include "config/key_table.h"
#include "daemon/spool.h"
#include "fs/file_kind.h"
#include "fs/read_to_end.h"
#include "turn/request_policy.h"
#include "turn/turn_session.h"
#include "turn/workspace_mode.h"

namespace radial::daemon {
namespace fs = std::filesystem;

namespace {

class FileReader {
public:
    FileReader(std::string file, fs::path base) : file_(std::move(file)), base_(std::move(base)) {}

    [[noreturn]] void fail(const toml::node& at, const std::string& key,
                           const std::string& problem) const {
        const auto& b = at.source().begin;
        throw TurnFileError(fmt::format("{}:{}:{}: {}: {}", file_, b.line, b.column, key, problem));
    }
    [[noreturn]] void missing(const std::string& key, const std::string& fix) const {
        throw TurnFileError(fmt::format("{}: {}: missing; {}", file_, key, fix));
    }

    std::string string(const toml::node& n, const std::string& key) const {
        if (!n.is_string()) fail(n, key, "must be a string");
        return std::string(*n.as_string());
    }

    std::vector<std::string> strings(const toml::node& n, const std::string& key) const {
        const auto* a = n.as_array();
        if (a == nullptr) fail(n, key, "must be an array of strings");
        std::vector<std::string> out;
        for (const auto& item : *a) {
            if (!item.is_string()) fail(item, key, "must be an array of strings");
            out.emplace_back(*item.as_string());
        }
        return out;
    }

    // An existing host path, made absolute against the turn file's directory.
    std::string host_path(const toml::node& n, const std::string& key, bool directory) const {
        std::string text = string(n, key);
        if (text.empty()) fail(n, key, "must not be empty");
        fs::path p = (base_ / text).lexically_normal();
        std::error_code ec;
        bool ok = directory ? fs::is_directory(p, ec) : fs::exists(p, ec);
        if (!ok)
            fail(n, key,
                 fmt::format("'{}' is not an existing {}; create it first (a relative path "
                             "is taken from the turn file's directory)",
                             p.string(), directory ? "directory" : "file or directory"));
        std::string out = p.string();
        if (out.size() > 1 && out.back() == '/') out.pop_back();
        return out;
    }

    std::string box_path(const toml::node& n, const std::string& key) const {
        std::string text = string(n, key);
        if (text.empty() || text.front() != '/')
            fail(n, key, fmt::format("'{}' must be an absolute path in the box", text));
        return fs::path(text).lexically_normal().string();
    }

private:
    std::string file_;
    fs::path base_;
};

void read_mounts(const FileReader& r, const toml::node& n, SpooledRequest& req) {
    const auto* a = n.as_array();
    if (a == nullptr) r.fail(n, "mounts", "must be an array of tables ([[mounts]])");
    std::set<std::string> targets{turn::kBoxSocketDir};
    if (!req.workspace.empty()) targets.insert(turn::kWorkspaceTarget);
    for (std::size_t i = 0; i < a->size(); ++i) {
        const auto& item = *a->get(i);
        std::string at = fmt::format("mounts[{}]", i);
        const auto* t = item.as_table();
        if (t == nullptr) r.fail(item, at, "must be a table with source, target and readOnly");
        Mount m;
        const toml::node* source = nullptr;
        const toml::node* target = nullptr;
        const std::vector<config::KeyReader> keys{
            {"source", [&](const std::string&, const toml::node& v) { source = &v; }},
            {"target", [&](const std::string&, const toml::node& v) { target = &v; }},
            {"readOnly",
             [&](const std::string& key, const toml::node& v) {
                 if (!v.is_boolean()) r.fail(v, key, "must be true or false");
                 m.read_only = v.as_boolean()->get();
             }},
        };
        config::read_keys(*t, at, keys, {"a mount", ""},
                          [&](const std::string& key, const toml::node& v,
                              const std::string& problem) { r.fail(v, key, problem); });
        if (source == nullptr) r.fail(item, at + ".source", "missing; name the host path to mount");
        if (target == nullptr) r.fail(item, at + ".target", "missing; name the path in the box");
        m.source = r.host_path(*source, at + ".source", false);
        m.target = r.box_path(*target, at + ".target");
        if (!targets.insert(m.target).second)
            r.fail(*target, at + ".target",
                   fmt::format("'{}' is already taken (by another mount, the workspace at {} or "
                               "the turn socket at {}); pick another path",
                               m.target, turn::kWorkspaceTarget, turn::kBoxSocketDir));
        req.mounts.push_back(std::move(m));
    }
}

// [env]: NAME = "value", each name a variable name.
void read_env(const FileReader& r, const std::string& key, const toml::node& v,
              SpooledRequest& req) {
    const auto* t = v.as_table();
    if (t == nullptr) r.fail(v, key, "must be a table of NAME = \"value\" ([env])");
    for (const auto& [name, value] : *t) {
        std::string ekey = "env." + std::string(name.str());
        if (!is_env_name(name.str()))
            r.fail(value, ekey, "is not a variable name ([A-Za-z_][A-Za-z0-9_]*)");
        req.env.push_back({std::string(name.str()), r.string(value, ekey), false});
    }
}

} // namespace

SpooledRequest read_turn_file(const std::string& path) {
    std::error_code ec;
    const auto st = fs::status(path, ec);
    if (st.type() == fs::file_type::not_found)
        throw TurnFileError(fmt::format("reading turn file '{}': no such file", path));
    if (ec) throw TurnFileError(fmt::format("reading turn file '{}': {}", path, ec.message()));
    const auto not_a_file = [&](const std::string& kind) {
        return TurnFileError(fmt::format(
            "reading turn file '{}': it is {}, not a regular file; write the turn file (TOML) to "
            "a file and give its path",
            path, kind));
    };
    if (st.type() != fs::file_type::regular) {
        struct stat sb {};
        throw not_a_file(::stat(path.c_str(), &sb) == 0 ? fs_util::file_kind(sb.st_mode)
                                                        : "not a file");
    }
    // Opened without waiting, and judged by what was opened: a fifo put at the name since the
    // look above would hold the command until a writer came.
    internal::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    struct stat opened {};
    if (!fd || ::fstat(fd.get(), &opened) != 0)
        throw TurnFileError(fmt::format("reading turn file '{}': {}", path, std::strerror(errno)));
    if (!S_ISREG(opened.st_mode)) throw not_a_file(fs_util::file_kind(opened.st_mode));
    // Bounded as the spooled request it becomes is: a file of gigabytes was read whole into
    // memory before it was found to be no request.
    const auto too_large = [&] {
        return TurnFileError(fmt::format(
            "reading turn file '{}': it is larger than {} bytes, more than any request; give the "
            "turn file (TOML) of one request",
            path, Spool::kMaxRequestBytes));
    };
    if (static_cast<std::uint64_t>(opened.st_size) > Spool::kMaxRequestBytes) throw too_large();
    std::string text;
    if (!fs_util::read_to_end(fd.get(), text, Spool::kMaxRequestBytes))
        throw errno == EFBIG
            ? too_large()
            : TurnFileError(fmt::format("reading turn file '{}': {}", path, std::strerror(errno)));
    toml::table root;
    try {
        root = toml::parse(text, path);
    } catch (const toml::parse_error& e) {
        const auto& b = e.source().begin;
        throw TurnFileError(fmt::format("{}:{}:{}: {}", path, b.line, b.column,
                                        config::toml_problem(e.description())));
    }
    FileReader r(path, fs::absolute(path, ec).parent_path());
    SpooledRequest req;
    const toml::node* mounts = nullptr; // read last: a mount may not take the workspace's place
    bool has_image = false, has_argv = false;
    const toml::node* kind_node = nullptr;
    using V = const toml::node&;
    using K = const std::string&;
    const std::vector<config::KeyReader> readers{
        {"id",
         [&](K key, V v) {
             req.turn_id = r.string(v, key);
             try {
                 turn::validate_turn_id(req.turn_id);
             } catch (const turn::RequestError& e) {
                 r.fail(v, key, e.what());
             }
         }},
        {"kind",
         [&](K key, V v) {
             auto kind = turn::parse_request_kind(r.string(v, key));
             if (!kind)
                 r.fail(v, key,
                        "must be \"turn\" (the default) or \"check\" (a project's own command, "
                        "without secrets)");
             req.kind = *kind;
             kind_node = &v;
         }},
        {"image",
         [&](K key, V v) {
             req.image = r.string(v, key);
             if (req.image.empty())
                 r.fail(v, key, "must not be empty; name the image the box runs");
             has_image = true;
         }},
        {"argv",
         [&](K key, V v) {
             req.argv = r.strings(v, key);
             if (req.argv.empty())
                 r.fail(v, key, "must not be empty; give the command to run in the box");
             has_argv = true;
         }},
        {"workdir", [&](K key, V v) { req.workdir = r.box_path(v, key); }},
        {"workspace", [&](K key, V v) { req.workspace = r.host_path(v, key, true); }},
        {"timeout",
         [&](K key, V v) {
             std::uint64_t ms = 0;
             if (!v.is_string())
                 r.fail(v, key,
                        v.is_integer()
                            ? fmt::format("must be a string, a duration such as \"90s\"; {} is a "
                                          "bare number (\"{}s\" says its unit)",
                                          v.as_integer()->get(), v.as_integer()->get())
                            : std::string("must be a string, a duration such as \"90s\""));
             if (auto bare = config::bare_number_problem(v.as_string()->get()); !bare.empty())
                 r.fail(v, key, bare);
             const std::string problem =
                 config::duration_problem(v.as_string()->get(), ms, 1, turn::kMaxTimeoutMs,
                                          "\"90s\", \"10m\" or \"1500ms\"");
             if (!problem.empty()) r.fail(v, key, problem);
             req.timeout_ms = ms;
         }},
        {"recordType",
         [&](K key, V v) {
             req.record_type = r.string(v, key);
             if (req.record_type.empty()) r.fail(v, key, "must not be empty");
         }},
        {"secrets",
         [&](K key, V v) {
             req.secrets = r.strings(v, key);
             std::set<std::string> seen;
             for (const auto& name : req.secrets)
                 if (!is_env_name(name) || !seen.insert(name).second)
                     r.fail(v, key,
                            fmt::format("'{}' must be a variable name matching "
                                        "[A-Za-z_][A-Za-z0-9_]*, named once",
                                        name));
         }},
        {"env", [&](K key, V v) { read_env(r, key, v, req); }},
        {"mode",
         [&](K key, V v) {
             req.mode = r.string(v, key);
             if (!turn::parse_workspace_mode(req.mode))
                 r.fail(v, key, "must be \"read-only\" or \"workspace-write\"");
         }},
        {"workspaceMount",
         [&](K key, V v) {
             req.workspace_mount = r.string(v, key);
             if (auto problem = turn::workspace_mount_problem(req.workspace_mount))
                 r.fail(v, key, *problem);
         }},
        {"mounts", [&](K, V v) { mounts = &v; }},
        {"session",
         [&](K key, V v) {
             req.session = r.string(v, key);
             if (req.session.empty())
                 r.fail(v, key, "must not be empty; name a session ('radiald session ls')");
         }},
        {"egress", [&](K key, V v) { req.egress = r.strings(v, key); }},
        {"offer", [&](K key, V v) { req.offer = r.strings(v, key); }},
    };
    config::read_keys(root, "", readers, {"a turn file", ""},
                      [&](K key, V v, const std::string& problem) { r.fail(v, key, problem); });
    if (!has_image && req.session.empty())
        r.missing("image", "name the image the box runs, e.g. image = \"radial/busybox:latest\"");
    if (!has_argv)
        r.missing("argv", "give the command to run, e.g. argv = [\"sh\", \"-c\", \"make\"]");
    const bool with_egress = turn::brokered(req);
    for (const auto& e : req.env) {
        const auto& at = *root["env"].as_table()->get(e.name);
        if (auto problem = turn::reserved_env_problem(e.name, with_egress))
            r.fail(at, "env." + e.name, *problem);
        for (const auto& s : req.secrets)
            if (s == e.name)
                r.fail(at, "env." + e.name,
                       "is also listed in secrets; a variable is either plain or secret");
    }
    for (const auto& s : req.secrets)
        if (auto problem = turn::reserved_env_problem(s, with_egress))
            r.fail(*root["secrets"].node(), "secrets", fmt::format("'{}' {}", s, *problem));
    if (req.kind == turn::RequestKind::check && !req.secrets.empty())
        r.fail(*root["secrets"].node(), "secrets",
               fmt::format("a check carries no secrets (kind = \"check\" at line {}), but this "
                           "one names '{}'; remove secrets, or make it a turn",
                           kind_node->source().begin.line, req.secrets.front()));
    if (mounts != nullptr) read_mounts(r, *mounts, req);
    // Where a workspace appears means nothing without one: more likely a workspace forgotten.
    if (!req.workspace_mount.empty() && req.workspace.empty() && req.session.empty())
        r.fail(*root["workspaceMount"].node(), "workspaceMount",
               "is set, but the turn has no workspace to mount; add workspace = \"DIR\", or "
               "remove workspaceMount");
    return req;
}

} // namespace radial::daemon
