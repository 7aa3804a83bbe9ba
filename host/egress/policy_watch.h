// host/egress/policy_watch.h — one watch of the operator's egress policy file for every broker of
// the process (docs/design.md §9.7). A broker per turn with an inotify instance of its own used up
// root's (fs.inotify.max_user_instances, 128 by default, shared with systemd and the engine) at
// about a hundred turns with egress at once, and failed every turn after; the process now holds
// one instance per directory watched, whatever the number of brokers.
#pragma once

#include <memory>
#include <string>

namespace radial::egress {

// A broker's subscription to the changes of one policy file. fd() becomes readable after the file
// was written, replaced or removed (or after the kernel's queue overflowed and a change may have
// been lost); changed() consumes that. Move-only; the last subscription of a directory ends the
// watcher's thread.
class PolicyWatch {
public:
    // Subscribes to `policy_path` (absolute). The watch is in place when this returns, so a change
    // after it is not missed. Throws std::runtime_error naming the directory when it cannot be
    // watched. [thread-safe]
    explicit PolicyWatch(const std::string& policy_path);
    PolicyWatch(PolicyWatch&&) noexcept;
    PolicyWatch& operator=(PolicyWatch&&) = delete;
    ~PolicyWatch();

    // Readable (POLLIN) after a change. [thread-safe]
    int fd() const noexcept;
    // Whether a change came since the last call, consuming it. Never blocks. One thread at a time.
    bool changed() noexcept;

    struct Subscriber;

private:
    std::shared_ptr<Subscriber> sub_;
};

} // namespace radial::egress
