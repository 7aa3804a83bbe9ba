#include "session/session_turn.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <radial/host/session_client.hpp>

#include "config/box_identity.h"
#include "fs/open_no_links.h"
#include "log/logger.h"
#include "session/instance_fingerprints.h"
#include "session/secret_scan.h"
#include "session/snapshot_record.h"
#include "text/printable.h"
#include "turn/box_root.h"
#include "turn/box_user_env.h"
#include "turn/image_pin.h"
#include "turn/terminal_record.h"
#include "turn/turn_setup_error.h"
#include "turn/workspace_handover.h"

namespace radial::session {
namespace {

// Whether a turn's --workspace names the session's directory (create kept it resolved), by
// whatever path.
bool same_directory(const std::string& given, const std::string& kept) {
    if (kept.empty()) return false;
    std::error_code ec, kept_ec;
    const auto path = std::filesystem::weakly_canonical(std::filesystem::absolute(given, ec), ec);
    const auto session_path = std::filesystem::weakly_canonical(kept, kept_ec);
    return !ec && !kept_ec && path == session_path;
}

} // namespace

void bind_request_to_session(turn::TurnRequest& req, const SessionRecord& session,
                             const std::string& operator_mode) {
    if (req.kind != turn::RequestKind::turn)
        throw turn::RequestError(fmt::format(
            "a check does not run in a session (it needs no kept box, and would change what the "
            "session's later turns run on); run it without --session '{}'",
            session.id));
    // Judged against what the session's box got, not the text its record keeps: a turn that
    // restates it (the mode the config gave, the workspace by another path) is that turn.
    auto refuse = [&](const char* what, const std::string& shown) {
        throw turn::RequestError(fmt::format(
            "session '{}' was created with {} {}; a turn of it cannot change that (drop the {} "
            "from the turn, or create another session)",
            session.id, what, shown, what));
    };
    const auto quoted = [](const std::string& v) { return fmt::format("'{}'", v); };
    if (!req.image.empty() && req.image != session.image) refuse("image", quoted(session.image));
    req.image = session.image;
    if (!req.workspace.empty() && !same_directory(req.workspace, session.workspace))
        refuse("workspace", session.workspace.empty() ? "none" : quoted(session.workspace));
    req.workspace = session.workspace;
    // A session created without --mode keeps none: it has run.mode's, which its policy check
    // holds to what it was at create (check_session_policy).
    const std::string mode = session.mode.empty() ? operator_mode : session.mode;
    if (!req.mode.empty() && req.mode != mode) refuse("mode", quoted(mode));
    req.mode = mode;
    if (!req.mounts.empty() || !req.workspace_mount.empty())
        throw turn::RequestError(fmt::format(
            "session '{}' fixed its mounts at create; a turn of it cannot add any", session.id));
}

void check_session_policy(const SessionRecord& session, const ContainerSpec& spec,
                          const config::HostConfig& cfg, const std::string& runtime_id) {
    if (session.policy.empty()) return;
    const std::string now = policy_generation(spec, cfg, runtime_id, session.workspace,
                                              session.mode.empty() ? cfg.mode : session.mode);
    if (now == session.policy) return;
    throw turn::RequestError(fmt::format(
        "session '{}' was made under another policy than the config gives it now (run.network, "
        "run.memory, run.cpus, run.pidsLimit, run.user, run.homeSize, run.codexAuth, the "
        "workspace mode, the runtime or its table [{}] changed since), "
        "and its box keeps what it was made with; remove it ('radiald session rm {}') and "
        "create it again under this config (a running daemon applies the config it started "
        "with: restart it after changing the file)",
        session.id, cfg.runtime_section.section, session.id));
}

void check_session_image_pin(const SessionRecord& session, const config::HostConfig& cfg) {
    const auto pins = turn::pinned_digests(session.image, cfg);
    if (pins.empty() || std::find(pins.begin(), pins.end(), session.image_digest) != pins.end())
        return;
    throw turn::RequestError(fmt::format(
        "{}session '{}' runs image '{}' as {}, which run.allowedImages does not pin it to ({}); "
        "remove the session ('radiald session rm {}') and create it again from a pinned image, or "
        "have the operator pin this digest",
        cfg.where("run.allowedImages"), session.id, session.image,
        session.image_digest.empty() ? std::string("a digest never resolved")
                                     : session.image_digest,
        fmt::join(pins, ", "), session.id));
}

void check_session_box_ids(const SessionRecord& session, const config::HostConfig& cfg) {
    // Root in a namespace of its own leases nothing; run.user = "uid[:gid]" is the operator's.
    if (cfg.box_root || !config::uses_box_id_range(cfg)) return;
    const auto ids = turn::numeric_user(session.user);
    const auto outside = [&](std::uint64_t id) {
        return id < cfg.box_id_first || id > cfg.box_id_last;
    };
    // The first leased id outside the range: the gid always is leased, the uid too unless the box
    // runs as the workspace's owner; ids that are not numbers were never leased.
    std::string id;
    if (!ids)
        id = session.user;
    else if (outside(ids->second))
        id = std::to_string(ids->second);
    else if (cfg.user.empty() && outside(ids->first))
        id = std::to_string(ids->first);
    if (id.empty()) return;
    throw turn::RequestError(fmt::format(
        "session '{}' runs as {}, and id {} is outside {}run.boxIdRange ({}-{}) as the config "
        "gives it now: only ids inside it are checked against the host's accounts and "
        "processes; remove the session ('radiald session rm {}') and create it again, or "
        "give run.boxIdRange back the ids it was made with",
        session.id, session.user, id, cfg.where("run.boxIdRange"), cfg.box_id_first,
        cfg.box_id_last, session.id));
}

void make_session_exec(ContainerSpec& spec, const SessionRecord& session,
                       const std::string& workdir) {
    ContainerSpec exec;
    exec.label = session.label;
    exec.image = session.image; // for the record and the log: the box runs it already
    exec.argv = std::move(spec.argv);
    exec.env = std::move(spec.env);
    if (!session.box_user.empty())
        for (auto& v : turn::box_user_variables(exec.env, turn::kBoxHome, session.box_user))
            exec.env.push_back(std::move(v));
    // The request's own, as a one-shot turn's: a relative command must act where it was asked to.
    exec.workdir = workdir.empty() ? session.workdir : workdir;
    exec.timeout_ms = spec.timeout_ms;
    exec.user = session.user;
    spec = std::move(exec);
}

void check_session_lifetime(const SessionRecord& session,
                            std::chrono::system_clock::time_point now) {
    if (session.max_lifetime_ms == 0 || session.created_at_ms <= 0) return;
    const auto now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
    const std::uint64_t end_ms =
        static_cast<std::uint64_t>(session.created_at_ms) + session.max_lifetime_ms;
    // The box's own end (radial-init's) is timed from its start, which a restart of the box
    // (docker restart, an engine restart with a restart policy) sets again: the record's time
    // is the session's (docs/design.md §13.12).
    if (now_ms < 0 || static_cast<std::uint64_t>(now_ms) >= end_ms)
        throw turn::RequestError(fmt::format(
            "session '{}' is past its maximum lifetime ({} ms from its creation at {}); it runs "
            "no more turns. Remove it with 'radiald session rm {}' and create a new one",
            session.id, session.max_lifetime_ms, turn::format_timestamp_ms(session.created_at_ms),
            session.id));
}

std::string workspace_identity(const std::string& path) {
    const internal::UniqueFd fd = fs_util::open_no_links(path, O_RDONLY | O_DIRECTORY);
    return fd ? turn::directory_identity(fd.get()) : std::string();
}

void check_session_workspace(const SessionRecord& session) {
    if (session.workspace.empty() || session.workspace_id.empty()) return;
    if (workspace_identity(session.workspace) == session.workspace_id) return;
    throw turn::RequestError(fmt::format(
        "session '{}': its workspace '{}' is not the directory the session was created with (it "
        "was moved, replaced or is reached through a symbolic link since); the session's box "
        "still has the old one. Put the directory back, or remove the session with 'radiald "
        "session rm {}' and create a new one",
        session.id, session.workspace, session.id));
}

void begin_session_turn(const std::string& state_dir, const SessionRecord& loaded,
                        const std::string& turn_id) {
    const std::string& session_id = loaded.id;
    auto rec = load_session(state_dir, session_id);
    if (!rec)
        throw turn::TurnSetupError(
            fmt::format("session '{}' was removed while its turn started", session_id));
    if (rec->label != loaded.label || rec->created_at_ms != loaded.created_at_ms ||
        rec->workspace != loaded.workspace || rec->user != loaded.user)
        throw turn::TurnSetupError(
            fmt::format("session '{}' was removed and made again while this turn started; run "
                        "the turn again to run it in the new session",
                        session_id));
    // A turn still marked was cut short before its check: it stays unchecked for good.
    if (!rec->unchecked_turn.empty() && rec->no_snapshot_because.empty())
        rec->no_snapshot_because = fmt::format(
            "turn {} ran in it when its radiald ended, so what that turn left was never checked "
            "for its secrets",
            rec->unchecked_turn);
    rec->unchecked_turn = turn_id;
    update_session(state_dir, *rec);
}

void abandon_session_turn(const std::string& state_dir, const std::string& session_id,
                          const std::string& turn_id, turn::TerminalRecord& ran) noexcept {
    try {
        // `session ls` shows such a session as ended, and its id stays taken: a new session
        // comes after the old one's removal (docs/design.md §13.12).
        if (ran.session_box_gone)
            ran.error += fmt::format(
                ". Remove the session with 'radiald session rm {0}' (or 'radiald reconcile'), "
                "then create it again",
                session_id);
        auto rec = load_session(state_dir, session_id);
        if (!rec || rec->unchecked_turn != turn_id) return;
        rec->unchecked_turn.clear();
        update_session(state_dir, *rec);
    } catch (const std::exception& e) {
        log::warn("session", "session {}: turn {} ran nothing, but its mark stays: {}", session_id,
                  turn_id, e.what());
    }
}

namespace {

// Text the box chose (a path), fit for a log line and a terminal: control characters and bytes
// that are not UTF-8 escaped (text/printable.h), at most `max` bytes. Cut short, it ends with
// "…" after a whole character; with `at_word`, after a whole word when one ends in the last
// quarter (a reason is read, not matched).
std::string printable_path(const std::string& path, std::size_t max = 200, bool at_word = false) {
    std::string out = text::printable(path);
    if (out.size() <= max) return out;
    out.resize(text::utf8_prefix(out, max).size());
    if (const auto space = out.rfind(' ');
        at_word && space != std::string::npos && space >= max - max / 4)
        out.erase(space);
    while (at_word && !out.empty() &&
           std::string_view(",;:(").find(out.back()) != std::string_view::npos)
        out.pop_back();
    return out + "…";
}

// Why the turn's changes bar snapshots, or "" when they do not.
// `secret_found`: the reason is a secret found in the box, not a check that could not be done.
std::string check_changes(const host::RuntimeClient& client, const std::string& state_dir,
                          const SessionRecord& rec, const std::string& turn_id,
                          const redaction::Redactor& redactor, std::uint64_t since_ms,
                          const ScanBudget& budget, bool& secret_found) {
    const auto sessions = host::SessionClient::of(client);
    if (!sessions.has_snapshots()) return {};
    const std::string& label = rec.label;
    FingerprintMatcher earlier(rec.fingerprints, rec.scan_key);
    // What the state directory's other turns were given: a shared workspace or mount carries it.
    auto others = load_instance_fingerprints(state_dir);
    std::optional<FingerprintMatcher> elsewhere;
    if (!others.fingerprints.empty()) elsewhere.emplace(std::move(others.fingerprints), others.key);
    SecretScan scan(redactor, {&earlier, elsewhere ? &*elsewhere : nullptr});
    // Bounded: the session's lock (and a daemon's turn slot) is held meanwhile, and a box writes
    // faster than the scan reads (docs/design.md §13.12).
    const auto deadline = budget.clock.steady() + budget.most;
    bool out_of_time = false, stopped = false;
    const auto in_time = [&] {
        stopped = stopped || (budget.stop != nullptr && budget.stop->load());
        out_of_time = out_of_time || stopped ||
                      (budget.most.count() > 0 && budget.clock.steady() >= deadline);
        return !out_of_time;
    };
    host::SessionClient::ChangeHandler handler{
        [&](std::string_view path, std::uint32_t) { return in_time() && scan.entry(path); },
        [&](std::string_view bytes) { return in_time() && scan.data(bytes); }};
    try {
        sessions.changes(label, since_ms, handler);
    } catch (const host::RuntimeError& e) {
        if (e.code() != RADIAL_E_CANCELLED || (!scan.finish() && !out_of_time))
            return fmt::format("turn {}'s changes could not be checked for its secrets: {}",
                               turn_id, e.what());
    }
    if (stopped && !scan.finish())
        return fmt::format(
            "turn {}'s changes were not all checked for its secrets: the turn was stopped (an "
            "interrupt, or radiald stopping) while they were read ({} changed entries, {} bytes "
            "read)",
            turn_id, scan.entries(), scan.bytes());
    if (out_of_time && !scan.finish())
        return fmt::format(
            "turn {}'s changes could not be checked for its secrets within {} s (the turn's "
            "timeout, at least {} s, and {} s for a turn without one; {} changed entries, {} "
            "bytes read): the box wrote more than that time reads",
            turn_id, std::chrono::duration_cast<std::chrono::seconds>(budget.most).count(),
            std::chrono::duration_cast<std::chrono::seconds>(kLeastScanBudget).count(),
            std::chrono::duration_cast<std::chrono::seconds>(kScanBudgetWithoutTimeout).count(),
            scan.entries(), scan.bytes());
    if (const auto& found = scan.finish()) {
        secret_found = true;
        // The path is the box's: redacted (a secret may be in the name) and cut short.
        return fmt::format("turn {} left the value of secret {} in '{}'", turn_id, found->secret,
                           printable_path(redactor.redact(found->path)));
    }
    log::info("session", "turn {}: {} changed entries ({} bytes) hold none of its secrets", turn_id,
              scan.entries(), scan.bytes());
    return {};
}

} // namespace

std::uint64_t changes_window_start_ms(time::WallPoint wall_start, time::SteadyPoint steady_start,
                                      time::WallPoint wall_now, time::SteadyPoint steady_now) {
    using std::chrono::milliseconds;
    constexpr milliseconds kSlack{1000};
    const auto wall = std::chrono::duration_cast<milliseconds>(wall_now - wall_start);
    const auto steady = std::chrono::duration_cast<milliseconds>(steady_now - steady_start);
    if (wall - steady > kSlack || steady - wall > kSlack) return 0;
    const auto start = std::chrono::duration_cast<milliseconds>(wall_start.time_since_epoch());
    return start > kSlack ? static_cast<std::uint64_t>((start - kSlack).count()) : 0;
}

ScanBudget scan_budget(const time::Clock& clock, std::uint64_t timeout_ms,
                       const std::atomic<bool>* stop) {
    using std::chrono::milliseconds;
    return {clock,
            timeout_ms == 0 ? kScanBudgetWithoutTimeout
                            : std::max(kLeastScanBudget, milliseconds(timeout_ms)),
            stop};
}

void end_session_turn(const host::RuntimeClient& client, const std::string& state_dir,
                      const std::string& session_id, const std::string& turn_id,
                      const ContainerSpec& exec, const std::vector<std::string>& egress,
                      std::optional<std::int32_t> exit_code, std::string_view runtime_error,
                      const redaction::SecretSet& secrets, const redaction::Redactor& redactor,
                      std::uint64_t since_ms, const time::Clock& clock,
                      const std::atomic<bool>* stop) noexcept {
    try {
        auto rec = load_session(state_dir, session_id);
        if (!rec) return;
        if (rec->scan_key.empty()) rec->scan_key = new_fingerprint_key();
        std::string why;
        bool secret_found = false;
        try {
            // The exec's end unseen, what it may still write could never be checked.
            if (!runtime_error.empty())
                why = fmt::format(
                    "turn {}'s exec ended in an error of the runtime, so what it may still write "
                    "in the box cannot be checked for its secrets: {}",
                    turn_id, runtime_error);
            else
                why = check_changes(client, state_dir, *rec, turn_id, redactor, since_ms,
                                    scan_budget(clock, exec.timeout_ms, stop), secret_found);
        } catch (const std::exception& e) {
            why = fmt::format("turn {}'s changes could not be checked for its secrets: {}", turn_id,
                              e.what());
        }
        if (!why.empty()) {
            // A runtime's error may quote a path of the box, which may hold this turn's secret.
            why = printable_path(redactor.redact(why), 400, true);
            if (secret_found)
                why +=
                    "; keep secrets out of the box's own file system (/tmp, $HOME and the "
                    "workspace are mounts, which no snapshot keeps)";
            log::warn("session", "session {}: {}; it takes no snapshot", session_id, why);
            if (rec->no_snapshot_because.empty()) rec->no_snapshot_because = why;
        }
        // What this turn was given, for the checks of the session's later turns.
        try {
            add_fingerprints(secrets, rec->scan_key, rec->fingerprints);
        } catch (const std::exception& e) {
            if (rec->no_snapshot_because.empty())
                rec->no_snapshot_because =
                    fmt::format("turn {}'s secrets could not be remembered for later checks: {}",
                                turn_id, e.what());
        }
        // Redacted as the journal's copy of the turn is: an argv or a variable may quote a
        // secret, and the record, the snapshot's record and `session snapshots` outlive the turn.
        ManifestStep step{turn_id,
                          exec.argv,
                          redactor.redact(exec.workdir),
                          exit_code.value_or(-1),
                          manifest_env(exec),
                          egress};
        // Not the variables radiald gives every exec of the box (make_session_exec): the same for
        // every turn, they say nothing of this one.
        if (!rec->box_user.empty())
            for (const auto& v : turn::box_user_variables({}, turn::kBoxHome, rec->box_user))
                std::erase(step.env, v.name + "=" + v.value);
        for (auto& a : step.argv) a = redactor.redact(a);
        for (auto& e : step.env) e = redactor.redact(e);
        for (auto& e : step.egress) e = redactor.redact(e);
        rec->manifest.push_back(std::move(step));
        if (rec->unchecked_turn == turn_id) rec->unchecked_turn.clear();
        update_session(state_dir, *rec);
    } catch (const std::exception& e) {
        log::error("session", "session {}: recording turn {}: {}", session_id, turn_id, e.what());
    }
}

} // namespace radial::session
