#include "turn/box_user_env.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <pwd.h>
#include <radial/internal/unique_fd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "log/logger.h"
#include "turn/request_policy.h"
#include "turn/turn_setup_error.h"

namespace radial::turn {
namespace fs = std::filesystem;

namespace {

constexpr uid_t kNobody = 65534;

void write_file(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out)
        throw TurnSetupError(
            fmt::format("writing the box's identity file '{}' failed: {}; check run.stateDir",
                        path.string(), std::strerror(errno)));
    ::chmod(path.c_str(), 0644);
}

} // namespace

std::string box_passwd(uid_t uid, gid_t gid) {
    std::string out = "root:x:0:0:root:/root:/bin/sh\n";
    if (uid != kNobody) out += "nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n";
    out += fmt::format("{}:x:{}:{}:radial box user:{}:/bin/sh\n", kBoxUserName, uid, gid, kBoxHome);
    return out;
}

std::string box_group(gid_t gid) {
    std::string out = "root:x:0:\n";
    if (gid != kNobody) out += "nogroup:x:65534:\n";
    out += fmt::format("{}:x:{}:\n", kBoxUserName, gid);
    return out;
}

std::vector<EnvVar> box_user_variables(const std::vector<EnvVar>& request_env,
                                       const std::string& home, const std::string& user_name) {
    const std::pair<const char*, std::string> wanted[] = {
        {"HOME", home},
        {"USER", user_name},
        {"LOGNAME", user_name},
        {"XDG_CONFIG_HOME", home + "/.config"},
        {"XDG_CACHE_HOME", home + "/.cache"},
        {"XDG_DATA_HOME", home + "/.local/share"},
        {"XDG_STATE_HOME", home + "/.local/state"},
    };
    std::vector<EnvVar> out;
    for (const auto& [name, value] : wanted) {
        bool taken = false;
        for (const auto& e : request_env) taken = taken || e.name == name;
        if (!taken) out.push_back({name, value, false});
    }
    return out;
}

std::string codex_auth_path(const std::string& configured) {
    if (!configured.empty()) return configured;
    if (const char* codex_home = std::getenv("CODEX_HOME"); codex_home && *codex_home)
        return std::string(codex_home) + "/auth.json";
    std::string home;
    if (const char* h = std::getenv("HOME"); h && *h) {
        home = h;
    } else if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr && pw->pw_dir) {
        home = pw->pw_dir;
    }
    return home + "/.codex/auth.json";
}

std::vector<std::string> codex_auth_secrets(std::string_view contents, std::size_t min_length) {
    std::vector<std::string> out;
    auto keep = [&](const std::string& v) {
        if (v.size() >= min_length) out.push_back(v);
    };
    auto j = nlohmann::json::parse(contents, nullptr, false);
    if (!j.is_object()) {
        std::string_view t = contents;
        while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front())))
            t.remove_prefix(1);
        while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
        if (!t.empty()) keep(std::string(t));
        return out;
    }
    if (auto k = j.find("OPENAI_API_KEY"); k != j.end() && k->is_string())
        keep(k->get<std::string>());
    if (auto tokens = j.find("tokens"); tokens != j.end() && tokens->is_object())
        for (const auto& [name, value] : tokens->items())
            if (value.is_string()) keep(value.get<std::string>());
    return out;
}

std::string box_identity_dir(const std::string& state_dir, const std::string& turn_id) {
    return (fs::path(state_dir) / "identity" / turn_id).string();
}

