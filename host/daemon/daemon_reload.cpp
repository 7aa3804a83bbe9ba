// The daemon's answers to signals besides a stop (daemon.h): SIGHUP reloads the reloadable keys
// (docs/design.md §12.3, config_reload.h), the others are logged and ignored.
#include <fmt/format.h>

#include <csignal>
#include <string>

#include "config/pool_keys.h"
#include "daemon/config_reload.h"
#include "daemon/daemon.h"
#include "daemon/signal_watch.h"
#include "log/logger.h"

namespace radial::daemon {

void Daemon::ignore_signal(int signo) {
    // SIGHUP is ignored only while stopping: a reload then would change nothing that runs.
    log::info("daemon", "{} received: ignored{}", signal_name(signo),
              signo == SIGHUP ? " (stopping)" : " (radiald gives it no meaning)");
}

void Daemon::apply_log_level(const std::string& level) {
    const auto from = log::parse_level(log_level_), to = log::parse_level(level);
    const std::string line =
        fmt::format("reload (SIGHUP): run.logLevel changed from {} to {}{}", log_level_, level,
                    settings_.verbose ? " (--verbose keeps debug lines on until a restart)" : "");
    log_level_ = level;
    if (settings_.verbose || !to) {
        log::info("daemon", "{}", line);
        return;
    }
    // Said at the more verbose of the two levels, so the line itself is not dropped.
    if (from && *to < *from) log::set_min_level(*to);
    log::info("daemon", "{}", line);
    log::set_min_level(*to);
}

void Daemon::reload() {
    reload_pending_ = false;
    if (!settings_.reload_config) {
        log::info("daemon", "SIGHUP received: nothing to reload");
        return;
    }
    ReloadedConfig next;
    std::vector<ConfigChange> changes;
    try {
        next = settings_.reload_config();
        changes = changed_keys(settings_.config_text, next.text);
    } catch (const std::exception& e) {
        log::error("daemon", "reload (SIGHUP): {}; keeping the running config", e.what());
        return;
    }
    const std::string file = next.cfg.file.empty() ? "(no config file)" : next.cfg.file;
    std::size_t applied = 0, waiting = 0, refused = 0;
    // The keys that need a restart are compared with the file the daemon started with (what it
    // runs); the reloadable ones with the values it runs now, so that an edit back to an earlier
    // value is applied too, not taken for no change against the starting file.
    // A runtime's own table is checked by the runtime alone, which the reload does not ask
    // (it loads and creates nothing): said, so that a restart is not the first to refuse it.
    const std::string runtime_table = "run." + cfg_.container_runtime;
    for (const auto& c : changes) {
        if (c.reloadable) continue;
        ++waiting;
        const bool runtimes = c.key == runtime_table || c.key.starts_with(runtime_table + ".");
        log::warn("daemon",
                  "reload (SIGHUP): {} changed in '{}' but needs a restart to take effect "
                  "(systemctl restart radiald){}",
                  c.key, file,
                  runtimes ? fmt::format("; only the runtime checks it, then: 'radiald config "
                                         "check --config {}' checks it now",
                                         file)
                           : std::string());
    }
    // The pool's ids are checked with the turns they leave room for, as at startup: more turns
    // than the range holds beside the pool fail for want of an id (pool_keys.h).
    config::HostConfig with_turns = cfg_;
    with_turns.max_concurrent_turns = next.cfg.max_concurrent_turns;
    if (auto why = cfg_.box_root ? std::nullopt : config::pool_id_shortfall(with_turns);
        why && next.cfg.max_concurrent_turns > max_concurrent_turns_) {
        ++refused;
        log::error("daemon", "reload (SIGHUP): run.maxConcurrentTurns {} is refused, {} kept: {}",
                   next.cfg.max_concurrent_turns, max_concurrent_turns_, *why);
    } else if (next.cfg.max_concurrent_turns != max_concurrent_turns_) {
        ++applied;
        log::info("daemon", "reload (SIGHUP): run.maxConcurrentTurns changed from {} to {}",
                  max_concurrent_turns_, next.cfg.max_concurrent_turns);
        max_concurrent_turns_ = next.cfg.max_concurrent_turns;
        if (auto short_of = cfg_.box_root ? std::nullopt : config::turn_id_shortfall(with_turns))
            log::warn("daemon", "reload (SIGHUP): {}", *short_of);
    }
    if (next.cfg.shutdown_grace_ms != shutdown_grace_ms_) {
        ++applied;
        log::info("daemon", "reload (SIGHUP): run.shutdownGrace changed from {} ms to {} ms",
                  shutdown_grace_ms_, next.cfg.shutdown_grace_ms);
        shutdown_grace_ms_ = next.cfg.shutdown_grace_ms;
    }
    if (next.cfg.log_level != log_level_) {
        ++applied;
        apply_log_level(next.cfg.log_level);
    }
    if (applied == 0 && waiting == 0 && refused == 0)
        log::info("daemon", "reload (SIGHUP): nothing changed in '{}'", file);
    else
        log::info("daemon", "reload (SIGHUP): {} key(s) applied, {}{} waiting for a restart",
                  applied, refused > 0 ? fmt::format("{} refused, ", refused) : std::string(),
                  waiting);
}

} // namespace radial::daemon
