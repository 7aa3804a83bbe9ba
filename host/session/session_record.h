// host/session/session_record.h — what radiald keeps of a session (docs/design.md §13.12): the
// box it made, and everything a later turn of the session may not change (image, workspace, mode,
// the box's ids), in "<stateDir>/sessions/<id>.json".
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <radial/container_spec.hpp>
#include <string>
#include <vector>

#include "config/host_config.h"
#include "session/secret_fingerprints.h"
#include "turn/workspace_lock.h"

namespace radial::session {

// One turn the session ran, as its environment's manifest lists it (a snapshot's name digests
// these, docs/design.md §13.12): what ran, where, with what, and how it ended.
struct ManifestStep {
    std::string turn;
    std::vector<std::string> argv;
    std::string workdir;
    int exit_code = 0;
    // The exec's variables: "NAME=value", a secret's as "NAME" (its value is never kept);
    // radiald's own RADIAL_* variables, which differ from turn to turn, left out.
    std::vector<std::string> env;
    // What the exec could reach through its broker: its egress rules ("host:port", sorted) and
    // the ceiling's ranges and name map that decided where they led ("ceiling sha256:…"); empty
    // for an exec that had no egress. Two execs of one argv that fetched from different places
    // made different environments (docs/design.md §13.12).
    std::vector<std::string> egress;
    friend bool operator==(const ManifestStep&, const ManifestStep&) = default;
};

struct SessionRecord {
    std::string id;        // as a turn id: [a-z0-9-]
    std::string label;     // the box's: "radial-session-<instanceId>-<id>"
    std::string image;     // as given at create
    std::string workspace; // host directory, absolute; empty: none
    // "uid:gid" of the workspace directory at create, when radiald hands workspaces over (root):
    // a turn whose hand-back a killed radiald left finds the directory the box uid's, and gives
    // it back to this owner, not to the box (workspace_handover.h). Empty: none recorded.
    std::string workspace_owner;
    // turn::directory_identity of the workspace directory at create (workspace_identity): the box
    // has that directory for its life, so a later turn must find the same one at `workspace`
    // (check_session_workspace). Empty: none recorded (made before it was kept, or no workspace).
    std::string workspace_id;
    std::string mode;    // the workspace mode the box was made with
    std::string workdir; // where execs start; empty: the image's
    std::string user;    // "uid:gid" the box runs as (leased ids, box_id_lease.h)
    // The box user's name in HOME, USER, LOGNAME and the XDG directories every exec is given
    // (turn::box_user_variables): given per exec, not at the box's create, so that a snapshot's
    // image does not keep them (docs/design.md §13.12). Empty: none (the runtime gives the box no
    // host ids, or the record predates this and its box has them from its create).
    std::string box_user;
    std::string runtime; // the runtime whose box it is; empty: made before it was kept
    std::uint64_t idle_timeout_ms = 0;
    std::uint64_t max_lifetime_ms = 0;
    std::int64_t created_at_ms = 0; // Unix epoch
    // The wall clock's lead on the state directory's retention clock when created_at_ms was
    // stamped, and that boot's id (turn/retention_clock.h): within that boot a step of the wall
    // clock since moves the session's end neither way. -1: not kept (made before it was; the
    // lead at each look is taken whole).
    std::int64_t created_clock_lead_ms = -1;
    std::string created_boot_id;
    // Fixed at create: what the box was made from, pinned ("sha256:<hex>", the runtime's digest
    // of `image`); the snapshot it was made from ("" when none); its policy generation
    // (policy_generation()).
    std::string image_digest;
    std::string from_snapshot;
    std::string policy;
    // The turns it ran, in order.
    std::vector<ManifestStep> manifest;
    // A turn whose changes were not yet checked for its secrets (set before its exec, cleared
    // after the check): a radiald killed in between leaves it, and no snapshot is taken then.
    std::string unchecked_turn;
    // Why no snapshot of this session may be taken ("" while one may): a turn left a secret in
    // the box's file system, or its changes could not be checked.
    std::string no_snapshot_because;
    // The session's own random key, and the keyed fingerprints of every secret its turns were
    // given (secret_fingerprints.h), so that a later turn moving one into the box is caught.
    std::string scan_key;
    std::vector<SecretFingerprint> fingerprints;
};

// The manifest env of `exec` (ManifestStep::env), sorted.
std::vector<std::string> manifest_env(const ContainerSpec& exec);
// The manifest as the record and a snapshot's name hold it: [{turn, argv, workdir, exitCode,
// env}].
nlohmann::json manifest_json(const std::vector<ManifestStep>& steps);
// Its reverse. Throws nlohmann::json::exception for anything else.
std::vector<ManifestStep> manifest_from_json(const nlohmann::json& j);

// Why `session` cannot be run, snapshotted or removed through runtime `runtime_id`: its box is
// another runtime's, which this one neither lists nor can end (docs/design.md §13.12). nullopt when
// it is this runtime's, or its record predates the runtime's being kept.
std::optional<std::string> other_runtime(const SessionRecord& session, std::string_view runtime_id);

// "radial-session-<instanceId>-<id>".
std::string session_label(const config::HostConfig& cfg, const std::string& id);
// The prefix of every session box of this instance: "radial-session-<instanceId>-".
std::string session_label_prefix(const config::HostConfig& cfg);

// "<stateDir>/sessions".
std::string sessions_dir(const std::string& state_dir);
// Where a session's turn socket lives on the host, mounted at /run/radial in its box:
// "<stateDir>/sessions/<id>.run".
std::string session_socket_dir(const std::string& state_dir, const std::string& id);
// Where a session box's passwd and group live on the host (turn::BoxIdentity):
// "<stateDir>/sessions/<id>.identity" — not beside one-shot turns' under <stateDir>/identity,
// where a turn given the session's id as its turn id would rewrite and then remove them.
std::string session_identity_dir(const std::string& state_dir, const std::string& id);

// The directory a session's turn holds (flock) while it runs, so that one turn runs at a time:
// "<stateDir>/sessions/<id>.lock", never mounted into the box (which could hold a lock on what it
// sees). Made when missing.
std::string session_lock_dir(const std::string& state_dir, const std::string& id);

// One turn per session at a time (docs/design.md §13.12): the session's lock (its socket
// directory reclaimed while it is held), or null with why not in `refused` (another turn holds it,
// or the lock could not be taken).
std::unique_ptr<turn::WorkspaceLock> lock_session(const std::string& state_dir,
                                                  const std::string& id, std::string& refused);

// Makes the session's socket directory root's again, mode 0700 and empty, before a turn binds its
// socket there: a turn whose radiald was killed left it the box user's, who may have planted
// links where the bind and its chmod look. Needs root (else does nothing). Throws TurnSetupError
// naming the directory.
void reclaim_socket_dir(const std::string& state_dir, const std::string& id);

// Writes the record (mode 0600) where no record of that id exists. Throws TurnSetupError naming
// the path when it cannot, or when the id is taken.
void save_session(const std::string& state_dir, const SessionRecord& r);
// The session `id` of this state directory; nullopt when there is none. Throws TurnSetupError
// naming the file when it is not one radiald wrote.
std::optional<SessionRecord> load_session(const std::string& state_dir, const std::string& id);
// Every session of this state directory, by id. Unreadable records are skipped and logged.
std::vector<SessionRecord> list_sessions(const std::string& state_dir);
// The box labels of every session of `cfg`'s state directory: boxes whose ids stay leased while
// no radiald runs (box_id_lease.h), which reconciliation must not free. A record that cannot be
// read (now, or at all) counts by the label its id gives, so its ids stay leased.
std::vector<std::string> session_labels(const config::HostConfig& cfg);
// Writes the record over the one of its id (a reader sees the old or the new one). Throws
// TurnSetupError naming the path.
void update_session(const std::string& state_dir, const SessionRecord& r);
// Removes the record and the session's socket directory. Never throws; logs problems.
void remove_session(const std::string& state_dir, const std::string& id) noexcept;

} // namespace radial::session
