#include "turn/request_policy.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fnmatch.h>
#include <radial/internal/path_compare.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <memory>
#include <regex>

#include "daemon/instance_claim.h"
#include "fs/file_kind.h"
#include "fs/open_no_links.h"
#include "socket/box_socket.h"
#include "text/utf8.h"
#include "turn/box_user_env.h"
#include "turn/image_pin.h"
#include "turn/turn_egress.h"
#include "turn/turn_request.h"

namespace radial::turn {
namespace fs = std::filesystem;

namespace {

// Never mountable: the host's own trees. The engine's data roots hold every container's rootfs and
// volumes; mounting one hands the box every other box.
constexpr const char* kFixedProtected[] = {
    "/", "/proc", "/sys", "/dev", "/etc", "/boot", "/var/lib/docker", "/var/lib/containerd"};

// Box paths a mount may not cover: the kernel's views, the devices, and the turn socket.
constexpr const char* kProtectedTargets[] = {"/proc", "/sys", "/dev", "/run/radial"};

// Box paths radiald itself provides on every runtime that gives the box user a home (the box
// user's passwd and group, its home and managed Codex auth, docs/design.md §8.7): a mount there
// would be refused when the box is built, so it is refused with the request.
const std::vector<std::string> kReservedTargets = {"/etc/passwd", "/etc/group", kBoxHome,
                                                   std::string(kBoxHome) + "/.codex"};

// `path` as the kernel reaches it (a protected path that does not exist on this host still
// protects its name).
std::string resolved_or_normal(const std::string& path) { return internal::comparable_path(path); }

using internal::at_or_under;

std::string quoted_list(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& i : items) out += (out.empty() ? "'" : ", '") + i + "'";
    return out.empty() ? "none" : out;
}

} // namespace

namespace {

// A protected path and how a refusal names it.
struct ProtectedPath {
    std::string path; // as the kernel reaches it
    std::string what;
};

std::string env_or_empty(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? v : "";
}

// radiald's own control files: its config, its program and what it runs beside it, what its
// runtime's table names, the host-wide claims, the docker client's credentials in its
// environment and the operator's Codex credentials. A box given one (or a tree holding one) could
// change what radiald runs as root next, or use the host's credentials; such files are never
// mounted (docs/design.md §7.5). The runtime refuses its own too, but a warm pool's workspace is
// mounted by the host, which no runtime sees (docs/design.md §13.13).
std::vector<ProtectedPath> control_files(const config::HostConfig& cfg) {
    std::vector<ProtectedPath> out;
    if (!cfg.file.empty()) out.push_back({cfg.file, "radiald's config file"});
    for (const auto& d : cfg.plugin_dirs)
        out.push_back({d, "the plugin directory (run.pluginDir)"});
    if (std::unique_ptr<char, decltype(&std::free)> exe(::realpath("/proc/self/exe", nullptr),
                                                        &std::free);
        exe) {
        out.push_back({exe.get(), "radiald's own program"});
        // radial-init and radial-plugin-host, where an installed radiald keeps them.
        out.push_back({(fs::path(exe.get()).parent_path().parent_path() / "lib/radial").string(),
                       "radiald's helper programs"});
    }
    // Every host path the runtime's table names: its CLI, its box init, a unix:// engine.
    for (const auto& e : cfg.runtime_section.entries) {
        std::vector<std::string> values = e.items;
        values.push_back(e.string_value);
        for (std::string v : values) {
            if (v.rfind("unix://", 0) == 0) v.erase(0, 7);
            if (!v.empty() && v.front() == '/')
                out.push_back(
                    {v, fmt::format("what {}.{} names", cfg.runtime_section.section, e.key)});
        }
    }
    // The docker client's, as the docker CLI and the Engine API runtimes find them.
    const std::string home = env_or_empty("HOME"), docker_config = env_or_empty("DOCKER_CONFIG");
    if (!docker_config.empty() || !home.empty())
        out.push_back({docker_config.empty() ? home + "/.docker" : docker_config,
                       "the docker client's configuration ($DOCKER_CONFIG, else ~/.docker)"});
    if (const std::string certs = env_or_empty("DOCKER_CERT_PATH"); !certs.empty())
        out.push_back({certs, "the engine's TLS keys ($DOCKER_CERT_PATH)"});
    if (const std::string host = env_or_empty("DOCKER_HOST"); host.rfind("unix://", 0) == 0)
        out.push_back({host.substr(7), "the engine's socket ($DOCKER_HOST)"});
    out.push_back({daemon::default_claim_registry(), "the host's radiald instance claims"});
    if (cfg.codex_auth)
        out.push_back({codex_auth_path(cfg.codex_auth_file),
                       "the operator's Codex credentials (run.codexAuthFile)"});
    return out;
}

std::vector<ProtectedPath> protected_paths_named(const config::HostConfig& cfg) {
    std::vector<ProtectedPath> out;
    for (const char* p : kFixedProtected) out.push_back({p, "the protected host path"});
    if (!cfg.state_dir.empty())
        out.push_back({cfg.state_dir, "radiald's state directory (run.stateDir)"});
    for (const auto& p : cfg.other_state_dirs)
        out.push_back({p, "the state directory of another radiald on this host"});
    for (const auto& p : cfg.protected_paths) out.push_back({p, "the protected host path"});
    for (auto& c : control_files(cfg)) out.push_back(std::move(c));
    for (auto& p : out) p.path = resolved_or_normal(p.path);
    return out;
}

} // namespace

