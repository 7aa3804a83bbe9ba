// host/turn/workspace_mode.h — what a turn may write (its mode) and where its workspace appears in
// the box (docs/design.md §7.6).
//
//   read-only:        the workspace is mounted read-only and the root filesystem is read-only;
//                     only /tmp and the box user's home are writable.
//   workspace-write:  (default) the workspace is read-write and the box gets a private writable
//                     layer, thrown away with the box: package installs work and never persist.
//
// The workspace appears at /work (default) or, with workspaceMount = "same-path", at its absolute
// host path, which is then also the workdir.
#pragma once

#include <optional>
#include <radial/container_spec.hpp>
#include <string>
#include <string_view>

namespace radial::turn {

enum class WorkspaceMode { read_only, workspace_write };

inline constexpr std::string_view kReadOnlyMode = "read-only";
inline constexpr std::string_view kWorkspaceWriteMode = "workspace-write";
// The value of workspaceMount that mounts the workspace at its host path.
inline constexpr std::string_view kSamePathMount = "same-path";

// "read-only" or "workspace-write"; nullopt for anything else. Pure; thread-safe.
std::optional<WorkspaceMode> parse_workspace_mode(std::string_view text) noexcept;

// Why `text` is not a workspaceMount value ("/work" or "same-path"), or nullopt. Pure.
std::optional<std::string> workspace_mount_problem(std::string_view text);

// Why a request's mode `requested` is wider than the operator's run.mode `operator_mode` (a
// request may narrow it, never widen it: workspace-write under read-only), or nullopt. Pure.
std::optional<std::string> mode_beyond_ceiling(std::string_view requested,
                                               std::string_view operator_mode);

// The mode of a turn: `requested` when non-empty, else `operator_default` (run.mode, checked at
// load). Throws RequestError naming `mode` and the accepted values for anything else, and
// mode_beyond_ceiling()'s reason for a mode wider than `operator_default`.
WorkspaceMode effective_mode(const std::string& requested, const std::string& operator_default);

// Where the workspace whose resolved host path is `host_path` appears in the box: `requested`
// when non-empty, else `operator_default` (run.workspaceMount); "same-path" gives `host_path`.
// Throws RequestError naming `workspaceMount` for any other value.
std::string workspace_target(const std::string& requested, const std::string& operator_default,
                             const std::string& host_path);

// Applies `mode` to `spec`: the mount at `target` (the workspace; none when empty) read-only or
// not, and spec.read_only_rootfs yes (read-only) or no (workspace-write). Pure.
void apply_workspace_mode(ContainerSpec& spec, WorkspaceMode mode, const std::string& target);

} // namespace radial::turn
