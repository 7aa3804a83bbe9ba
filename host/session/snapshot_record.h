// host/session/snapshot_record.h — session snapshots as radiald names and keeps them
// (docs/design.md §13.12): a local image whose name is content-addressed, and what radiald
// recorded of it in "<stateDir>/snapshots/<tag>.json".
#pragma once

#include <cstdint>
#include <optional>
#include <radial/container_spec.hpp>
#include <string>
#include <vector>

#include "config/host_config.h"
#include "session/session_record.h"

namespace radial::session {

struct SnapshotRecord {
    std::string image;  // "radial-snapshot-<instance>:<tag>", the local image's name
    std::string tag;    // 64 hex digits: the content address
    std::string digest; // the runtime's digest of the committed image ("sha256:<hex>")
    std::string base;   // the digest the session's box was made from
    std::string policy; // the session's policy generation
    std::vector<ManifestStep> manifest;
    std::string session; // the session it was taken of
    std::int64_t created_at_ms = 0;
};

// The policy generation of a session's box: "sha256:<hex>" of what the host decided about it
// (runtime, the workspace it is bound to and its mode, and the spec's network, limits, rootfs,
// tmpfs, extra hosts, ports and mount targets; of `cfg`, what shapes the box beyond the spec:
// run.user, run.homeSize, run.codexAuth, the namespaced root's ids and the runtime's own table,
// such as [run.docker] ociRuntime), not of what names or feeds it (label, image, the leased user
// ids, env, other mount sources). The same policy gives the same generation. [thread-safe]
std::string policy_generation(const ContainerSpec& spec, const config::HostConfig& cfg,
                              const std::string& runtime_id, const std::string& workspace,
                              const std::string& mode);

// A manifest step's `egress`: the exec's rules as `requested` ("host:port", each parsed as the
// ceiling's rules are, sorted, once each) and "ceiling sha256:<hex>" of `ceiling`'s allowRanges,
// denyRanges and hosts, which decide where those names lead. Empty when `requested` is. A rule
// that does not parse (a request already checked has none) is kept as named. [thread-safe]
std::vector<std::string> manifest_egress(const std::vector<std::string>& requested,
                                         const egress::EgressCeiling& ceiling);

// The content address of a snapshot: the hex SHA-256 of {base, manifest (each step's argv,
// workdir, env, exit code and egress when it had any; not its turn id), policy}, canonical JSON.
// The same three give the same tag; a change in any one a new tag. [thread-safe]
std::string snapshot_tag(const std::string& base, const std::vector<ManifestStep>& manifest,
                         const std::string& policy);
// "radial-snapshot-<instanceId, lower case>:<tag>". [thread-safe]
std::string snapshot_image(const config::HostConfig& cfg, const std::string& tag);

// "<stateDir>/snapshots".
std::string snapshots_dir(const std::string& state_dir);
// Writes (or rewrites) the record of `r.tag`. Throws TurnSetupError naming the path.
void save_snapshot(const std::string& state_dir, const SnapshotRecord& r);
// The snapshot named `name` (its tag, or its image name) of this state directory; nullopt when
// there is none. Throws RequestError for a name that is neither.
std::optional<SnapshotRecord> find_snapshot(const std::string& state_dir, const std::string& name);
// Every snapshot of this state directory, oldest first. Unreadable records are skipped, logged.
std::vector<SnapshotRecord> list_snapshots(const std::string& state_dir);
// Removes the record of `tag`. Never throws; logs problems.
void forget_snapshot(const std::string& state_dir, const std::string& tag) noexcept;

} // namespace radial::session