std::vector<std::string> protected_host_paths(const config::HostConfig& cfg) {
    std::vector<std::string> out;
    for (auto& p : protected_paths_named(cfg)) out.push_back(std::move(p.path));
    return out;
}

std::string moved_host_source(const std::string& resolved) {
    if (fs_util::open_no_links(resolved, O_PATH)) return {};
    if (errno == ELOOP)
        return fmt::format(
            "'{}' is reached through a symbolic link now, which it was not when the "
            "turn was checked",
            resolved);
    return fmt::format("'{}' cannot be reached as it was when the turn was checked: {}", resolved,
                       std::strerror(errno));
}

std::string checked_host_source(const std::string& key, const std::string& path, bool directory,
                                const config::HostConfig& cfg) {
    if (path.empty() || path.front() != '/')
        throw RequestError(fmt::format("{} '{}' must be an absolute host path", key, path));
    if (path.find('\0') != std::string::npos)
        throw RequestError(fmt::format("{} contains a NUL byte; no host path can", key));
    std::unique_ptr<char, decltype(&std::free)> real(::realpath(path.c_str(), nullptr), &std::free);
    if (!real) {
        int err = errno;
        throw RequestError(
            fmt::format("{} '{}' {}; create it before the turn runs", key, path,
                        err == ENOENT ? std::string("does not exist")
                                      : std::string("cannot be resolved: ") + std::strerror(err)));
    }
    std::string resolved(real.get());
    std::string shown = resolved == path
                            ? fmt::format("'{}'", path)
                            : fmt::format("'{}' (which resolves to '{}')", path, resolved);

    for (const auto& [p, what] : protected_paths_named(cfg)) {
        bool hit =
            p == "/" ? resolved == "/" : at_or_under(resolved, p) || at_or_under(p, resolved);
        if (!hit) continue;
        throw RequestError(
            fmt::format("{} {} is, lies under or contains {} '{}'; no request may mount it, "
                        "whatever run.workspaceRoots says",
                        key, shown, what, p));
    }

    struct stat st {};
    if (::stat(resolved.c_str(), &st) != 0)
        throw RequestError(
            fmt::format("{} {} cannot be read: {}", key, shown, std::strerror(errno)));
    if (directory && !S_ISDIR(st.st_mode))
        throw RequestError(fmt::format("{} {} is not a directory", key, shown));
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
        throw RequestError(
            fmt::format("{} {} is {}; a request may only mount regular files and directories", key,
                        shown, fs_util::file_kind(st.st_mode)));

    bool inside = false;
    for (const auto& root : cfg.workspace_roots)
        inside = inside || at_or_under(resolved, resolved_or_normal(root));
    if (!inside)
        throw RequestError(fmt::format(
            "{} {} is outside run.workspaceRoots ({}); move it under one of them, or have the "
            "operator add its directory to run.workspaceRoots",
            key, shown, quoted_list(cfg.workspace_roots)));
    if (resolved.find_first_of(":,") != std::string::npos)
        throw RequestError(fmt::format(
            "{} {} contains ':' or ',', which a runtime's mount syntax cannot carry; rename it",
            key, shown));
    return resolved;
}

