#include "session/instance_fingerprints.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fs/durable_file.h"
#include "turn/turn_setup_error.h"

namespace radial::session {
namespace fs = std::filesystem;
using turn::TurnSetupError;

namespace {

constexpr const char* kKeyFile = "key";

// The directory, made root's 0700 when missing; never a link.
std::string ensure_dir(const std::string& state_dir) {
    const std::string dir = instance_fingerprints_dir(state_dir);
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
        throw TurnSetupError(fmt::format("creating '{}': {}", dir, std::strerror(errno)));
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw TurnSetupError(
            fmt::format("'{}' is not a directory radiald made; remove it (it is made anew)", dir));
    return dir;
}

std::optional<std::string> read_whole(const std::string& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// What names the key a value file was written under, without saying anything of the key.
std::string key_id(const std::string& key) { return keyed_mac(key, "radial fingerprint key id"); }

// The store's key; made when there is none yet and `make` (a writer: the first one's wins).
std::string key_of(const std::string& dir, bool make) {
    const std::string path = dir + "/" + kKeyFile;
    if (make && !read_whole(path)) fs_util::publish_file(dir, path, new_fingerprint_key(), 0600);
    auto key = read_whole(path);
    if (!key || key->size() != 64)
        throw TurnSetupError(
            fmt::format("'{}' is missing or not a key radiald wrote, so what '{}' keeps cannot be "
                        "matched; remove that directory (it is made anew) only if no workspace "
                        "holds a secret a turn was given, since what it kept is then forgotten",
                        path, dir));
    return *key;
}

bool is_value_file(const std::string& name) {
    return name.size() == 37 && name.ends_with(".json") &&
           std::all_of(name.begin(), name.begin() + 32,
                       [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

} // namespace

bool kept_in_store(const std::string& name, const std::string& value) {
    static constexpr std::string_view kOrdinary[] = {"PATH",
                                                     "HOME",
                                                     "SHELL",
                                                     "USER",
                                                     "LOGNAME",
                                                     "LANG",
                                                     "LANGUAGE",
                                                     "TERM",
                                                     "PWD",
                                                     "OLDPWD",
                                                     "SHLVL",
                                                     "HOSTNAME",
                                                     "TZ",
                                                     "MAIL",
                                                     "EDITOR",
                                                     "VISUAL",
                                                     "PAGER",
                                                     "DISPLAY",
                                                     "TMPDIR",
                                                     "JOURNAL_STREAM",
                                                     "NOTIFY_SOCKET",
                                                     "INVOCATION_ID",
                                                     "LISTEN_FDS",
                                                     "LISTEN_PID",
                                                     "MANAGERPID",
                                                     "SYSTEMD_EXEC_PID",
                                                     "CREDENTIALS_DIRECTORY",
                                                     "RUNTIME_DIRECTORY",
                                                     "STATE_DIRECTORY",
                                                     "CACHE_DIRECTORY",
                                                     "LOGS_DIRECTORY",
                                                     "CONFIGURATION_DIRECTORY",
                                                     "MEMORY_PRESSURE_WATCH",
                                                     "MEMORY_PRESSURE_WRITE",
                                                     "WATCHDOG_PID",
                                                     "WATCHDOG_USEC",
                                                     "DBUS_SESSION_BUS_ADDRESS",
                                                     "DBUS_SYSTEM_BUS_ADDRESS",
                                                     "SUDO_COMMAND",
                                                     "SUDO_USER",
                                                     "SUDO_UID",
                                                     "SUDO_GID",
                                                     "SSH_CONNECTION",
                                                     "SSH_CLIENT",
                                                     "SSH_TTY",
                                                     "SSH_AUTH_SOCK",
                                                     "LS_COLORS",
                                                     "LESSOPEN",
                                                     "LESSCLOSE",
                                                     "COLORTERM",
                                                     "_"};
    if (value.size() < 16) return false;
    if (name.starts_with("LC_") || name.starts_with("XDG_")) return false;
    return std::find(std::begin(kOrdinary), std::end(kOrdinary), name) == std::end(kOrdinary);
}

std::string instance_fingerprints_dir(const std::string& state_dir) {
    return state_dir + "/secret-fingerprints";
}

void remember_secrets(const std::string& state_dir, const redaction::SecretSet& secrets,
                      const std::string& skip) {
    const bool any = std::any_of(
        secrets.secrets().begin(), secrets.secrets().end(),
        [&](const auto& s) { return s.name != skip && kept_in_store(s.name, s.value); });
    if (!any) return;
    const std::string dir = ensure_dir(state_dir);
    try {
        const std::string key = key_of(dir, true);
        for (const auto& s : secrets.secrets()) {
            if (s.name == skip || !kept_in_store(s.name, s.value)) continue;
            const std::string path = fmt::format("{}/{}.json", dir, keyed_mac(key, s.value));
            struct stat st {};
            if (::lstat(path.c_str(), &st) == 0) continue; // kept by an earlier turn
            std::vector<SecretFingerprint> fps;
            add_fingerprints(redaction::SecretSet({s}, secrets.min_length()), key, fps);
            const nlohmann::json j = {{"keyId", key_id(key)},
                                      {"fingerprints", fingerprints_json(fps)}};
            fs_util::publish_file(dir, path, j.dump() + "\n", 0600); // false: a peer was first
        }
    } catch (const TurnSetupError&) {
        throw;
    } catch (const std::exception& e) {
        throw TurnSetupError(fmt::format(
            "keeping the fingerprints of the turn's secrets in '{}': {}", dir, e.what()));
    }
}

InstanceFingerprints load_instance_fingerprints(const std::string& state_dir) {
    InstanceFingerprints out;
    const std::string dir = instance_fingerprints_dir(state_dir);
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0) {
        if (errno == ENOENT) return out; // no turn was given a secret yet
        throw TurnSetupError(fmt::format("reading '{}': {}", dir, std::strerror(errno)));
    }
    if (!S_ISDIR(st.st_mode))
        throw TurnSetupError(fmt::format("'{}' is not a directory radiald made", dir));
    std::error_code ec;
    bool any = false;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const auto& e = *it;
        const std::string name = e.path().filename().string();
        if (!is_value_file(name)) continue;
        // A value file kept under a key that is gone would silently match nothing: refused.
        if (!any) out.key = key_of(dir, false);
        any = true;
        try {
            std::error_code type_ec;
            if (!e.is_regular_file(type_ec) || e.is_symlink(type_ec))
                throw std::runtime_error("not a regular file");
            const auto text = read_whole(e.path().string());
            if (!text) throw std::runtime_error(std::strerror(errno));
            const auto j = nlohmann::json::parse(*text);
            if (j.value("keyId", "") != key_id(out.key))
                throw std::runtime_error(
                    fmt::format("it was kept under another key than '{}/{}'", dir, kKeyFile));
            auto fps = fingerprints_from_json(j.at("fingerprints"));
            out.fingerprints.insert(out.fingerprints.end(), fps.begin(), fps.end());
        } catch (const std::exception& x) {
            throw TurnSetupError(fmt::format(
                "reading '{}': {}; every session's snapshots are barred until it is mended: "
                "remove the directory '{}' only if no workspace holds a secret a turn was given",
                e.path().string(), x.what(), dir));
        }
    }
    if (ec) throw TurnSetupError(fmt::format("listing '{}': {}", dir, ec.message()));
    return out;
}

} // namespace radial::session
