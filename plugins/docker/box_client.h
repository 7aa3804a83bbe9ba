// plugins/docker/box_client.h — the pieces of one box's `docker run` client that two threads share
// (the pump that drains and reaps it, the supervisor that stops the box): its --cidfile, the
// client process itself, and the env-file it reads on its stdin.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "support/child_process.h"
#include "support/unique_fd.h"

namespace radial::docker {

// True for a full container id: 64 lower-case hex digits. Pure.
bool is_container_id(std::string_view s) noexcept;

// The container id from a --cidfile, once docker has written it (right after creating the
// container, before starting it). Set the path before sharing it. [thread-safe] id()
class CidFile {
public:
    void set_path(std::string path) { path_ = std::move(path); }
    const std::string& path() const noexcept { return path_; }
    // The id, or nullopt while the file is absent or not yet fully written. Once read, kept.
    std::optional<std::string> id();

private:
    std::mutex mutex_;
    std::string path_;
    std::optional<std::string> id_;
};

// The docker client, shared by the pump (which reaps it) and the supervisor (which may kill it).
// Rationale: ChildProcess is one-thread-at-a-time, and a signal must never be sent to a pid that
// has been reaped (and possibly recycled): reaping and killing are serialised here. The
// ChildProcess must outlive this. [thread-safe]
class SharedClient {
public:
    explicit SharedClient(plugin_support::ChildProcess& child)
        : child_(child), exit_fd_(child.exit_fd()) {}

    bool reaped();
    // True once the client has exited, reaped or not (its pidfd is readable then; without a
    // pidfd, only once reaped).
    bool exited();
    // The client's pidfd (readable once it has exited), or -1 when the kernel has none.
    int exit_fd() const noexcept { return exit_fd_; }
    // ChildProcess::try_reap and ::kill, serialised.
    std::optional<plugin_support::ExitStatus> try_reap();
    void kill();

private:
    std::mutex mutex_;
    plugin_support::ChildProcess& child_;
    const int exit_fd_; // owned by child_
};

// A sealed memfd holding `content`, to be the docker client's stdin and read by it through
// `--env-file /proc/self/fd/0` (docker_env.h). Not a file on disk; nothing can change it once
// sealed. `box` names the box in messages. Throws radial::plugin::Error(RADIAL_E_INTERNAL) when
// the kernel refuses.
plugin_support::UniqueFd env_file_memfd(const std::string& content, const std::string& box);

} // namespace radial::docker