std::string checked_box_target(const std::string& key, const std::string& target) {
    if (target.empty() || target.front() != '/')
        throw RequestError(fmt::format("{} '{}' must be an absolute path in the box", key, target));
    if (target.find_first_of(std::string(":,\0", 3)) != std::string::npos)
        throw RequestError(fmt::format(
            "{} '{}' contains ':', ',' or a NUL byte, which a runtime's mount syntax cannot "
            "carry; pick another path",
            key, target));
    std::string norm = fs::path(target).lexically_normal().string();
    if (norm.size() > 1 && norm.back() == '/') norm.pop_back();
    if (norm == "/")
        throw RequestError(
            fmt::format("{} '{}' would cover the box's whole file system; pick a "
                        "directory such as /data",
                        key, target));
    for (const char* p : kProtectedTargets)
        if (at_or_under(norm, p))
            throw RequestError(fmt::format(
                "{} '{}' is '{}', under {} in the box, which no mount may cover; pick another path",
                key, target, norm, p));
    for (const auto& p : kReservedTargets)
        if (norm == p)
            throw RequestError(fmt::format(
                "{} '{}' is '{}', which radiald gives the box user (docs/design.md §8.7); mount "
                "it elsewhere",
                key, target, norm));
    return norm;
}

const std::vector<std::string>& reserved_box_targets() { return kReservedTargets; }

std::optional<std::string> reserved_env_problem(std::string_view name, bool with_egress) {
    for (std::string_view always :
         {std::string_view(socket::kSocketEnv), std::string_view(socket::kTokenEnv),
          kEgressSocketEnv, kOfferPortsEnv})
        if (name == always)
            return std::string("is set by radiald for every turn; pick another name");
    if (!with_egress) return std::nullopt;
    auto is = [name](std::string_view n) { return n == name; };
    if (std::any_of(std::begin(kEgressProxyEnv), std::end(kEgressProxyEnv), is) ||
        std::any_of(std::begin(kEgressNoProxyEnv), std::end(kEgressNoProxyEnv), is))
        return std::string(
            "is set by radiald for a turn with egress: it leads the box's tools to the egress "
            "broker; drop it, or run the turn without egress");
    if (name == kEgressPortEnv)
        return std::string(
            "is read by radial-init for a turn with egress: its endpoint would leave the port "
            "the proxy variables name; drop it, or run the turn without egress");
    return std::nullopt;
}

