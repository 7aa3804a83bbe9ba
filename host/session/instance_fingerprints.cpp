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

// The store's key; made when there is none yet (the first writer's wins).
std::string key_of(const std::string& dir) {
    const std::string path = dir + "/" + kKeyFile;
    if (!read_whole(path)) fs_util::publish_file(dir, path, new_fingerprint_key(), 0600);
    auto key = read_whole(path);
    if (!key || key->size() != 64)
        throw TurnSetupError(
            fmt::format("'{}' is not a key radiald wrote; remove the directory '{}' (it is made "
                        "anew, and what it kept is then forgotten)",
                        path, dir));
    return *key;
}

bool is_value_file(const std::string& name) {
    return name.size() == 37 && name.ends_with(".json") &&
           std::all_of(name.begin(), name.begin() + 32,
                       [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

} // namespace

std::string instance_fingerprints_dir(const std::string& state_dir) {
    return state_dir + "/secret-fingerprints";
}

void remember_secrets(const std::string& state_dir, const redaction::SecretSet& secrets,
                      const std::string& skip) {
    const bool any = std::any_of(secrets.secrets().begin(), secrets.secrets().end(),
                                 [&](const redaction::Secret& s) { return s.name != skip; });
    if (!any) return;
    const std::string dir = ensure_dir(state_dir);
    try {
        const std::string key = key_of(dir);
        for (const auto& s : secrets.secrets()) {
            if (s.name == skip) continue;
            const std::string path = fmt::format("{}/{}.json", dir, keyed_mac(key, s.value));
            struct stat st {};
            if (::lstat(path.c_str(), &st) == 0) continue; // kept by an earlier turn
            std::vector<SecretFingerprint> fps;
            add_fingerprints(redaction::SecretSet({s}, secrets.min_length()), key, fps);
            const nlohmann::json j = {{"fingerprints", fingerprints_json(fps)}};
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
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(dir, ec))) return out;
    out.key = key_of(dir);
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (!is_value_file(name)) continue;
        const auto text = read_whole(e.path().string());
        try {
            if (!text) throw std::runtime_error(std::strerror(errno));
            auto fps = fingerprints_from_json(nlohmann::json::parse(*text).at("fingerprints"));
            out.fingerprints.insert(out.fingerprints.end(), fps.begin(), fps.end());
        } catch (const std::exception& x) {
            throw TurnSetupError(fmt::format("reading '{}': {}", e.path().string(), x.what()));
        }
    }
    if (ec) throw TurnSetupError(fmt::format("listing '{}': {}", dir, ec.message()));
    return out;
}

} // namespace radial::session
