// `radiald status` (docs/design.md §12.4): what the daemon of this state directory is doing —
// whether one holds it, its queued and running turns, and the most recent ones. Reads only: it
// creates no journal, no instance id and no lock.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/config_file.h"
#include "cli/daemon_commands.h"
#include "cli/exit_status.h"
#include "cli/runtime_setup.h"
#include "config/instance_id.h"
#include "daemon/metrics_snapshot.h"
#include "daemon/state_dir_lock.h"
#include "journal/journal_sqlite.h"
#include "log/logger.h"
#include "turn/terminal_record.h"
#include "turn/terminal_reserve.h"

namespace radial::cli {

namespace {

nlohmann::ordered_json turn_json(const journal::TurnSummary& t) {
    return {{"turnId", t.turn_id},
            {"kind", t.kind},
            {"state", std::string(journal::to_string(t.state))},
            {"status", t.status},
            {"records", t.record_count},
            {"createdAt", turn::format_timestamp_ms(t.created_at_ms)},
            {"updatedAt", turn::format_timestamp_ms(t.updated_at_ms)}};
}

// The daemon's metrics snapshot (daemon/metrics_snapshot.h, docs/design.md §12.6) with its age
// in seconds, or null when no daemon runs or the one that runs has not written one yet (the file
// is the previous daemon's).
nlohmann::ordered_json metrics_json(const config::HostConfig& cfg,
                                    const std::optional<daemon::StateDirLock::Holder>& holder,
                                    bool daemon_running) {
    if (!daemon_running) return nullptr;
    std::optional<nlohmann::ordered_json> snap;
    try {
        snap = daemon::read_metrics_snapshot(cfg.state_dir);
    } catch (const std::exception& e) {
        // The figures are extra: the daemon's state, read from the lock and the journal, stands.
        log::warn("status", "{}", e.what());
        return nullptr;
    }
    if (!snap || !snap->contains("pid") || !(*snap)["pid"].is_number_integer()) return nullptr;
    const auto pid = (*snap)["pid"].get<pid_t>();
    if (std::find(holder->pids.begin(), holder->pids.end(), pid) == holder->pids.end())
        return nullptr;
    // Real time: the commands run in a process of their own and take no clock (docs/design.md
    // §12.7).
    const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    const auto written = snap->value("writtenAtMs", std::int64_t{0});
    (*snap)["ageSeconds"] = std::max<std::int64_t>(0, now_ms - written) / 1000.0;
    return *snap;
}

// The sum of a family's values ("value", or "count" for a histogram) over its samples whose
// labels include `label` = `value` (any, when `label` is empty).
double total(const nlohmann::ordered_json& metrics, const char* family, const char* field = "value",
             const std::string& label = "", const std::string& value = "") {
    double sum = 0;
    if (!metrics.contains(family)) return sum;
    for (const auto& s : metrics[family])
        if (label.empty() || s["labels"].value(label, "") == value) sum += s.value(field, 0.0);
    return sum;
}

// A warm pool family's value for the class `labels` names (image and mode; and result).
double pool_figure(const nlohmann::ordered_json& metrics, const char* family,
                   const nlohmann::ordered_json& labels, const char* result = nullptr) {
    double sum = 0;
    if (!metrics.contains(family)) return sum;
    for (const auto& s : metrics[family]) {
        const auto& l = s["labels"];
        if (l.value("image", "") == labels.value("image", "") &&
            l.value("mode", "") == labels.value("mode", "") &&
            (result == nullptr || l.value("result", "") == result))
            sum += s.value("value", 0.0);
    }
    return sum;
}

void print_metrics(const nlohmann::ordered_json& snap) {
    if (snap.is_null()) return;
    const auto& m = snap["metrics"];
    fmt::print("metrics (as of {:.0f} s ago, {}):\n", snap["ageSeconds"].get<double>(),
               snap.value("writtenAt", ""));
    std::string ended;
    if (m.contains("radiald_turns_ended_total"))
        for (const auto& s : m["radiald_turns_ended_total"])
            ended +=
                fmt::format("{}{} {} {}", ended.empty() ? "" : ", ", s["labels"].value("kind", ""),
                            s["labels"].value("status", ""), s.value("value", 0.0));
    fmt::print("  turns ended: {}\n", ended.empty() ? "none" : ended);
    if (const double waiting = total(m, "radiald_turns_waiting_for_box_ids"); waiting > 0)
        fmt::print(
            "  {} queued turn(s) wait for a free id of run.boxIdRange (the daemon's log "
            "says what holds them)\n",
            waiting);
    fmt::print("  running {}, queued {}, refused {}, boxes reclaimed {}, journal errors {}\n",
               total(m, "radiald_turns_running"), total(m, "radiald_turns_queued"),
               total(m, "radiald_turns_refused_total"), total(m, "radiald_boxes_reclaimed_total"),
               total(m, "radiald_journal_errors_total"));
    std::string calls;
    if (m.contains("radiald_plugin_call_duration_seconds"))
        for (const auto& s : m["radiald_plugin_call_duration_seconds"]) {
            const double n = s.value("count", 0.0);
            if (n > 0)
                calls += fmt::format("{}{} {} (mean {:.3f} s)", calls.empty() ? "" : ", ",
                                     s["labels"].value("call", ""), n, s.value("sum", 0.0) / n);
        }
    fmt::print("  plugin calls: {}\n", calls.empty() ? "none yet" : calls);
    // The warm pool (docs/design.md §13.14), one line per class.
    if (m.contains("radiald_pool_boxes_target"))
        for (const auto& s : m["radiald_pool_boxes_target"]) {
            const auto& l = s["labels"];
            fmt::print("  pool {} ({}): {} idle of {}, {} hit(s), {} miss(es){}\n",
                       l.value("image", ""), l.value("mode", ""),
                       pool_figure(m, "radiald_pool_boxes_idle", l), s.value("value", 0.0),
                       pool_figure(m, "radiald_pool_claims_total", l, "hit"),
                       pool_figure(m, "radiald_pool_claims_total", l, "miss"),
                       pool_figure(m, "radiald_pool_create_failing", l) > 0
                           ? "; making its boxes fails (the daemon's log says why)"
                           : "");
        }
}

void print_turns(const std::string& title, const std::vector<journal::TurnSummary>& turns) {
    fmt::print("{} ({})\n", title, turns.size());
    if (turns.empty()) return;
    fmt::print("  {:<32} {:<5} {:<9} {:<10} {:>7}  {}\n", "TURN", "KIND", "STATE", "STATUS",
               "RECORDS", "UPDATED");
    for (const auto& t : turns)
        fmt::print("  {:<32} {:<5} {:<9} {:<10} {:>7}  {}\n", t.turn_id, t.kind,
                   journal::to_string(t.state), t.status.empty() ? "-" : t.status, t.record_count,
                   turn::format_timestamp_ms(t.updated_at_ms));
}

// Prints the status of `cfg`'s state directory and returns 0 when a daemon holds it, else
// kExitNotRunning; throws ConfigError (the instance id file),
// LockError or JournalError when it cannot tell.
int print_status(const DaemonOptions& o, const config::HostConfig& cfg) {
    const std::optional<std::string> instance =
        cfg.instance_id.empty() ? config::read_persisted_instance_id(cfg.state_dir)
                                : std::optional<std::string>(cfg.instance_id);
    // Everything status reports it must be able to read: a state directory it may not read is
    // "cannot tell", never "not running" with an empty list.
    const auto holder = daemon::StateDirLock::probe(cfg.state_dir);
    std::vector<journal::TurnSummary> queued, running, recent;
    std::string path = journal_path(cfg);
    std::error_code ec;
    const bool journal_exists = std::filesystem::exists(path, ec);
    if (ec) {
        log::error("status",
                   "cannot read the turn journal '{}': {}; run this as a user who may "
                   "read the state directory",
                   path, ec.message());
        return kExitFailed;
    }
    // Not running, and nothing ever ran there: most likely another --config was meant.
    if (!journal_exists && !std::filesystem::exists(cfg.state_dir, ec))
        log::warn("status",
                  "no state directory at '{}' (run.stateDir): no radiald has used it; name the "
                  "config the daemon runs with (--config)",
                  cfg.state_dir);
    else if (!journal_exists)
        log::warn("status", "no journal at '{}': no turn has run with this state directory", path);
    if (journal_exists) {
        auto journal = journal::open_sqlite_journal_for_reading(path);
        queued = journal->queued();
        running = journal->in_flight();
        recent = journal->recent_turns(o.limit);
    }
    bool daemon_running = holder && holder->exclusive;
    // A turn whose box is gone but whose terminal record waits for space in the journal is not
    // running: it ended, and how is known.
    std::vector<journal::TurnSummary> pending;
    for (auto it = running.begin(); it != running.end();) {
        if (auto p = turn::read_pending(cfg.state_dir, it->turn_id)) {
            it->status = p->status;
            pending.push_back(std::move(*it));
            it = running.erase(it);
        } else {
            ++it;
        }
    }

    if (o.json) {
        nlohmann::ordered_json j;
        j["stateDir"] = cfg.state_dir;
        j["instanceId"] =
            instance ? nlohmann::ordered_json(*instance) : nlohmann::ordered_json(nullptr);
        nlohmann::ordered_json d{{"running", daemon_running}};
        if (holder) {
            d["pids"] = holder->pids;
            if (!holder->command.empty()) d["command"] = holder->command;
        }
        j["daemon"] = d;
        j["metrics"] = metrics_json(cfg, holder, daemon_running);
        for (auto [key, list] : {std::pair{"queued", &queued},
                                 {"running", &running},
                                 {"pending", &pending},
                                 {"recent", &recent}}) {
            auto a = nlohmann::ordered_json::array();
            for (const auto& t : *list) a.push_back(turn_json(t));
            j[key] = a;
        }
        fmt::print("{}\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
        return daemon_running ? kExitOk : kExitNotRunning;
    }
    std::string pids;
    if (holder)
        for (pid_t p : holder->pids) pids += (pids.empty() ? "" : ", ") + std::to_string(p);
    if (daemon_running)
        fmt::print("daemon: running{}{}\n",
                   holder->command.empty() ? "" : " ('" + holder->command + "')",
                   pids.empty() ? "" : " pid " + pids);
    else
        fmt::print("daemon: not running{}\n",
                   holder ? " ('radiald turn' in use, pid " + pids + ")" : "");
    fmt::print("instance: {}\nstate directory: {}\n", instance.value_or("(none yet)"),
               cfg.state_dir);
    print_metrics(metrics_json(cfg, holder, daemon_running));
    print_turns("queued", queued);
    // Without a daemon, a live holder (`radiald turn`, `check`, a session command: shared holders
    // write no command) runs its own turn now; only with none at all is every unended turn a dead
    // radiald's, for the next start to reclaim.
    print_turns(daemon_running ? "running"
                : holder       ? "in flight (a live " +
                               (holder->command.empty()
                                    ? std::string("radiald turn, check or session command")
                                    : "'" + holder->command + "'") +
                               " runs its own; one a killed radiald left is reclaimed at the "
                               "next start)"
                         : "in flight (reclaimed at the next start)",
                running);
    if (!pending.empty())
        print_turns(
            "ended, terminal record not yet journaled (its workspace being handed back, or "
            "the journal could not take it yet)",
            pending);
    print_turns("recent", recent);
    // As `systemctl status` does: a script can ask whether the daemon runs by the exit status
    // alone (docs/design.md §14.4).
    return daemon_running ? kExitOk : kExitNotRunning;
}

} // namespace

int run_status_command(const DaemonOptions& o) {
    config::HostConfig cfg;
    try {
        cfg = load_config(o.config_file);
    } catch (const config::ConfigError& e) {
        return report_error(e, CommandKind::other, "status");
    }
    try {
        return print_status(o, cfg);
    } catch (const std::exception& e) {
        // Whatever status cannot read — the instance id file too, whose errors are ConfigErrors —
        // means it cannot tell: the command failed, 1, not a usage error (docs/design.md §14.4).
        log::error(error_component(e, "status"), "{}", e.what());
        return kExitFailed;
    }
}

} // namespace radial::cli
