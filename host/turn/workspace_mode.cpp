#include "turn/workspace_mode.h"

#include <fmt/format.h>

#include "turn/turn_request.h"

namespace radial::turn {

std::optional<WorkspaceMode> parse_workspace_mode(std::string_view text) noexcept {
    if (text == kReadOnlyMode) return WorkspaceMode::read_only;
    if (text == kWorkspaceWriteMode) return WorkspaceMode::workspace_write;
    return std::nullopt;
}

std::optional<std::string> workspace_mount_problem(std::string_view text) {
    if (text == kWorkspaceTarget || text == kSamePathMount) return std::nullopt;
    return fmt::format("'{}' is neither \"{}\" nor \"{}\"", text, kWorkspaceTarget, kSamePathMount);
}

std::optional<std::string> mode_beyond_ceiling(std::string_view requested,
                                               std::string_view operator_mode) {
    // run.mode = "read-only" is the operator's word that no box writes its workspace or the
    // engine's disk (docs/design.md §7.6): a request may not undo it.
    if (parse_workspace_mode(operator_mode) != WorkspaceMode::read_only ||
        parse_workspace_mode(requested) != WorkspaceMode::workspace_write)
        return std::nullopt;
    return fmt::format(
        "mode \"{}\" is wider than run.mode = \"{}\", which a request may narrow "
        "but never widen; name no mode (or \"{}\"), or have the operator set "
        "run.mode = \"{}\"",
        kWorkspaceWriteMode, kReadOnlyMode, kReadOnlyMode, kWorkspaceWriteMode);
}

WorkspaceMode effective_mode(const std::string& requested, const std::string& operator_default) {
    const std::string& text = requested.empty() ? operator_default : requested;
    const auto mode = parse_workspace_mode(text);
    if (!mode)
        throw RequestError(fmt::format("mode '{}' is neither \"{}\" nor \"{}\"; pick one", text,
                                       kReadOnlyMode, kWorkspaceWriteMode));
    if (auto why = mode_beyond_ceiling(text, operator_default)) throw RequestError(*why);
    return *mode;
}

std::string workspace_target(const std::string& requested, const std::string& operator_default,
                             const std::string& host_path) {
    const std::string& text = requested.empty() ? operator_default : requested;
    if (auto problem = workspace_mount_problem(text))
        throw RequestError(fmt::format("workspaceMount {}; pick one", *problem));
    return text == kSamePathMount ? host_path : std::string(kWorkspaceTarget);
}

void apply_workspace_mode(ContainerSpec& spec, WorkspaceMode mode, const std::string& target) {
    const bool read_only = mode == WorkspaceMode::read_only;
    if (!target.empty())
        for (auto& m : spec.mounts)
            if (m.target == target) m.read_only = read_only;
    spec.read_only_rootfs = read_only ? Tristate::yes : Tristate::no;
}

} // namespace radial::turn
