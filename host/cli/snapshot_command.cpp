// `radiald session snapshot | snapshots | snapshot-rm` (session_command.h, docs/design.md
// §13.12): a session's box committed to a content-addressed local image, listed and removed.
#include <fcntl.h>
#include <fmt/format.h>
#include <radial/internal/unique_fd.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <radial/host/session_client.hpp>
#include <stdexcept>

#include "cli/command_signals.h"
#include "cli/exit_status.h"
#include "cli/instance.h"
#include "cli/session_command.h"
#include "log/logger.h"
#include "session/session_events.h"
#include "session/session_record.h"
#include "session/snapshot_record.h"
#include "turn/terminal_record.h"
#include "turn/turn_request.h"
#include "turn/workspace_lock.h"

namespace radial::cli {

void add_snapshot_commands(CLI::App& session, SessionOptions& o, SessionCommands& out) {
    auto common = [&](CLI::App* c) {
        c->add_option("--config", o.config_file, "Config file (TOML)")->check(CLI::ExistingFile);
        c->add_option("--runtime", o.runtime, "Runtime id, overriding run.containerRuntime");
    };
    out.snapshot = session.add_subcommand(
        "snapshot", "Commit a session's box to a content-addressed local image; prints its name");
    common(out.snapshot);
    out.snapshot->add_option("id", o.id, "The session's id")->required();
    out.snapshots = session.add_subcommand("snapshots", "List this state directory's snapshots");
    common(out.snapshots);
    out.snapshots->add_flag("--json", o.json, "One JSON array instead of text");
    out.snapshot_rm = session.add_subcommand("snapshot-rm", "Remove a snapshot's image");
    common(out.snapshot_rm);
    out.snapshot_rm
        ->add_option("name", o.snapshot, "The snapshot's tag or image name (session snapshots)")
        ->required();
}

namespace {

// The intent `snap` and its image, if the engine made one, go when `undo` — unless the record is
// no longer this intent (another session of the same inputs completed it meanwhile). Otherwise (or
// then) it stays, incomplete and said, for `snapshot-rm` or the next `session snapshot`. A removal
// that fails leaves both. Returns whether nothing of the intent is left.
bool forget_intent(const host::SessionClient& sessions, const std::string& state_dir,
                   const session::SnapshotRecord& snap, bool undo) {
    try {
        const auto now = session::find_snapshot(state_dir, snap.tag);
        if (!now || !now->digest.empty()) return true; // gone, or completed by another session
        if (!undo || now->session != snap.session || now->created_at_ms != snap.created_at_ms) {
            log::warn("session",
                      "snapshot {} is left incomplete; take it again, or remove it with 'radiald "
                      "session snapshot-rm {}'",
                      snap.image, snap.tag);
            return false;
        }
        sessions.remove_snapshot(snap.image);
        session::forget_snapshot(state_dir, snap.tag);
        return true;
    } catch (const std::exception& e) {
        log::warn("session",
                  "snapshot {} may be left half made ({}); remove it with 'radiald session "
                  "snapshot-rm {}'",
                  snap.image, e.what(), snap.tag);
        return false;
    }
}

// After a commit the runtime refused outright (its status invalid, not found, unsupported or
// refused) the intent goes; after any other failure (unavailable, a deadline: the engine may still
// be committing) it stays (forget_intent).
void forget_failed_commit(const host::SessionClient& sessions, const std::string& state_dir,
                          const session::SnapshotRecord& snap, const std::exception& why) {
    const auto* refusal = dynamic_cast<const host::RuntimeError*>(&why);
    const bool refused =
        refusal != nullptr &&
        (refusal->code() == RADIAL_E_INVALID || refusal->code() == RADIAL_E_NOT_FOUND ||
         refusal->code() == RADIAL_E_UNSUPPORTED || refusal->code() == RADIAL_E_REFUSED);
    forget_intent(sessions, state_dir, snap, refused);
}

// One change of the state directory's snapshots at a time (an intent, its commit and its
// completion; a removal), held until the result goes: two sessions of the same inputs committing
// to one name at once left the record naming one image and the name another, and the loser's
// image in no record (docs/design.md §13.12). Waits for a holder. Throws std::runtime_error naming
// the directory when it cannot be opened or locked.
internal::UniqueFd lock_snapshots(const std::string& state_dir) {
    const std::string dir = session::snapshots_dir(state_dir);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    internal::UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
    int rc = fd ? ::flock(fd.get(), LOCK_EX) : -1;
    while (rc != 0 && errno == EINTR) rc = ::flock(fd.get(), LOCK_EX);
    if (rc != 0)
        throw std::runtime_error(
            fmt::format("locking the snapshots '{}': {}", dir, std::strerror(errno)));
    return fd;
}

// Why a snapshot of `rec`'s box may not be taken now by its size (run.maxSnapshotBytes, the free
// space of the engine's data root), or "" when it fits: asked before the intent and the commit, so
// that a refusal leaves nothing half made and the box as it was (docs/design.md §13.12). A file
// that costs the box nothing (a sparse file's holes) must not cost the engine's disk its size.
std::string too_big(const host::SessionClient& sessions, const session::SessionRecord& rec,
                    const config::HostConfig& cfg) {
    try {
        sessions.check_snapshot_size(rec.label, cfg.max_snapshot_bytes);
        return "";
    } catch (const host::RuntimeError& e) {
        if (e.code() == RADIAL_E_REFUSED)
            return fmt::format(
                "{} (run.maxSnapshotBytes = {}). Remove or shrink those files in a turn of the "
                "session, or raise run.maxSnapshotBytes (0: no bound)",
                e.what(), cfg.max_snapshot_bytes);
        if (e.code() != RADIAL_E_UNSUPPORTED) throw;
        if (cfg.max_snapshot_bytes == 0) return ""; // no bound asked for: nothing to tell
        return fmt::format(
            "{}, so run.maxSnapshotBytes = {} cannot be held; set run.maxSnapshotBytes = 0 to "
            "take snapshots of this runtime unbounded",
            e.what(), cfg.max_snapshot_bytes);
    }
}

} // namespace

int run_session_snapshot(const SessionOptions& o) {
    // A stop signal undoes a snapshot not yet recorded, as a refused commit does (docs/design.md
    // §13.12).
    std::optional<CommandSignals> signals;
    std::string left; // what an interrupted snapshot leaves, "" when nothing
    try {
        signals.emplace();
        auto instance = open_session_instance(o, "radiald session snapshot");
        const auto& cfg = instance->cfg();
        const auto sessions = host::SessionClient::of(instance->runtime());
        auto no_session = [&] {
            log::error("session",
                       "no session '{}' in state directory '{}'; see 'radiald session ls'", o.id,
                       cfg.state_dir);
            return kExitFailed;
        };
        if (!session::load_session(cfg.state_dir, o.id)) return no_session();
        // Waited for before the session's own lock, which its turns only try: a snapshot waiting
        // for another session's commit must not refuse this session's turns meanwhile.
        const auto snapshots_lock = lock_snapshots(cfg.state_dir);
        // Between turns only: the box's changes were checked up to here, and none come while the
        // engine commits.
        auto lock =
            turn::WorkspaceLock::try_acquire(session::session_lock_dir(cfg.state_dir, o.id));
        if (!lock) {
            log::error("session", "session '{}' is running a turn; snapshot it once the turn ended",
                       o.id);
            return kExitFailed;
        }
        // Loaded again under the lock: `session rm` may have removed it in between.
        auto rec = session::load_session(cfg.state_dir, o.id);
        if (!rec) return no_session();
        std::string refused;
        if (auto why = session::other_runtime(*rec, instance->runtime().info().id)) {
            log::error("session", "{}", *why);
            return kExitFailed;
        } else if (rec->image_digest.empty())
            refused = "it was created before radiald kept snapshots, or by a runtime without them";
        else if (!rec->unchecked_turn.empty())
            refused = fmt::format(
                "turn {} ran in it when its radiald ended, so what that turn "
                "left was never checked for its secrets",
                rec->unchecked_turn);
        else if (!rec->no_snapshot_because.empty())
            refused = rec->no_snapshot_because;
        if (!refused.empty()) {
            log::error("session",
                       "session '{}' takes no snapshot: {}. That holds for the session's whole "
                       "life: take the snapshot from a new session ('radiald session create')",
                       o.id, refused);
            return kExitFailed;
        }
        const std::string tag =
            session::snapshot_tag(rec->image_digest, rec->manifest, rec->policy);
        const std::string image = session::snapshot_image(cfg, tag);
        const auto existing = session::find_snapshot(cfg.state_dir, tag);
        // A record without a digest is an intent a radiald left when it ended mid-commit.
        bool complete = existing && !existing->digest.empty();
        // The engine's name was put on another image since: no session could be made from it.
        auto moved = [&](const std::string& now) {
            log::error("session",
                       "snapshot {} names image {} now, not the {} it was taken as (the name was "
                       "put on another image since); remove it with 'radiald session snapshot-rm "
                       "{}' and take it again",
                       image, now, existing->digest, existing->tag);
            return kExitFailed;
        };
        if (complete) {
            // Asked before any commit: the engine's name may have gone or moved since.
            std::string now;
            try {
                now = sessions.resolve_image(image);
            } catch (const host::RuntimeError& e) {
                if (e.code() != RADIAL_E_NOT_FOUND) throw;
            }
            if (now.empty()) {
                // Removed outside radiald (docker image rm): the same inputs, so taken again.
                log::warn("session",
                          "snapshot {}'s image is no longer on the engine (removed outside "
                          "radiald); taking it again",
                          image);
                complete = false;
            } else if (now != existing->digest) {
                return moved(now);
            }
        }
        if (const auto kept = existing ? 0 : session::list_snapshots(cfg.state_dir).size();
            kept >= cfg.max_snapshots && !existing) {
            if (cfg.max_snapshots == 0)
                log::error("session",
                           "{}snapshots are off in this state directory (run.maxSnapshots = 0); "
                           "raise run.maxSnapshots to take one",
                           cfg.where("run.maxSnapshots"));
            else
                log::error(
                    "session",
                    "state directory '{}' keeps {} snapshots already (run.maxSnapshots = {}); "
                    "remove one with 'radiald session snapshot-rm NAME', or raise "
                    "run.maxSnapshots",
                    cfg.state_dir, kept, cfg.max_snapshots);
            return kExitFailed;
        }
        if (!complete) {
            if (const auto why = too_big(sessions, *rec, cfg); !why.empty()) {
                log::error("session", "session '{}' takes no snapshot now: {}", o.id, why);
                return kExitFailed;
            }
        }
        session::SnapshotRecord snap;
        snap.image = image;
        snap.tag = tag;
        snap.base = rec->image_digest;
        snap.policy = rec->policy;
        snap.manifest = rec->manifest;
        snap.session = rec->id;
        // Real time: the commands run in a process of their own and take no clock
        // (docs/design.md §12.7).
        snap.created_at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
        // The intent before the commit (docs/design.md §13.12): a radiald that ends while the
        // engine commits leaves a record without a digest, which `snapshot-rm` names, never an
        // image no record names.
        stop_if_asked(*signals); // before the intent: nothing made
        if (!complete) session::save_snapshot(cfg.state_dir, snap);
        std::string digest;
        try {
            digest = sessions.snapshot(rec->label, image);
        } catch (const std::exception& e) {
            if (!complete) forget_failed_commit(sessions, cfg.state_dir, snap, e);
            throw;
        }
        // A signal during the commit is seen once it returned: the intent and its image go.
        if (const int signo = signals->stop_asked()) {
            if (complete)
                left = fmt::format("snapshot {} was taken before and is kept", image);
            else if (!forget_intent(sessions, cfg.state_dir, snap, true))
                left = fmt::format("snapshot {} is left incomplete", image);
            throw Interrupted(signo);
        }
        if (complete && digest != existing->digest) return moved(digest); // moved meanwhile
        if (complete) {
            // The same inputs named this image before: it keeps the record of its first making.
            session::journal_session_event(cfg.state_dir, rec->id, "snapshot-reused", image);
            log::info("session", "session {}: snapshot {} exists already (from session {})",
                      rec->id, image, existing->session);
        } else {
            snap.digest = digest;
            session::save_snapshot(cfg.state_dir, snap);
            session::journal_session_event(cfg.state_dir, rec->id, "snapshot", image);
            log::info("session", "session {}: snapshot {} ({})", rec->id, image, digest);
        }
        fmt::print("{}\n", image);
        return kExitOk;
    } catch (const Interrupted& e) {
        log::error("session", "{}: {}", e.what(),
                   left.empty() ? "no snapshot was taken; nothing is left" : left);
        return kExitInterrupted;
    } catch (const std::exception& e) {
        return report_error(e, CommandKind::other, "session");
    }
}

int run_session_snapshots(const SessionOptions& o) {
    try {
        // A reader of records: no lock, so it lists beside a daemon serving the state directory.
        const auto cfg = load_session_config(o);
        nlohmann::json out = nlohmann::json::array();
        for (const auto& s : session::list_snapshots(cfg.state_dir)) {
            if (o.json)
                out.push_back({{"image", s.image},
                               {"tag", s.tag},
                               {"digest", s.digest},
                               {"complete", !s.digest.empty()},
                               {"base", s.base},
                               {"policy", s.policy},
                               {"manifest", session::manifest_json(s.manifest)},
                               {"session", s.session},
                               {"createdAt", turn::format_timestamp_ms(s.created_at_ms)}});
            else
                fmt::print("{}  from session {}  {} turn(s)  created {}{}\n", s.image, s.session,
                           s.manifest.size(), turn::format_timestamp_ms(s.created_at_ms),
                           s.digest.empty() ? "  incomplete: being committed, or its commit "
                                              "ended without an answer; take it again or remove "
                                              "it with 'radiald session snapshot-rm'"
                                            : "");
        }
        if (o.json)
            fmt::print("{}\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
        return kExitOk;
    } catch (const std::exception& e) {
        return report_error(e, CommandKind::other, "session");
    }
}

namespace {

int remove_snapshot_now(const SessionOptions& o) {
    try {
        auto instance = open_session_instance(o, "radiald session snapshot-rm");
        const auto& cfg = instance->cfg();
        const auto snapshots_lock = lock_snapshots(cfg.state_dir);
        const auto snap = session::find_snapshot(cfg.state_dir, o.snapshot);
        if (!snap) {
            log::error("session",
                       "no snapshot '{}' in state directory '{}'; see 'radiald session snapshots'",
                       o.snapshot, cfg.state_dir);
            return kExitFailed;
        }
        host::SessionClient::of(instance->runtime()).remove_snapshot(snap->image);
        session::forget_snapshot(cfg.state_dir, snap->tag);
        fmt::print("removed snapshot {}\n", snap->image);
        return kExitOk;
    } catch (const std::exception& e) {
        return report_error(e, CommandKind::other, "session");
    }
}

} // namespace

int run_session_snapshot_rm(const SessionOptions& o) {
    // A stop signal lets the removal finish, then is said (docs/design.md §13.12).
    return finish_despite_signals(fmt::format("snapshot '{}' was being removed", o.snapshot),
                                  CommandKind::other, [&] { return remove_snapshot_now(o); });
}

} // namespace radial::cli
