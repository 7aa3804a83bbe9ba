#include "pool/pool_box.h"

#include <fmt/format.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <radial/host/session_client.hpp>
#include <sstream>

#include "config/box_identity.h"
#include "daemon/instance_claim.h"
#include "log/logger.h"
#include "socket/box_socket.h"
#include "turn/box_root.h"
#include "turn/image_pin.h"
#include "turn/turn_request.h"
#include "turn/turn_setup_error.h"
#include "turn/workspace_mode.h"

namespace radial::pool {
namespace fs = std::filesystem;

namespace {

void make_dir(const std::string& path, mode_t mode) {
    if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST)
        throw turn::TurnSetupError(fmt::format("creating '{}': {}", path, std::strerror(errno)));
    ::chmod(path.c_str(), mode);
}

// A mountinfo field with its octal escapes (\040 for a space) undone.
std::string unescape_mount_path(const std::string& field) {
    std::string out;
    for (std::size_t i = 0; i < field.size(); ++i) {
        if (field[i] == '\\' && i + 3 < field.size()) {
            const std::string oct = field.substr(i + 1, 3);
            if (oct.size() == 3 && oct.find_first_not_of("01234567") == std::string::npos) {
                out += static_cast<char>(std::stoi(oct, nullptr, 8));
                i += 3;
                continue;
            }
        }
        out += field[i];
    }
    return out;
}

// The mount points of this mount namespace at or under `dir`, deepest first.
std::vector<std::string> mounts_under(const std::string& dir) {
    std::vector<std::string> out;
    std::ifstream info("/proc/self/mountinfo");
    std::string line;
    while (std::getline(info, line)) {
        std::istringstream fields(line);
        std::string id, parent, dev, root, point;
        if (!(fields >> id >> parent >> dev >> root >> point)) continue;
        point = unescape_mount_path(point);
        if (point.starts_with(dir + "/")) out.push_back(point);
    }
    std::sort(out.begin(), out.end(),
              [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
    return out;
}

} // namespace

ContainerSpec box_shape(const ContainerSpec& turn_spec) {
    ContainerSpec s = turn_spec;
    s.label.clear();
    s.argv.clear();
    s.env.clear();
    s.workdir.clear();
    s.timeout_ms = 0;
    s.user.clear();
    s.host_ports.clear();
    s.egress.clear();
    if (!s.mounts.empty() && s.mounts.front().target == turn::kWorkspaceTarget) {
        s.mounts.front().source.clear();
        s.mounts.front().receives_host_mounts = false;
    }
    return s;
}

PoolClass settle_pool_class(const config::HostConfig& cfg, const host::RuntimeClient& client,
                            const std::string& image, const std::string& mode) {
    if (cfg.workspace_mount != turn::kWorkspaceTarget)
        throw turn::RequestError(
            "run.pool: run.workspaceMount = \"same-path\" puts each workspace at its own path, "
            "which a box made before its turn cannot know; unset run.workspaceMount or the pool");
    if (cfg.user == config::kWorkspaceOwnerUser)
        throw turn::RequestError(
            "run.pool: run.user = \"workspace-owner\" runs each box as its workspace's owner, "
            "whom a box made before its turn cannot know; unset run.user or the pool");
    turn::TurnRequest req;
    req.turn_id = "pool";
    req.image = image;
    req.argv = {"true"};
    req.mode = mode;
    PoolClass cls;
    cls.image = image;
    cls.mode = mode;
    ContainerSpec s = turn::build_container_spec(req, cfg);
    // A turn's workspace: at /work, read-only in a read-only mode (build_container_spec).
    const bool read_only = turn::effective_mode(mode, cfg.mode) == turn::WorkspaceMode::read_only;
    s.mounts.insert(s.mounts.begin(), Mount{"", turn::kWorkspaceTarget, read_only});
    s.workdir = turn::kWorkspaceTarget;
    cls.digest = turn::pin_image(s, image, client, cfg);
    cls.shape = box_shape(s);
    s.argv.clear();
    s.label.clear();
    cls.spec = std::move(s);
    return cls;
}

std::string pool_label_prefix(const config::HostConfig& cfg) {
    return fmt::format("radial-pool-{}-", cfg.instance_id);
}

std::string pool_dir(const std::string& state_dir) { return state_dir + "/pool"; }

std::size_t clear_pool_dir(const std::string& state_dir) noexcept {
    std::size_t detached = 0;
    try {
        // Resolved as mountinfo shows mount points: a state directory reached through a link, or
        // spelled with a trailing slash, still finds its mounts.
        std::error_code ec;
        const std::string dir = fs::canonical(pool_dir(state_dir), ec).string();
        if (ec) return 0; // no pool directory: nothing was ever mounted in it
        // Stacked mounts share a mount point: a pass detaches the top one of each.
        for (int pass = 0; pass < 8; ++pass) {
            const auto points = mounts_under(dir);
            if (points.empty()) break;
            for (const auto& p : points) {
                if (::umount2(p.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
                    ++detached;
                else
                    log::warn("pool", "detaching '{}': {}", p, std::strerror(errno));
            }
        }
        // Nothing is removed while a mount is left in it: removing it would cross into the
        // mount and delete what that shows, a turn's workspace (docs/design.md §13.14).
        const auto left = mounts_under(dir);
        for (const auto& e : fs::directory_iterator(dir, ec)) {
            const std::string entry = e.path().string();
            const auto held = std::find_if(left.begin(), left.end(), [&](const std::string& p) {
                return p == entry || p.starts_with(entry + "/");
            });
            if (held != left.end()) {
                log::warn("pool",
                          "'{}' is left as it is: '{}' is still mounted in it; detach it "
                          "(umount --lazy) and run 'radiald reconcile' again",
                          entry, *held);
                continue;
            }
            std::error_code rm;
            fs::remove_all(e.path(), rm);
            if (rm) log::warn("pool", "removing '{}': {}", entry, rm.message());
        }
    } catch (const std::exception& e) {
        log::warn("pool", "clearing the pool's directory: {}", e.what());
    }
    return detached;
}

PoolBox::PoolBox(const host::RuntimeClient& client, std::string state_dir)
    : client_(client), state_dir_(std::move(state_dir)) {}

std::unique_ptr<PoolBox> PoolBox::create(const config::HostConfig& cfg,
                                         const host::RuntimeClient& client, const PoolClass& cls,
                                         std::uint64_t max_age_ms, const std::string& id) {
    const auto sessions = host::SessionClient::of(client);
    std::unique_ptr<PoolBox> box(new PoolBox(client, cfg.state_dir));
    turn::validate_turn_id(id);
    box->id_ = id;
    box->label_ = pool_label_prefix(cfg) + box->id_;
    ContainerSpec spec = cls.spec;
    spec.label = box->label_;

    make_dir(pool_dir(cfg.state_dir), 0700);
    box->dir_ = pool_dir(cfg.state_dir) + "/" + box->id_;
    make_dir(box->dir_, 0700);
    box->run_dir_ = box->dir_ + "/run";
    make_dir(box->run_dir_, 0700);
    const std::string work = box->dir_ + "/work";
    make_dir(work, 0755);
    box->work_.emplace(work);
    // Read-only in the box: until the claim it is an empty directory the box must not fill.
    spec.mounts.front().source = work;
    spec.mounts.front().read_only = true;
    spec.mounts.front().receives_host_mounts = true;

    // Its own ids for as long as it lives (box_id_lease.h), as a one-shot box's.
    if (cfg.box_root) {
        spec.user = turn::kNamespacedRootUser; // docs/design.md §8.8: nothing to lease
    } else if (config::uses_box_id_range(cfg)) {
        box->ids_.emplace(turn::BoxIdLease::acquire(
            turn::box_id_lease_dir(daemon::default_claim_registry()), cfg.box_id_first,
            cfg.box_id_last, box->label_, cfg.state_dir));
        const auto owner = spec.user.substr(0, spec.user.find(':'));
        spec.user = cfg.user.empty() ? fmt::format("{0}:{0}", box->ids_->id())
                                     : fmt::format("{}:{}", owner, box->ids_->id());
    }
    box->user_ = spec.user;
    spec.mounts.push_back({box->run_dir_, socket::kBoxSocketDir, true}); // as box_socket.cpp
    // The identity a cold turn's box gets (turn_session_steps.cpp, prepare_box_user), a fixed
    // run.user's too: what is in a pool box is what is in a cold one.
    if (const auto host_ids = turn::box_host_ids(spec.user, cfg.box_root);
        host_ids && client.has_capability(RADIAL_CAP_HOST_UID_MOUNTS)) {
        box->identity_.emplace(turn::box_identity_dir(cfg.state_dir, box->id_), host_ids->first,
                               host_ids->second, std::nullopt, cfg.box_root.has_value());
        box->identity_->apply(spec, cfg.home_size_bytes);
    }
    try {
        sessions.create(spec, max_age_ms, 0);
    } catch (...) {
        bool gone = false;
        try {
            gone = !client.lists_box(box->label_);
        } catch (const std::exception&) {
        }
        if (!gone && box->ids_) box->ids_->keep_for_reconcile();
        box->destroyed_ = gone;
        throw;
    }
    box->made_ = true;
    box->started_ = std::chrono::steady_clock::now();
    return box;
}

void PoolBox::bind_workspace(const std::string& workspace, bool read_only) {
    workspace_.emplace(*work_, workspace, read_only);
}

bool PoolBox::destroy() noexcept {
    if (destroyed_) return *destroyed_;
    bool gone = !made_;
    if (made_) {
        try {
            host::SessionClient::of(client_).destroy(label_);
            gone = true;
        } catch (const std::exception& e) {
            log::error("pool", "removing pool box '{}': {}", label_, e.what());
        }
    }
    // The host's mount goes either way: its copy in a box still running goes with it.
    workspace_.reset();
    if (!gone) {
        log::warn("pool",
                  "pool box '{}' may still exist; its ids {} stay leased until 'radiald "
                  "reconcile' removes it",
                  label_, user_);
        if (ids_) ids_->keep_for_reconcile();
    }
    destroyed_ = gone;
    return gone;
}

PoolBox::~PoolBox() {
    destroy();
    identity_.reset();
    work_.reset();
    if (dir_.empty()) return;
    try {
        std::error_code ec;
        // Not while a mount is left in it (a detach that failed): removing would cross into the
        // mount and delete what it shows, the turn's workspace (docs/design.md §13.14).
        const std::string real = fs::canonical(dir_, ec).string();
        if (!ec) {
            if (const auto left = mounts_under(real); !left.empty()) {
                log::warn("pool",
                          "'{}' is left as it is: '{}' is still mounted in it; detach it (umount "
                          "--lazy) and run 'radiald reconcile'",
                          dir_, left.front());
                return;
            }
        }
        fs::remove_all(dir_, ec);
        if (ec) log::warn("pool", "removing '{}': {}", dir_, ec.message());
    } catch (const std::exception& e) { // a destructor: nothing may leave it
        log::warn("pool", "removing '{}': {}", dir_, e.what());
    }
}

} // namespace radial::pool
