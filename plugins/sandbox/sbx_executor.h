// plugins/sandbox/sbx_executor.h — the seam through which the runtime starts sbx (docs/design.md
// §5.1: the runner "takes an injectable SbxExec for its short invocations"), and its real
// implementation.
#pragma once

#include <radial/support/child_process.h>
#include <radial/support/cli_capture.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace radial::sandbox {

using internal::UniqueFd;
using plugin_support::ChildProcess;
using plugin_support::CliOutput;

// Starts sbx. Tests substitute a scripted one; the runtime holds one for its whole life.
// [thread-safe]: both methods may be called from several threads at once.
class SbxExecutor {
public:
    virtual ~SbxExecutor() = default;

    // Runs `sbx <args>` to its end within `budget` (create, policy, ls, rm, version, help) with
    // stdin on /dev/null. `cancel_fd` (-1: none) interrupts the call when it becomes readable.
    // Past the budget or on cancel the client is killed and reaped and the result says so.
    // Throws radial::plugin::Error(RADIAL_E_UNAVAILABLE, "binary") when sbx cannot be started.
    virtual CliOutput invoke(const std::vector<std::string>& args, std::chrono::milliseconds budget,
                             int cancel_fd) = 0;

    // Starts `sbx <args>` (the exec) with `stdin_source` as its stdin and its stdout and stderr on
    // two pipes, for the caller to stream; the caller owns, ends and reaps the child.
    // Throws radial::plugin::Error(RADIAL_E_UNAVAILABLE, "binary") when sbx cannot be started.
    virtual ChildProcess start(const std::vector<std::string>& args,
                               internal::UniqueFd stdin_source) = 0;
};

// The variables of radiald's environment that an sbx client inherits, if set: what the CLI needs
// to find itself, its state (~/.local/state/sandboxes) and its config. Nothing else reaches it —
// and no spec variable ever does: the turn's environment goes over the exec's stdin (docs/design.md
// §6.3).
inline constexpr std::string_view kSbxPassthroughEnv[] = {"PATH",           "HOME",
                                                          "USER",           "LOGNAME",
                                                          "LANG",           "LC_ALL",
                                                          "TMPDIR",         "XDG_RUNTIME_DIR",
                                                          "XDG_STATE_HOME", "XDG_CONFIG_HOME",
                                                          "XDG_DATA_HOME",  "XDG_CACHE_HOME",
                                                          "DOCKER_CONFIG",  "DOCKER_HOST",
                                                          "DOCKER_CONTEXT"};

// Starts the real sbx: settings' binary, resolved in PATH on every call (an install made after
// startup is picked up), with the kSbxPassthroughEnv subset of radiald's environment.
// Immutable; [thread-safe].
class ProcessSbxExecutor final : public SbxExecutor {
public:
    explicit ProcessSbxExecutor(std::string binary) : binary_(std::move(binary)) {}

    CliOutput invoke(const std::vector<std::string>& args, std::chrono::milliseconds budget,
                     int cancel_fd) override;
    ChildProcess start(const std::vector<std::string>& args,
                       internal::UniqueFd stdin_source) override;

    // The executable for the binary (plugin_support::find_executable), or throws
    // Error(RADIAL_E_UNAVAILABLE, "binary") naming it and run.sandbox.binary.
    std::filesystem::path executable() const;

private:
    std::string binary_;
};

// The kSbxPassthroughEnv variables of this process (getenv; a daemon does not setenv
// concurrently).
ChildProcess::Env sbx_client_env();

} // namespace radial::sandbox
