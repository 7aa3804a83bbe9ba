// host/cli/instance.h — one radiald instance opened for a command: its config, its state
// directory held, its claim on the instance id, its checked runtime and its journal.
//
// Every command that runs or reconciles boxes (`turn`, `check`, `run`, `reconcile`) needs the same
// things in the same order, and reports the same failure first when several fail
// (docs/design.md §3.2): this type is that sequence, so a command only says how it uses the
// instance (the lock's mode, its name in a refusal, when the hand-over recovery runs).
#pragma once

#include <memory>
#include <radial/host/runtime_client.hpp>
#include <string>

#include "config/host_config.h"
#include "daemon/instance_claim.h"
#include "daemon/state_dir_lock.h"
#include "journal/journal.h"
#include "turn/turn_session.h"
#include "turn/turn_transport.h"

namespace radial::cli {

// How a command uses its instance.
struct InstanceUse {
    // The command as a refusal names it ("radiald turn").
    std::string who;
    // shared: turns side by side; exclusive: a daemon or a reconcile, whose pass would take
    // another command's live boxes for orphans (docs/design.md §8.6).
    daemon::StateDirLock::Mode lock = daemon::StateDirLock::Mode::shared;
    // Hand back the workspaces a killed radiald of this state directory left with a box user
    // while opening; `reconcile` does it after its pass instead, once no orphan writes any more.
    bool recover_handovers = true;
    // Runs turns, whose sockets must fit under the state directory (check_socket_paths_fit);
    // `reconcile` binds none, and must work on any state directory a radiald left.
    bool runs_turns = true;
};

class Instance {
public:
    // Opens the instance of `cfg` (its instance id settled) for `use`, in this order:
    //   1. the box-id range: the host's accounts here, its processes on a thread beside;
    //   2. the state directory's lock, the instance claim (and the state directories of every
    //      other instance on the host, which no request may mount);
    //   3. the runtime — created, checked against the config, preflighted — and, beside it, the
    //      journal as it is (created or migrated only once steps 1-3 succeeded, so a refused
    //      command leaves no journal);
    //   4. the hand-over recovery, of the notes whose box the runtime says has ended.
    // Whatever else failed, a box-id range in use is reported first, then the lock or claim,
    // then the runtime, then the journal. Throws what the failing step throws (HostRefusalError,
    // LockError, StartupError, JournalError); the caller maps it to an exit status. Not
    // thread-safe; the returned instance is not movable (what it hands out refers into it).
    static std::unique_ptr<Instance> open(config::HostConfig cfg, const InstanceUse& use);

    Instance(const Instance&) = delete;
    Instance& operator=(const Instance&) = delete;
    ~Instance();

    config::HostConfig& cfg() noexcept { return cfg_; }
    host::RuntimeClient& runtime() noexcept { return client_; }
    const turn::ResolvedTransport& transport() const noexcept { return transport_; }
    journal::Journal& journal() noexcept { return *journal_; }

    // What a turn session runs in (turn_session.h), referring to this instance.
    turn::TurnEnvironment turn_environment() {
        return turn::TurnEnvironment{cfg_, client_, *journal_, transport_};
    }

private:
    Instance(config::HostConfig cfg, daemon::StateDirLock lock, daemon::InstanceClaim claim,
             host::RuntimeClient client, turn::ResolvedTransport transport,
             std::unique_ptr<journal::Journal> journal);

    // Released in the reverse order: the journal, the runtime, then the claim and the lock.
    config::HostConfig cfg_;
    daemon::StateDirLock lock_;
    daemon::InstanceClaim claim_;
    host::RuntimeClient client_;
    turn::ResolvedTransport transport_;
    std::unique_ptr<journal::Journal> journal_;
};

} // namespace radial::cli
