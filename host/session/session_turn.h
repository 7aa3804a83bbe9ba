// host/session/session_turn.h — a turn of a session (docs/design.md §13.12): what the session
// fixed at create, a turn's request may not change; the turn runs as an exec in the session's box.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <radial/container_spec.hpp>
#include <radial/host/runtime_client.hpp>

#include "config/host_config.h"
#include "redaction/stream_redactor.h"
#include "session/session_record.h"
#include "time/clock.h"
#include "turn/terminal_record.h"
#include "turn/turn_request.h"

namespace radial::session {

// Fills `req`'s image, workspace and mode from the session, and refuses (RequestError naming the
// field and the session's value) a request that sets any of them otherwise, or mounts, or a
// workspace mount: the session fixed them at create. A request restating them passes: the same
// directory by another path, or the mode the box got (the session's, else `operator_mode`,
// run.mode, for a record that kept none). A check is refused too: it carries no secrets and needs
// no kept box, and running one in a session would let a project's own command change what a later
// turn runs on.
void bind_request_to_session(turn::TurnRequest& req, const SessionRecord& session,
                             const std::string& operator_mode);

// Refuses (RequestError naming the session and what to do) a turn of a session whose box was made
// under another policy than the operator's config gives it now: `spec` is the bound request built
// under the current `cfg`, whose policy_generation (with `runtime_id` and the session's mode, or
// cfg.mode) must be the one recorded at create. The box keeps what it was made with (network,
// limits, rootfs, tmpfs, hosts, ports, mounts, user, OCI runtime), so a config tightened since
// would otherwise not reach it. A session whose record predates the policy passes.
void check_session_policy(const SessionRecord& session, const ContainerSpec& spec,
                          const config::HostConfig& cfg, const std::string& runtime_id);

// Throws turn::RequestError when run.allowedImages pins the session's image (as named at create)
// to digests none of which is the one its box was made from (docs/design.md §6.5): a digest the
// operator withdrew, or pinned only after the box was made, does not run on in a session made
// before, which lives as long as its limits allow.
void check_session_image_pin(const SessionRecord& session, const config::HostConfig& cfg);

// Refuses a turn in a session whose leased box ids lie outside run.boxIdRange as the config gives
// it now (the range changed since the session was made): only ids inside it were checked against
// the host's accounts and processes (config/box_identity.h), and a host process running as an id
// outside it could read the box's processes, its secrets among them (docs/design.md §8.7). Throws
// turn::RequestError naming the session, its ids, the range and `session rm`.
void check_session_box_ids(const SessionRecord& session, const config::HostConfig& cfg);

// Refuses a session turn past the session's maximum lifetime (SessionRecord::created_at_ms +
// max_lifetime_ms, by radiald's record, not the box's start: a restarted box starts again):
// throws turn::RequestError naming the session and `radiald session rm ID` when it passed at
// `now`. A session with no maximum lifetime (0) passes.
void check_session_lifetime(const SessionRecord& session,
                            std::chrono::system_clock::time_point now);

// turn::directory_identity of the directory at `path` (SessionRecord::workspace_id), opened
// without following a link anywhere on it; empty when it cannot be opened as one.
std::string workspace_identity(const std::string& path);

// Refuses a session turn whose workspace path no longer leads to the directory the session was
// made with (SessionRecord::workspace_id): moved or replaced since, or reached through a link.
// The session's box still has the old directory mounted, so the turn would not work where its
// request says, and the hand-over would give another tree to the box's ids (docs/design.md §3.9).
// Throws turn::RequestError naming the session, the path and `radiald session rm ID`. A record
// that kept no identity passes.
void check_session_workspace(const SessionRecord& session);

// The exec of a session turn: `spec` (built from the bound request) labelled as the session's box
// and run as its ids; what only a box's creation can apply (mounts, tmpfs, limits) is dropped, the
// box has it already; the box user's variables (SessionRecord::box_user) are added, those the
// request names aside. It starts in `workdir` (the request's, checked absolute by
// build_container_spec) when given, else in the session's.
void make_session_exec(ContainerSpec& spec, const SessionRecord& session,
                       const std::string& workdir);

// Before a session's turn runs its exec, under the session's lock: marks the turn unchecked in
// the session's record, so that a radiald killed before end_session_turn leaves a session that
// takes no snapshot. `loaded` is the record the turn was bound to before it took the lock: a
// session removed and made again under the same id meanwhile (another box, workspace, ids) is
// refused. Throws TurnSetupError naming the session, or the record when it cannot be written.
void begin_session_turn(const std::string& state_dir, const SessionRecord& loaded,
                        const std::string& turn_id);
// For a turn that ended before its exec was started (nothing of it ran in the box), still under
// the lock: clears the mark begin_session_turn set for `turn_id`, if it is still that turn's.
// When the runtime said the session's box had ended or was gone (ran.session_box_gone), adds to
// `ran.error` the fix that frees the session's id: the record keeps it until `radiald session rm`
// (or reconciliation) removes it. Never throws; logs what it could not do.
void abandon_session_turn(const std::string& state_dir, const std::string& session_id,
                          const std::string& turn_id, turn::TerminalRecord& ran) noexcept;

// Where the look at a turn's changes starts (`since_ms` of end_session_turn, Unix epoch ms): a
// second before the exec started by the wall clock, since an inode's change time is coarser than
// the clock. When the wall clock moved other than the steady clock did between the exec's start
// (`wall_start`, `steady_start`) and now, by more than that second (an NTP step, an operator's
// date), a change time says nothing about when a change was made: 0, every change the box ever
// made is looked at. Pure; thread-safe.
std::uint64_t changes_window_start_ms(time::WallPoint wall_start, time::SteadyPoint steady_start,
                                      time::WallPoint wall_now, time::SteadyPoint steady_now);

// After the exec, still under the lock: looks for the turn's secrets (`redactor`, compiled from
// `secrets`: their values and encodings) and those of the session's earlier turns (their
// fingerprints) in every entry the box changed since `since_ms` (the exec's start, Unix epoch
// ms), adds this turn's fingerprints, appends the turn to the session's manifest and clears the
// mark. A secret found, or changes that cannot be checked (or not within scan_budget by
// `clock`), bar the session's snapshots for good (no_snapshot_because names the
// turn, the secret and the path; never a value). So does a non-empty `runtime_error` (the turn's
// run ended in an error of the runtime): then the exec's end was not seen, it may still be
// writing, and its changes are not looked at. A runtime without snapshots is not asked.
// `egress` is the exec's manifest_egress (snapshot_record.h), kept in its manifest step.
// Never throws; logs what it could not do.
void end_session_turn(const host::RuntimeClient& client, const std::string& state_dir,
                      const std::string& session_id, const std::string& turn_id,
                      const ContainerSpec& exec, const std::vector<std::string>& egress,
                      std::optional<std::int32_t> exit_code, std::string_view runtime_error,
                      const redaction::SecretSet& secrets, const redaction::Redactor& redactor,
                      std::uint64_t since_ms, const time::Clock& clock,
                      const std::atomic<bool>* stop = nullptr) noexcept;

// How long the look at a turn's changes may take, by `clock`: the exec's timeout (`timeout_ms`,
// the turn's), at least kLeastScanBudget, and kScanBudgetWithoutTimeout for a turn without one;
// and no longer than until `*stop` (the turn interrupted, the daemon stopping) is true. Changes it
// could not read in that time bar the session's snapshots, as changes it could not read at all do.
inline constexpr std::chrono::milliseconds kLeastScanBudget{10'000};
inline constexpr std::chrono::milliseconds kScanBudgetWithoutTimeout{600'000};
struct ScanBudget {
    const time::Clock& clock;
    std::chrono::milliseconds most{0}; // 0: no bound (tests only)
    const std::atomic<bool>* stop = nullptr;
};
ScanBudget scan_budget(const time::Clock& clock, std::uint64_t timeout_ms,
                       const std::atomic<bool>* stop = nullptr);

} // namespace radial::session