BoxIdentity::BoxIdentity(const std::string& dir, uid_t uid, gid_t gid,
                         const std::optional<std::string>& codex_auth, bool namespaced_root)
    : dir_(dir), codex_(codex_auth.has_value()), namespaced_root_(namespaced_root) {
    const fs::path parent = fs::path(dir_).parent_path();
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec)
        throw TurnSetupError(fmt::format(
            "creating '{}' for the box's passwd and group failed: {}; check run.stateDir",
            parent.string(), ec.message()));
    // Nobody but radiald's user needs to look in: the engine mounts the files as root.
    ::chmod(parent.c_str(), 0700);
    // Made here, never taken over: a directory that exists is another box's of the same id (a
    // session's, a pool box's, a turn run twice), whose mounted files this one would rewrite and
    // then remove (docs/design.md §8.7).
    if (::mkdir(dir_.c_str(), 0700) != 0) {
        const int err = errno;
        throw TurnSetupError(
            err == EEXIST
                ? fmt::format("the box's identity directory '{}' exists already: another box of "
                              "the same id uses it; give this turn or session an id of its own",
                              dir_)
                : fmt::format("creating '{}' for the box's passwd and group failed: {}; check "
                              "run.stateDir",
                              dir_, std::strerror(err)));
    }
    if (!namespaced_root_) {
        write_file(fs::path(dir_) / "passwd", box_passwd(uid, gid));
        write_file(fs::path(dir_) / "group", box_group(gid));
    }
    if (!codex_auth) return;
    // Created 0600 and given to the box user before a byte is written: the credentials are never
    // readable by anyone else, not even for a moment.
    const fs::path codex = fs::path(dir_) / "codex";
    const fs::path file = codex / "auth.json";
    auto failed = [&](const fs::path& path, const char* step) {
        return TurnSetupError(fmt::format(
            "run.codexAuth: {} '{}' failed: {}{}", step, path.string(), std::strerror(errno),
            errno == EPERM ? " (giving it to the box user needs radiald to run as root)" : ""));
    };
    if (::mkdir(codex.c_str(), 0700) != 0) throw failed(codex, "creating");
    if (::chown(codex.c_str(), uid, gid) != 0) throw failed(codex, "giving the box user");
    internal::UniqueFd fd(
        ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd) throw failed(file, "creating");
    if (::fchown(fd.get(), uid, gid) != 0) throw failed(file, "giving the box user");
    for (std::string_view rest = *codex_auth; !rest.empty();) {
        const ssize_t n = ::write(fd.get(), rest.data(), rest.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw failed(file, "writing");
        rest.remove_prefix(static_cast<std::size_t>(n));
    }
}

BoxIdentity::~BoxIdentity() {
    if (kept_) return;
    std::error_code ec;
    fs::remove_all(dir_, ec);
    if (ec) log::warn("turn", "removing the box's identity files '{}': {}", dir_, ec.message());
}

void BoxIdentity::apply(ContainerSpec& spec, std::uint64_t home_bytes, bool with_variables) const {
    // The same targets a request is refused for (request_policy.h); a spec built elsewhere (a
    // session's) meets them here.
    for (const auto& target : reserved_box_targets()) {
        for (const auto& m : spec.mounts)
            if (m.target == target)
                throw TurnSetupError(fmt::format(
                    "a mount targets '{}', which radiald gives the box user (docs/design.md "
                    "§8.7); mount it elsewhere",
                    target));
        for (const auto& t : spec.tmpfs)
            if (t.target == target)
                throw TurnSetupError(fmt::format(
                    "a tmpfs targets '{}', which radiald gives the box user; use another path",
                    target));
    }
    if (!namespaced_root_) {
        spec.mounts.push_back({(fs::path(dir_) / "passwd").string(), "/etc/passwd", true});
        spec.mounts.push_back({(fs::path(dir_) / "group").string(), "/etc/group", true});
    }
    spec.tmpfs.push_back({kBoxHome, home_bytes});
    if (codex_)
        spec.mounts.push_back(
            {(fs::path(dir_) / "codex").string(), std::string(kBoxHome) + "/.codex", false});
    if (!with_variables) return;
    for (auto& v : box_user_variables(spec.env, kBoxHome, user_name()))
        spec.env.push_back(std::move(v));
}

} // namespace radial::turn
