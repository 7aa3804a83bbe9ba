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

WorkspaceMode effective_mode(const std::string& requested, const std::string& operator_default) {
    const std::string& text = requested.empty() ? operator_default : requested;
    if (auto mode = parse_workspace_mode(text)) return *mode;
    throw RequestError(fmt::format("mode '{}' is neither \"{}\" nor \"{}\"; pick one", text,
                                   kReadOnlyMode, kWorkspaceWriteMode));
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
