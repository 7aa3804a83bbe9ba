#include "cli/exit_status.h"

#include "config/host_config.h"
#include "daemon/reconciler.h"
#include "daemon/spool.h"
#include "journal/journal.h"
#include "log/logger.h"

namespace radial::cli {
namespace {

template <typename T>
bool is(const std::exception& e) {
    return dynamic_cast<const T*>(&e) != nullptr;
}

} // namespace

int exit_status_for(const std::exception& e, CommandKind kind) noexcept {
    if (kind == CommandKind::turn) return kExitHostFault;
    if (is<config::HostRefusalError>(e)) return kExitFailed;
    if (is<config::ConfigError>(e)) return kExitUsage;
    return kExitFailed;
}

std::string_view error_component(const std::exception& e,
                                 std::string_view command_component) noexcept {
    if (is<config::ConfigError>(e)) return "config";
    if (is<journal::JournalError>(e)) return "journal";
    if (is<daemon::SpoolError>(e)) return "spool";
    if (is<daemon::ReconcileError>(e)) return "reconcile";
    return command_component;
}

int report_error(const std::exception& e, CommandKind kind,
                 std::string_view command_component) noexcept {
    log::error(error_component(e, command_component), "{}", e.what());
    return exit_status_for(e, kind);
}

} // namespace radial::cli
