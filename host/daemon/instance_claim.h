// host/daemon/instance_claim.h — one state directory per instance id on this host.
//
// Box labels carry the instance id, and reconciliation kills every box with its instance's label
// prefix. Two state directories configured with the same run.instanceId would therefore take each
// other's live turns for orphans. Every radiald that runs or reconciles boxes (`turn`, `run`,
// `reconcile`) holds a shared flock(2) on "<registry>/<instanceId>.claim", which names the state
// directory it belongs to; a radiald of another state directory that finds the claim held refuses
// to start, naming the holder. The kernel drops the lock when its holder dies, so a crash never
// leaves a stale claim.
//
// The files do not accumulate (docs/design.md §8.6): the last holder to let go removes the claim
// and its guard ("<instanceId>.lock"), under the guard, and every acquire checks that the file it
// locked is still the one at its path, so a removal never lets two radialds lock different files.
// A crashed holder's files stay until the next radiald of that instance id lets go, or until any
// radiald starts once the state directory they name is gone (acquire sweeps them).
#pragma once

#include <radial/internal/unique_fd.h>

#include <string>
#include <vector>

namespace radial::daemon {

// Where the claims live: "/run/radial-claims" for root (host-wide, in a directory only root may
// write), "$XDG_RUNTIME_DIR/radial" (or "/tmp/radial-<uid>") for another user, whose radiald can
// only collide with its own.
std::string default_claim_registry();

// The state directories the claims in `registry` name: every radiald instance on this host that
// runs or ran since the registry was last cleared (a crashed holder's claim stays). Unreadable or
// malformed claims are skipped. Never throws but bad_alloc.
std::vector<std::string> claimed_state_dirs(const std::string& registry);

class InstanceClaim {
public:
    // Claims `instance_id` for `state_dir` (which must exist) in `registry` (created 0755 when
    // missing; for root it must be root's and writable by nobody else). Waits at most a few
    // seconds for another radiald's check-and-claim. Throws LockError (state_dir_lock.h) when a
    // live radiald of another state directory holds the claim — the message names that directory
    // and its pids — or when the registry cannot be used. Not thread-safe against itself.
    static InstanceClaim acquire(const std::string& registry, const std::string& instance_id,
                                 const std::string& state_dir);

    InstanceClaim(InstanceClaim&& o) noexcept
        : path_(std::move(o.path_)), guard_path_(std::move(o.guard_path_)), fd_(std::move(o.fd_)) {}
    InstanceClaim& operator=(InstanceClaim&& o) noexcept {
        if (this != &o) {
            release();
            path_ = std::move(o.path_);
            guard_path_ = std::move(o.guard_path_);
            fd_ = std::move(o.fd_);
        }
        return *this;
    }
    // Lets go of the claim; removes its files when no other radiald holds it (release()).
    ~InstanceClaim() { release(); }

    const std::string& path() const noexcept { return path_; }

    // Lets go of the claim now. When no other radiald holds it, removes the claim file and its
    // guard, waiting a few seconds at most for the guard; when it cannot have the guard, or
    // another radiald holds the claim, the files stay (harmless: the next acquire reuses them).
    // Never throws. A second call does nothing.
    void release() noexcept;

private:
    InstanceClaim(std::string path, std::string guard_path, internal::UniqueFd fd)
        : path_(std::move(path)), guard_path_(std::move(guard_path)), fd_(std::move(fd)) {}
    std::string path_;
    std::string guard_path_;
    internal::UniqueFd fd_;
};

} // namespace radial::daemon
