#include "session/snapshot_record.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fs/durable_file.h"
#include "log/logger.h"
#include "turn/turn_request.h"
#include "turn/turn_setup_error.h"

namespace radial::session {
namespace fs = std::filesystem;
using turn::TurnSetupError;

namespace {

std::string sha256_hex(const std::string& bytes) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_Digest(bytes.data(), bytes.size(), md, &n, EVP_sha256(), nullptr) != 1)
        throw TurnSetupError("computing a SHA-256 digest: OpenSSL refused");
    std::string hex;
    for (unsigned int i = 0; i < n; ++i) hex += fmt::format("{:02x}", md[i]);
    return hex;
}

// Canonical: keys sorted (nlohmann's object is a std::map), no spaces; bytes that are not UTF-8
// are escaped as U+FFFD, so such an argv still names one content.
std::string canonical(const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool is_tag(const std::string& s) {
    return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

std::string snapshot_record_path(const std::string& state_dir, const std::string& tag) {
    return snapshots_dir(state_dir) + "/" + tag + ".json";
}

nlohmann::json to_json(const SnapshotRecord& r) {
    return {{"image", r.image},     {"tag", r.tag},
            {"digest", r.digest},   {"base", r.base},
            {"policy", r.policy},   {"manifest", manifest_json(r.manifest)},
            {"session", r.session}, {"createdAtMs", r.created_at_ms}};
}

SnapshotRecord snapshot_from_json(const nlohmann::json& j) {
    SnapshotRecord r;
    r.image = j.at("image").get<std::string>();
    r.tag = j.at("tag").get<std::string>();
    r.digest = j.at("digest").get<std::string>();
    r.base = j.at("base").get<std::string>();
    r.policy = j.at("policy").get<std::string>();
    r.manifest = manifest_from_json(j.at("manifest"));
    r.session = j.at("session").get<std::string>();
    r.created_at_ms = j.at("createdAtMs").get<std::int64_t>();
    return r;
}

} // namespace

std::string policy_generation(const ContainerSpec& spec, const config::HostConfig& cfg,
                              const std::string& runtime_id, const std::string& workspace,
                              const std::string& mode) {
    // The runtime's table as written: its keys (an OCI runtime, a writable layer's size) make the
    // box, and the host cannot tell which of a third party's keys do, so every one counts.
    nlohmann::json runtime_table = nlohmann::json::array();
    for (const auto& e : cfg.runtime_section.entries)
        runtime_table.push_back(
            {e.key, e.kind, e.string_value, e.int_value, e.float_value, e.items});
    nlohmann::json box_root = nullptr;
    if (cfg.box_root) box_root = {cfg.box_root->first, cfg.box_root->second};
    nlohmann::json targets = nlohmann::json::array();
    for (const auto& m : spec.mounts) targets.push_back({m.target, m.read_only});
    nlohmann::json tmpfs = nlohmann::json::array();
    for (const auto& t : spec.tmpfs) tmpfs.push_back({t.target, t.size_bytes});
    const nlohmann::json policy = {{"runtime", runtime_id},
                                   {"workspace", workspace},
                                   {"mode", mode},
                                   {"network", spec.network},
                                   {"memoryBytes", spec.memory_bytes},
                                   {"pidsLimit", spec.pids_limit},
                                   {"cpusMilli", spec.cpus_milli},
                                   {"readOnlyRootfs", static_cast<int>(spec.read_only_rootfs)},
                                   {"tmpfs", tmpfs},
                                   {"extraHosts", spec.extra_hosts},
                                   {"hostPorts", spec.host_ports},
                                   {"mountTargets", targets},
                                   {"user", cfg.user},
                                   {"homeBytes", cfg.home_size_bytes},
                                   {"codexAuth", cfg.codex_auth},
                                   {"boxRoot", box_root},
                                   {"runtimeSection", cfg.runtime_section.section},
                                   {"runtimeTable", runtime_table}};
    return "sha256:" + sha256_hex(canonical(policy));
}

std::vector<std::string> manifest_egress(const std::vector<std::string>& requested,
                                         const egress::EgressCeiling& ceiling) {
    if (requested.empty()) return {};
    std::vector<std::string> out;
    for (const auto& r : requested) {
        try {
            out.push_back(egress::parse_allow_rule(r).text());
        } catch (const std::exception&) {
            out.push_back(r); // never for a request that was checked; kept as it was named
        }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    // Not the allow patterns (the rules above are what this exec had of them) nor the quotas
    // (they bound, never redirect): what makes one name reach another server.
    nlohmann::json allow_ranges = nlohmann::json::array(), deny_ranges = nlohmann::json::array();
    for (const auto& a : ceiling.allow_ranges) allow_ranges.push_back(a.text());
    for (const auto& d : ceiling.deny_ranges) deny_ranges.push_back(d.text());
    out.push_back("ceiling sha256:" + sha256_hex(canonical({{"allowRanges", allow_ranges},
                                                            {"denyRanges", deny_ranges},
                                                            {"hosts", ceiling.hosts}})));
    return out;
}

std::string snapshot_tag(const std::string& base, const std::vector<ManifestStep>& manifest,
                         const std::string& policy) {
    // What ran, not which turn ran it: two sessions that ran the same commands from the same
    // base under the same policy name one environment.
    // A step without egress digests as it did before egress was kept, so no older snapshot's
    // name changes.
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& m : manifest) {
        steps.push_back(
            {{"argv", m.argv}, {"workdir", m.workdir}, {"exitCode", m.exit_code}, {"env", m.env}});
        if (!m.egress.empty()) steps.back()["egress"] = m.egress;
    }
    return sha256_hex(canonical({{"base", base}, {"manifest", steps}, {"policy", policy}}));
}

std::string snapshot_image(const config::HostConfig& cfg, const std::string& tag) {
    // An image repository is lower case [a-z0-9], separated by '.', '_' or '-'.
    std::string repo = "radial-snapshot-";
    for (char c : cfg.instance_id) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        repo += (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ? c : '-';
    }
    while (!repo.empty() && repo.back() == '-') repo.pop_back();
    return repo + ":" + tag;
}

std::string snapshots_dir(const std::string& state_dir) { return state_dir + "/snapshots"; }

void save_snapshot(const std::string& state_dir, const SnapshotRecord& r) {
    const std::string dir = snapshots_dir(state_dir);
    const std::string path = snapshot_record_path(state_dir, r.tag);
    try {
        fs::create_directories(dir);
        ::chmod(dir.c_str(), 0700);
        fs_util::replace_file(dir, path, canonical(to_json(r)) + "\n", 0600);
    } catch (const std::exception& e) {
        throw TurnSetupError(fmt::format("writing snapshot record '{}': {}", path, e.what()));
    }
}

std::optional<SnapshotRecord> find_snapshot(const std::string& state_dir, const std::string& name) {
    std::string tag = name;
    if (const auto colon = name.rfind(':'); colon != std::string::npos)
        tag = name.substr(colon + 1);
    if (!is_tag(tag))
        throw turn::RequestError(
            fmt::format("'{}' names no snapshot: give its tag (64 hex digits) or its image name "
                        "(radial-snapshot-…:<tag>); see 'radiald session snapshots'",
                        name));
    std::ifstream in(snapshot_record_path(state_dir, tag));
    if (!in) return std::nullopt;
    try {
        auto r = snapshot_from_json(nlohmann::json::parse(in));
        if (r.tag != tag) throw std::runtime_error("it names snapshot '" + r.tag + "'");
        if (name != tag && name != r.image) return std::nullopt;
        return r;
    } catch (const std::exception& e) {
        throw TurnSetupError(
            fmt::format("snapshot record '{}' is not one radiald wrote ({}); "
                        "remove it",
                        snapshot_record_path(state_dir, tag), e.what()));
    }
}

std::vector<SnapshotRecord> list_snapshots(const std::string& state_dir) {
    std::vector<SnapshotRecord> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(snapshots_dir(state_dir), ec)) {
        if (e.path().extension() != ".json" || !is_tag(e.path().stem().string())) continue;
        try {
            if (auto r = find_snapshot(state_dir, e.path().stem().string()))
                out.push_back(std::move(*r));
        } catch (const std::exception& x) {
            log::warn("session", "{}", x.what());
        }
    }
    std::sort(out.begin(), out.end(), [](const SnapshotRecord& a, const SnapshotRecord& b) {
        return std::tie(a.created_at_ms, a.tag) < std::tie(b.created_at_ms, b.tag);
    });
    return out;
}

void forget_snapshot(const std::string& state_dir, const std::string& tag) noexcept {
    std::error_code ec;
    fs::remove(snapshot_record_path(state_dir, tag), ec);
    if (ec)
        log::warn("session", "removing snapshot record '{}': {}",
                  snapshot_record_path(state_dir, tag), ec.message());
}

} // namespace radial::session
