// host/daemon/state_dir_watch.h — whether the state directory a daemon holds is still the one at
// its path (docs/design.md §12.3). A state directory removed or replaced under a running daemon
// leaves it writing to files no one else sees: `status` says it is not running, `submit` warns,
// and a turn it finishes is journaled where no later start finds it, so that start reports the
// turn lost ("submit the turn again") and it runs twice.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace radial::daemon {

class StateDirWatch {
public:
    // Notes the identity (device, inode) of each file of `paths` as it is now (the lock file and
    // the journal, opened by this process). Throws std::system_error when one cannot be looked at.
    explicit StateDirWatch(std::vector<std::string> paths);

    // Why the files are no longer the ones noted — one of them removed, or another file at its
    // path — naming it; nullopt while every one is. One stat(2) per file. [thread-safe]
    std::optional<std::string> lost() const;

private:
    struct Watched {
        std::string path;
        dev_t dev;
        ino_t ino;
    };
    std::vector<Watched> watched_;
};

} // namespace radial::daemon
