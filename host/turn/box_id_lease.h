// host/turn/box_id_lease.h — every box its own uid and gid, leased from run.boxIdRange.
//
// Boxes that share a uid share what the kernel gives per uid (inotify instances, pids under
// RLIMIT_NPROC) and can reach each other through it: a setuid file one box leaves behind runs as
// every box (docs/design.md §8.7, §15.2a). So each box runs as an id (uid and gid alike) leased
// for it alone, host-wide: across turns, checks and radiald instances.
//
// A lease is the file "<dir>/<id>" held with an exclusive flock(2) by the radiald that runs the
// box, naming the box's label and its state directory. Freeing it removes the file under the
// lock. A radiald killed meanwhile leaves the file unlocked but present — its box may still run
// as the id — so an unlocked lease file is never reused: the reconciliation of the state
// directory it names removes it once that instance's boxes are gone (release_stale()), or
// acquire() takes it over once that state directory no longer exists and no process runs with the
// id. An id is also skipped while any process on the host (any pid namespace) runs with it. Ids are
// tried from a random place in the range, so an id freed a moment ago is seldom the next one given.
#pragma once

#include <radial/internal/unique_fd.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace radial::turn {

// Where the leases of a claim registry (daemon/instance_claim.h) live: "<registry>/box-ids".
std::string box_id_lease_dir(const std::string& claim_registry);

class BoxIdLease {
public:
    // Leases a free id of [first, last] for the box `label` of the state directory `state_dir`.
    // `dir` is made 0755 when missing. Throws BoxIdsExhausted (a TurnSetupError) naming
    // run.boxIdRange when every id is taken (with how many are held and how many were left by a
    // killed radiald), or TurnSetupError naming `dir` when it cannot be used. Thread-safe: each
    // lease is a file description of its own.
    static BoxIdLease acquire(const std::string& dir, std::uint32_t first, std::uint32_t last,
                              const std::string& label, const std::string& state_dir);

    BoxIdLease(BoxIdLease&& o) noexcept
        : id_(o.id_), path_(std::move(o.path_)), fd_(std::move(o.fd_)) {
        o.path_.clear();
    }
    BoxIdLease& operator=(BoxIdLease&&) = delete;
    BoxIdLease(const BoxIdLease&) = delete;
    // Frees the id (release()).
    ~BoxIdLease() { release(); }

    // The leased id, used as the box's uid and gid.
    std::uint32_t id() const noexcept { return id_; }

    // Frees the id now: removes the lease file and lets go of its lock. Call only once the box is
    // gone. Never throws; a second call does nothing.
    void release() noexcept;

    // Keeps the lease file after this process lets go, as a killed radiald would: for a box that
    // could not be removed, so the id is not given to another box while it may still run.
    void keep_for_reconcile() noexcept;

private:
    BoxIdLease(std::uint32_t id, std::string path, internal::UniqueFd fd)
        : id_(id), path_(std::move(path)), fd_(std::move(fd)) {}
    std::uint32_t id_;
    std::string path_;
    internal::UniqueFd fd_;
};

// What a lease file says of its box.
struct StaleLease {
    std::uint32_t id = 0;
    std::string label;
};

// Removes every lease file in `dir` that names `state_dir`, is held by nobody (its radiald was
// killed) and whose box label is not in `live_labels`: call after reconciling that state
// directory's boxes. Returns what it removed. Never throws but bad_alloc; logs problems.
std::vector<StaleLease> release_stale_box_id_leases(const std::string& dir,
                                                    const std::string& state_dir,
                                                    const std::vector<std::string>& live_labels);

// The box labels of the lease files in `dir` that name `state_dir` and that nobody holds: boxes
// a killed radiald of that state directory ran or was about to run. Reads only. Never throws but
// bad_alloc.
std::vector<std::string> unheld_box_id_lease_labels(const std::string& dir,
                                                    const std::string& state_dir);

// Frees the lease of box `label` that nobody holds (a session's, kept while its box lived), once
// that box is gone. Returns the id, or nullopt when there was none. Never throws but bad_alloc.
std::optional<std::uint32_t> release_box_id_lease_of(const std::string& dir,
                                                     const std::string& label);

} // namespace radial::turn