bool valid_image_reference(const std::string& image) {
    // The reference grammar of github.com/distribution/reference, without IPv6 domains.
    static const std::regex kReference(
        R"(^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(?::[0-9]+)?/)?)"
        R"([a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)"
        R"((?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?)"
        R"((?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$)");
    if (image.empty() || image.size() > 512) return false;
    std::string name = image.substr(0, image.find_first_of("@"));
    if (auto colon = name.rfind(':');
        colon != std::string::npos && name.find('/', colon) == std::string::npos)
        name.resize(colon);
    if (name.size() > 255 || !std::regex_match(image, kReference)) return false;
    // A first component is a registry host only with a '.' or ':' in it, or as "localhost" (the
    // engine's normalisation); otherwise it is part of the repository name, which must be lower
    // case: "Radial/busybox" is refused by the engine, so it is refused here, with the request.
    if (const auto slash = image.find('/'); slash != std::string::npos) {
        const std::string first = image.substr(0, slash);
        if (first.find_first_of(".:") == std::string::npos && first != "localhost" &&
            first.find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") != std::string::npos)
            return false;
    }
    return true;
}

std::string check_image(const std::string& image, const config::HostConfig& cfg) {
    std::string checked = image;
    if (!image.empty() && image.front() == '/') {
        // A runtime whose image is a root filesystem directory (bubblewrap): a host path the box
        // sees, so it is held to the rules of a mount source.
        checked = checked_host_source("image", image, true, cfg);
    } else if (!valid_image_reference(image)) {
        throw RequestError(fmt::format(
            "image '{}' is not a valid image reference ([registry/]name[:tag][@digest], "
            "lower-case name); name an image such as radial/busybox:latest",
            image));
    }
    // A pinned entry admits the image by its pattern here; its digest is checked when the turn
    // starts (image_pin.h).
    for (const auto& entry : cfg.allowed_images)
        if (::fnmatch(split_allowed_image(entry).pattern.c_str(), image.c_str(), 0) == 0)
            return checked;
    throw RequestError(fmt::format(
        "image '{}' matches none of run.allowedImages ({}); use an allowed image, or have the "
        "operator add a pattern to run.allowedImages",
        image, quoted_list(cfg.allowed_images)));
}

void check_record_type(const std::string& type) {
    if (!internal::is_record_type(type))
        throw RequestError(fmt::format(
            "the record type '{}' (--record-type, recordType in a turn file) must be 1 to {} "
            "characters of A-Z, a-z, 0-9 and . _ : / - (the turn socket accepts no other record "
            "type)",
            type, kMaxRecordTypeBytes));
    // radiald's own records (radial.egress receipts, …) are told apart by their type alone: a
    // box whose turn could post one could forge them.
    if (type.starts_with("radial."))
        throw RequestError(fmt::format(
            "the record type '{}' (--record-type, recordType in a turn file): types starting "
            "with 'radial.' are radiald's own records; choose another",
            type));
}

void check_request_text(const TurnRequest& req) {
    auto check = [](const std::string& key, std::string_view text) {
        for (std::size_t i = 0; i < text.size();)
            if (!text::decode_utf8(text, i))
                throw RequestError(fmt::format(
                    "{} is not valid UTF-8 (byte {:#04x} at offset {}); the record, the journal "
                    "and the engine carry text only, so such bytes are refused rather than "
                    "altered: pass them through a file in the workspace",
                    key, static_cast<unsigned char>(text[i]), i));
    };
    check("image", req.image);
    check("workspace", req.workspace);
    check("workdir", req.workdir);
    check("session", req.session);
    check("recordType", req.record_type);
    for (std::size_t i = 0; i < req.argv.size(); ++i)
        check(fmt::format("argv[{}]", i), req.argv[i]);
    for (const auto& e : req.env) {
        // A secret's value is never quoted, only named (so is every value here).
        check("a variable's name", e.name);
        check(e.secret ? fmt::format("the value of secret {}", e.name) : "env." + e.name, e.value);
    }
    for (const auto& s : req.secrets) check("secrets", s);
    for (std::size_t i = 0; i < req.mounts.size(); ++i) {
        check(fmt::format("mounts[{}].source", i), req.mounts[i].source);
        check(fmt::format("mounts[{}].target", i), req.mounts[i].target);
    }
    for (const auto& e : req.egress) check("egress", e);
    for (const auto& o : req.offer) check("offer", o);
}

bool brokered(const TurnRequest& req) { return !req.egress.empty() || !req.offer.empty(); }

void check_exec_size(const TurnRequest& req) {
    long arg_max = ::sysconf(_SC_ARG_MAX);
    if (arg_max <= 0) arg_max = 131072;
    std::size_t limit = static_cast<std::size_t>(arg_max) > kArgReserveBytes
                            ? static_cast<std::size_t>(arg_max) - kArgReserveBytes
                            : static_cast<std::size_t>(arg_max) / 2;
    std::size_t total = 0;
    auto one = [&](const std::string& key, std::size_t bytes) {
        if (bytes > kMaxArgStringBytes)
            throw RequestError(fmt::format(
                "{} is {} bytes; the kernel refuses any single argument or environment entry over "
                "{} bytes (MAX_ARG_STRLEN); pass large input through the workspace",
                key, bytes, kMaxArgStringBytes));
        total += bytes + sizeof(char*);
    };
    for (std::size_t i = 0; i < req.argv.size(); ++i) {
        std::string key = fmt::format("argv[{}]", i);
        if (req.argv[i].find('\0') != std::string::npos)
            throw RequestError(fmt::format(
                "{} contains a NUL byte, which no command line can carry; remove it", key));
        one(key, req.argv[i].size() + 1);
    }
    for (const auto& e : req.env) {
        std::string key = "env." + e.name;
        if (e.value.find('\0') != std::string::npos || e.name.find('\0') != std::string::npos)
            throw RequestError(fmt::format(
                "{} contains a NUL byte, which no environment can carry; remove it", key));
        one(key, e.name.size() + e.value.size() + 2);
    }
    if (total > limit)
        throw RequestError(fmt::format(
            "argv and env together are {} bytes; one exec may carry at most {} (the kernel's "
            "ARG_MAX of {} bytes, less {} kept for the runtime's own options); pass large input "
            "through the workspace",
            total, limit, arg_max, kArgReserveBytes));
}

} // namespace radial::turn
