#include "cli/instance.h"

#include <exception>
#include <filesystem>
#include <future>
#include <optional>
#include <string_view>
#include <utility>

#include "cli/runtime_setup.h"
#include "config/box_identity.h"
#include "config/instance_id.h"
#include "egress/operator_policy.h"
#include "fs/durable_file.h"
#include "journal/journal_sqlite.h"
#include "log/logger.h"
#include "session/instance_fingerprints.h"
#include "session/session_record.h"
#include "session/snapshot_record.h"
#include "turn/handover_recovery.h"
#include "turn/workspace_handover.h"

namespace radial::cli {
namespace {

// The steps that run beside others run on threads of their own, or, where no thread can be had (a
// pid or thread limit), on the caller's when awaited: libstdc++ falls back to deferred on EAGAIN
// when both are allowed. Each keeps its failure rather than throw it, so that open() reports
// failures in the order of its steps.
constexpr std::launch kBeside = std::launch::async | std::launch::deferred;

// The box-id range check's processes half (every process's status in /proc).
std::exception_ptr range_refusal(const config::HostConfig& cfg) {
    try {
        config::check_box_id_range_processes(cfg);
        return nullptr;
    } catch (...) {
        return std::current_exception();
    }
}

// The journal as it is: none when it would have to be created or migrated, which waits for the
// verdicts of the steps before it.
std::pair<std::unique_ptr<journal::Journal>, std::exception_ptr> open_journal_unchanged(
    const config::HostConfig& cfg) {
    try {
        return {journal::open_sqlite_journal_unchanged(journal_path(cfg)), nullptr};
    } catch (...) {
        return {nullptr, std::current_exception()};
    }
}

// What a killed radiald left under the state directory: the temporary files of the records
// publish_file and replace_file write there (by their names: nothing else is touched), and the
// ceilings of egress brokers (egress/operator_policy.h), none of which runs while the state
// directory is held exclusively.
void remove_abandoned_writes(const config::HostConfig& cfg) {
    std::size_t removed =
        fs_util::remove_abandoned_temp_files(cfg.state_dir, [](std::string_view name) {
            return name == "retention-clock" || name == "metrics.json" ||
                   name == "workspace-roots.json" || name == config::kInstanceIdFile;
        });
    for (const auto& dir :
         {session::sessions_dir(cfg.state_dir), session::snapshots_dir(cfg.state_dir),
          session::instance_fingerprints_dir(cfg.state_dir)})
        removed += fs_util::remove_abandoned_temp_files(
            dir, [](std::string_view name) { return name.ends_with(".json") || name == "key"; });
    std::error_code ec;
    for (const auto& e :
         std::filesystem::directory_iterator(egress::broker_ceilings_dir(cfg.state_dir), ec))
        if (e.path().extension() == ".json" && std::filesystem::remove(e.path(), ec)) ++removed;
    if (removed > 0)
        log::info("state",
                  "removed {} file(s) under '{}' that a killed radiald left (temporary files "
                  "of its records, egress brokers' ceilings)",
                  removed, cfg.state_dir);
}

} // namespace

std::unique_ptr<Instance> Instance::open(config::HostConfig cfg, const InstanceUse& use) {
    if (use.runs_turns) check_socket_paths_fit(cfg);
    // The accounts half here: NSS must not load its modules beside the plugins' loading.
    config::check_box_id_range_accounts(cfg);
    auto range_checked = std::async(kBeside, range_refusal, std::cref(cfg));
    auto range_refusal_first = [&range_checked] {
        if (!range_checked.valid()) return; // already awaited
        if (auto refused = range_checked.get()) std::rethrow_exception(refused);
    };
    try {
        auto lock = daemon::StateDirLock::acquire(cfg.state_dir, use.lock, use.who);
        auto claim = daemon::InstanceClaim::acquire(daemon::default_claim_registry(),
                                                    cfg.instance_id, cfg.state_dir);
        cfg.other_state_dirs = daemon::claimed_state_dirs(daemon::default_claim_registry());

        auto journal_opened = std::async(kBeside, open_journal_unchanged, std::cref(cfg));
        std::optional<CheckedRuntime> checked;
        std::exception_ptr runtime_failed;
        try {
            checked.emplace(open_checked_runtime(cfg));
        } catch (...) {
            runtime_failed = std::current_exception();
        }
        auto [journal, journal_failed] = journal_opened.get();
        range_refusal_first();
        if (runtime_failed) std::rethrow_exception(runtime_failed);
        if (journal_failed) std::rethrow_exception(journal_failed);
        if (!journal) journal = journal::open_sqlite_journal(journal_path(cfg));
        cfg.box_root = checked->box_root.ids;
        cfg.runtimes_found = checked->installed;
        // The instance's owner (a daemon, a reconcile) clears what a writer killed mid-write
        // left: it would stay for good, unread (fs/durable_file.h).
        if (use.lock == daemon::StateDirLock::Mode::exclusive) remove_abandoned_writes(cfg);
        // Once the journal and the runtime can say whether a note's box still writes.
        if (use.recover_handovers)
            turn::WorkspaceHandover::recover(turn::handover_marker_dir(cfg.state_dir),
                                             turn::box_may_write(checked->client, *journal));
        return std::unique_ptr<Instance>(new Instance(
            std::move(cfg), std::move(lock), std::move(claim), std::move(checked->client),
            std::move(checked->transport), std::move(journal)));
    } catch (...) {
        range_refusal_first();
        throw;
    }
}

Instance::Instance(config::HostConfig cfg, daemon::StateDirLock lock, daemon::InstanceClaim claim,
                   host::RuntimeClient client, turn::ResolvedTransport transport,
                   std::unique_ptr<journal::Journal> journal)
    : cfg_(std::move(cfg)),
      lock_(std::move(lock)),
      claim_(std::move(claim)),
      client_(std::move(client)),
      transport_(std::move(transport)),
      journal_(std::move(journal)) {}

Instance::~Instance() = default;

} // namespace radial::cli
