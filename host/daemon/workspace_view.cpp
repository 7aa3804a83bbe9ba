// host/daemon/workspace_view.cpp — the daemon's view of run.workspaceRoots, written for submit
// (docs/design.md §12.5).
#include "daemon/workspace_view.h"

#include <fmt/format.h>
#include <radial/internal/path_compare.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fs/durable_file.h"
#include "log/logger.h"
#include "turn/turn_request.h"

namespace radial::daemon {

namespace {

namespace fs = std::filesystem;

std::string view_path(const std::string& state_dir) { return state_dir + "/workspace-roots.json"; }

// A root as a path can be compared: resolved as far as it exists, normalised.
std::string comparable(const std::string& path) { return internal::comparable_path(path); }

using internal::at_or_under;

} // namespace

std::vector<WorkspaceRootView> observe_workspace_roots(const config::HostConfig& cfg) {
    std::vector<WorkspaceRootView> out;
    for (const auto& root : cfg.workspace_roots) {
        WorkspaceRootView v;
        v.path = root;
        struct stat st {};
        if (::stat(root.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
            v.seen = true;
            v.dev = st.st_dev;
            v.ino = st.st_ino;
            struct statvfs fs {};
            v.writable = ::statvfs(root.c_str(), &fs) == 0 && (fs.f_flag & ST_RDONLY) == 0 &&
                         ::access(root.c_str(), W_OK) == 0;
        }
        out.push_back(std::move(v));
    }
    return out;
}

void warn_about_workspace_roots(const std::vector<WorkspaceRootView>& views) {
    for (const auto& v : views) {
        if (!v.seen)
            log::warn("daemon",
                      "run.workspaceRoots '{}' is not a directory this radiald can see: every "
                      "request naming a path under it is refused (under the packaged unit, "
                      "PrivateTmp= gives radiald a /tmp and /var/tmp of its own and ProtectHome= "
                      "hides /home); keep workspaces under /srv, or create the directory, or "
                      "remove it from run.workspaceRoots",
                      v.path);
        else if (!v.writable)
            log::warn("daemon",
                      "run.workspaceRoots '{}' is read-only to this radiald: a workspace under it "
                      "cannot be handed to the box user, so a box writes only where the tree's "
                      "modes let it (under the packaged unit, ProtectHome=read-only does this to "
                      "/home); add ReadWritePaths={} in a drop-in, or keep workspaces under /srv",
                      v.path, v.path);
    }
}

void write_workspace_view(const std::string& state_dir,
                          const std::vector<WorkspaceRootView>& views) {
    nlohmann::json roots = nlohmann::json::array();
    for (const auto& v : views)
        roots.push_back({{"path", v.path},
                         {"seen", v.seen},
                         {"dev", static_cast<std::uint64_t>(v.dev)},
                         {"ino", static_cast<std::uint64_t>(v.ino)},
                         {"writable", v.writable}});
    fs_util::replace_file(state_dir, view_path(state_dir),
                          nlohmann::json{{"workspaceRoots", roots}}.dump() + "\n", 0644);
}

void publish_workspace_view(const config::HostConfig& cfg) {
    const auto views = observe_workspace_roots(cfg);
    warn_about_workspace_roots(views);
    try {
        write_workspace_view(cfg.state_dir, views);
    } catch (const std::exception& e) {
        log::warn("daemon", "cannot publish what it sees of run.workspaceRoots for submit: {}",
                  e.what());
    }
}

std::optional<std::vector<WorkspaceRootView>> read_workspace_view(const std::string& state_dir) {
    std::ifstream in(view_path(state_dir));
    if (!in) return std::nullopt;
    std::stringstream text;
    text << in.rdbuf();
    try {
        const auto j = nlohmann::json::parse(text.str());
        std::vector<WorkspaceRootView> out;
        for (const auto& r : j.at("workspaceRoots")) {
            WorkspaceRootView v;
            v.path = r.at("path").get<std::string>();
            v.seen = r.at("seen").get<bool>();
            v.dev = static_cast<dev_t>(r.at("dev").get<std::uint64_t>());
            v.ino = static_cast<ino_t>(r.at("ino").get<std::uint64_t>());
            v.writable = r.at("writable").get<bool>();
            out.push_back(std::move(v));
        }
        return out;
    } catch (const nlohmann::json::exception&) {
        return std::nullopt; // a file we cannot read tells nothing; the daemon checks again
    }
}

void check_daemon_sees(const std::string& key, const std::string& resolved,
                       const config::HostConfig& cfg,
                       const std::vector<WorkspaceRootView>& daemon) {
    // The innermost configured root holding the path: the one whose view decides.
    const WorkspaceRootView* best = nullptr;
    std::string best_dir;
    for (const auto& root : cfg.workspace_roots) {
        const std::string dir = comparable(root);
        if (!at_or_under(resolved, dir) || (best && dir.size() <= best_dir.size())) continue;
        for (const auto& v : daemon)
            if (v.path == root) {
                best = &v;
                best_dir = dir;
            }
    }
    if (!best) return;
    struct stat st {};
    const bool here = ::stat(best->path.c_str(), &st) == 0;
    if (best->seen && here && st.st_dev == best->dev && st.st_ino == best->ino) return;
    throw turn::RequestError(fmt::format(
        "{} '{}' is under run.workspaceRoots '{}', which the running radiald {}: it would "
        "refuse the turn or run it on another directory (under the packaged unit, PrivateTmp= "
        "gives radiald a /tmp and /var/tmp of its own and ProtectHome= hides /home); put the "
        "workspace under a root it sees, such as /srv, or see radiald's startup warnings",
        key, resolved, best->path,
        best->seen ? "sees as another directory than this command does" : "cannot see"));
}

} // namespace radial::daemon
