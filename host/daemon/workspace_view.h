// host/daemon/workspace_view.h — what the running daemon sees at each of run.workspaceRoots, so
// that `radiald submit` refuses a workspace the daemon would not find (docs/design.md §12.5).
//
// `submit` runs in the operator's shell; the daemon may run in a systemd unit whose PrivateTmp=
// gives it a /tmp of its own and whose ProtectHome= hides or freezes /home. A path that exists for
// submit can then be missing, or another directory, for the daemon, which refuses the turn only
// once it is queued. The daemon therefore writes, at start, the identity (device and inode) of each
// root as it sees it; submit compares its own view with it. Whether the daemon can write there (the
// workspace hand-over chowns the tree) is logged at its start.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "config/host_config.h"

namespace radial::daemon {

// One configured root as a process sees it.
struct WorkspaceRootView {
    std::string path;  // as configured
    bool seen = false; // a directory there
    dev_t dev = 0;     // its device and inode, when seen
    ino_t ino = 0;
    bool writable = false; // not on a read-only mount, and writable by this process
};

// Looks at each of cfg.workspace_roots from this process. Never throws for a root it cannot see
// (that is what it reports). [thread-safe]
std::vector<WorkspaceRootView> observe_workspace_roots(const config::HostConfig& cfg);

// Logs a warning for each root the daemon cannot see or cannot write, naming the key and the fix.
// [thread-safe]
void warn_about_workspace_roots(const std::vector<WorkspaceRootView>& views);

// What the daemon does at start: observes, warns, writes the view; a view it cannot write is
// logged and left out (submit then checks nothing more than before). [thread-safe]
void publish_workspace_view(const config::HostConfig& cfg);

// `<stateDir>/workspace-roots.json`: written whole (replace_file) by the daemon at start; read by
// submit. write_* throws FsError; read_* returns nullopt when the file is missing or unreadable.
// [thread-safe]
void write_workspace_view(const std::string& state_dir,
                          const std::vector<WorkspaceRootView>& views);
std::optional<std::vector<WorkspaceRootView>> read_workspace_view(const std::string& state_dir);

// Throws turn::RequestError, naming `key`, `resolved` and the fix, when `resolved` (an absolute,
// resolved host path under one of cfg.workspace_roots) lies under a root the daemon (`daemon`)
// does not see, or sees as another directory than this process does: the daemon would refuse the
// turn as naming a path that does not exist, or run it on another directory. A root the daemon's
// view does not list (its config changed since it started) is not checked. [thread-safe]
void check_daemon_sees(const std::string& key, const std::string& resolved,
                       const config::HostConfig& cfg, const std::vector<WorkspaceRootView>& daemon);

} // namespace radial::daemon
