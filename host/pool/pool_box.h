// host/pool/pool_box.h — one box of the warm pool (docs/design.md §13.14): made before any turn,
// holding nothing of one — no workspace, no secret, no token, no socket — and bound to a single
// turn after that turn claimed it.
//
// A pool box is a session box (radial.session/1) with no session: the one-shot box's spec and
// hardening (build_container_spec), its own leased ids, its identity files, and two directories
// under "<stateDir>/pool/<id>/" mounted when the box is made: "run" (root's, 0700) at /run/radial,
// where the claiming turn binds its socket, and "work", a receiving directory (late_mount.h)
// mounted read-only with slave propagation at /work, on which the host stacks the turn's workspace
// at the claim. Its idle timeout is the pool's maximum age, kept by the box's PID 1: an unclaimed
// box ends by itself at that age, radiald or not. A box serves one turn and is then removed.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <radial/container_spec.hpp>
#include <radial/host/runtime_client.hpp>
#include <string>

#include "config/host_config.h"
#include "fs/late_mount.h"
#include "time/clock.h"
#include "turn/box_id_lease.h"
#include "turn/box_user_env.h"

namespace radial::pool {

// What every box of a pool class is made from, and what a turn's spec must equal to claim one.
struct PoolClass {
    std::string image;   // as run.pool.images names it
    std::string mode;    // the workspace mode, "workspace-write" or "read-only"
    std::string digest;  // what it resolved to when the class was settled; "" when unresolved
    ContainerSpec spec;  // the box's spec but its label, user, workspace source and identity
    ContainerSpec shape; // box_shape() of a turn's spec this class serves
};

// What of a turn's spec (after build_container_spec and pin_image) a box must have been made
// with: everything but the label, the argv, the env, the workdir, the timeout, the user and the
// workspace's host path, which an exec or the claim supplies. [thread-safe]
ContainerSpec box_shape(const ContainerSpec& turn_spec);

// The class of `image` in `mode` under `cfg`: its spec as a turn's of that image with a workspace
// at /work in that mode, pinned through `client` (image_pin.h). Throws turn::RequestError (an
// image the config refuses) or turn::TurnSetupError.
PoolClass settle_pool_class(const config::HostConfig& cfg, const host::RuntimeClient& client,
                            const std::string& image, const std::string& mode);

// "radial-pool-<instanceId>-": the prefix of every pool box of this instance.
std::string pool_label_prefix(const config::HostConfig& cfg);
// "<stateDir>/pool".
std::string pool_dir(const std::string& state_dir);

// Detaches whatever is mounted under pool_dir() (however the state directory's path is spelled)
// and removes what is in it: what a radiald killed with pool boxes left. An entry with a mount it
// could not detach is left in place, never removed through the mount. Call only while no pool of
// this state directory runs. Returns how many mounts it detached. Never throws; logs what it could
// not do.
std::size_t clear_pool_dir(const std::string& state_dir) noexcept;

class PoolBox {
public:
    // Makes and starts an idle box of `cls` (see the file comment), labelled
    // pool_label_prefix() + `id` (a turn id: new_turn_id()), that ends by itself after
    // `max_age_ms` idle. Throws host::RuntimeError from the runtime, turn::TurnSetupError or
    // fs_util::FsError for the host's part; leaves nothing behind when it throws but a box the
    // runtime could not say it removed (its ids then stay leased for reconciliation). `client`
    // must outlive the box.
    static std::unique_ptr<PoolBox> create(const config::HostConfig& cfg,
                                           const host::RuntimeClient& client, const PoolClass& cls,
                                           std::uint64_t max_age_ms, const std::string& id);
    // Removes the box (destroy()) and what the host kept of it.
    ~PoolBox();
    PoolBox(const PoolBox&) = delete;
    PoolBox& operator=(const PoolBox&) = delete;

    const std::string& id() const noexcept { return id_; }
    const std::string& label() const noexcept { return label_; }
    // "uid:gid" the box runs as.
    const std::string& user() const noexcept { return user_; }
    // Where the claiming turn binds its socket, on the host (the box's /run/radial).
    const std::string& socket_dir() const noexcept { return run_dir_; }
    std::chrono::steady_clock::time_point started() const noexcept { return started_; }

    // Stacks `workspace` on the box's /work, read-only when asked: the box sees it from now on.
    // Throws fs_util::FsError naming the step. Call once.
    void bind_workspace(const std::string& workspace, bool read_only);

    // Detaches the workspace from the box (its copy in the box goes with the host's mount): the box
    // can no longer reach it, whether or not it is removed yet. Never throws.
    void detach_workspace() noexcept { workspace_.reset(); }

    // Removes the box, then detaches the workspace (the box's copy goes with it): true when the
    // runtime said the box is gone. When it did not, the box's ids stay leased until
    // reconciliation removes it. Never throws; a second call returns the first's answer.
    bool destroy() noexcept;

private:
    PoolBox(const host::RuntimeClient& client, std::string state_dir);

    const host::RuntimeClient& client_;
    std::string state_dir_;
    std::string id_, label_, user_, dir_, run_dir_;
    std::chrono::steady_clock::time_point started_;
    std::optional<turn::BoxIdLease> ids_;
    std::optional<turn::BoxIdentity> identity_;
    std::optional<fs_util::ReceivingDir> work_;
    std::optional<fs_util::LateMount> workspace_;
    bool made_ = false;
    std::optional<bool> destroyed_;
};

} // namespace radial::pool
