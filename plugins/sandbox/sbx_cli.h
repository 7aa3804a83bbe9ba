// plugins/sandbox/sbx_cli.h — the short sbx calls (version, help probes, ls, rm) with their time
// budgets, what the runtime concludes from them, and failure messages that say what to do.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <radial/plugin/runtime.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox_settings.h"
#include "sbx_argv.h"
#include "sbx_executor.h"
#include "sbx_list.h"

namespace radial::sandbox {

// Runs sbx for the runtime through an SbxExecutor. [thread-safe]
class SbxCli {
public:
    SbxCli(SandboxSettings settings, std::shared_ptr<SbxExecutor> executor,
           radial::plugin::Host host)
        : settings_(std::move(settings)), executor_(std::move(executor)), host_(host) {}

    // The settings this CLI runs with (binary, budgets, create options). [thread-safe]
    const SandboxSettings& settings() const noexcept { return settings_; }
    // The executor every call goes through; the run starts its streamed exec with it.
    SbxExecutor& executor() const noexcept { return *executor_; }

    // What the installed sbx understands. Rule: `sbx --help` lists the global flags, so
    // `no_input` is true when its output names "--no-input"; `ls_json` is true when `sbx ls
    // --help` names "--json". Help never prompts. Detected on first use within the probe budget
    // and kept once both probes have answered (a capability, not health: a failed probe is never
    // kept, and that call goes on without either flag). Concurrent first uses wait for one probe.
    SbxFeatures features();

    // The first line `sbx version` prints, within the probe budget. Throws
    // radial::plugin::Error(RADIAL_E_UNAVAILABLE) naming the binary, sbx's message and the fix
    // (diagnose_sbx_message) when it fails, does not answer or prints nothing. Nothing is cached.
    // Source: docs/design.md §7.4.
    std::string version();

    // Every sandbox (`sbx ls`, `--json` when features() says so), within `budget`. Throws
    // Error(RADIAL_E_UNAVAILABLE) with sbx's message and the fix when ls fails or does not answer,
    // when it prints nothing (no listing, not an empty one), or when --json output holds no
    // document of the documented shape. Source: docs/design.md §8.3,
    // §8.4.
    std::vector<ListedSandbox> list(std::chrono::milliseconds budget);

    // `sbx rm --force NAME` until the sandbox is gone, within the removal budget (each call within
    // the command budget). A failing rm is checked against `sbx ls`: a sandbox not listed is gone
    // (sbx may call removing an unknown name an error); one still listed — e.g. while another
    // removal of it is under way — is removed again every 500 ms. Throws
    // Error(RADIAL_E_UNAVAILABLE) with sbx's message and the command to run by hand when the
    // budget runs out. The budget is the sandbox's, not the call's: every remove of `name` until
    // one succeeds shares the deadline the first one set (each call tries at least once, within
    // the command budget, however little is left), so the run's stop, its teardown and the host's
    // kills together take one removal budget; once that deadline is a whole budget in the past, a
    // new remove starts a new one. `label` is for messages. Source: docs/design.md §8.3.
    void remove(std::string_view name, std::string_view label);

    // Revokes the rule that lets sandbox `name` reach host port `port` (sbx_policy_revoke_args),
    // within the command budget. Never throws for sbx's answer: a rule already gone (sbx says
    // "not found", "no such", "no matching" or "does not exist", e.g. because `sbx rm` took it
    // with its sandbox) is success, logged at debug; any other failure is logged as a warning
    // naming the command to run by hand. Returns whether the rule is known to be gone. `label` is
    // for messages. Throws Error only when sbx cannot be started at all. Source: docs/design.md
    // §9.1.
    bool revoke(std::string_view name, std::uint32_t port, std::string_view label);
    // The same for the rule of one egress destination (sbx_policy_revoke_resource_args).
    bool revoke(std::string_view name, const std::string& resource, std::string_view label);

    // Runs `sbx <args>` through the executor (see SbxExecutor::invoke).
    CliOutput call(const std::vector<std::string>& args, std::chrono::milliseconds budget,
                   int cancel_fd = -1) const;

    // The error for a call that did not succeed: "<what>: <cause>; <fix>". A recognised problem
    // (diagnose_sbx_message) brings its own code, explanation and fix; otherwise
    // `code`/`default_fix` apply. A timeout says "no answer within N ms". [thread-safe]
    radial::plugin::Error failure(const CliOutput& r, std::string_view what,
                                  std::chrono::milliseconds budget, std::int32_t code,
                                  std::string_view default_fix) const;

    // The budget of each preflight call, and of each other short call (ls, policy, rm), in ms.
    std::chrono::milliseconds probe_budget() const {
        return std::chrono::milliseconds(settings_.probe_timeout_ms);
    }
    std::chrono::milliseconds command_budget() const {
        return std::chrono::milliseconds(settings_.command_timeout_ms);
    }

private:
    using Clock = std::chrono::steady_clock;
    Clock::time_point removal_deadline(std::string_view name);
    void removal_done(std::string_view name);
    bool revoke_rule(const std::vector<std::string>& args, std::string_view name,
                     const std::string& reach, std::string_view label);
    SandboxSettings settings_;
    std::shared_ptr<SbxExecutor> executor_;
    radial::plugin::Host host_;
    std::mutex features_mutex_;
    std::optional<SbxFeatures> features_;
    std::mutex removals_mutex_;
    std::map<std::string, Clock::time_point, std::less<>> removals_; // sandbox → its deadline
};

} // namespace radial::sandbox
