#include "sbx_cli.h"

#include <algorithm>
#include <cctype>
#include <thread>

#include "sbx_diagnosis.h"
#include "support/cli_text.h"

namespace radial::sandbox {

namespace {

using radial::plugin::Error;

constexpr auto kFailedRemoveRetryEvery = std::chrono::milliseconds(500);

std::string quoted_command(const std::vector<std::string>& args) {
    return "'sbx " + plugin_support::argv_for_log(args) + "'";
}

} // namespace

CliOutput SbxCli::call(const std::vector<std::string>& args, std::chrono::milliseconds budget,
                       int cancel_fd) const {
    return executor_->invoke(args, budget, cancel_fd);
}

SbxFeatures SbxCli::features() {
    std::lock_guard lock(features_mutex_);
    if (features_) return *features_;
    CliOutput help = call(sbx_help_args(), probe_budget());
    CliOutput ls_help = call(sbx_list_help_args(), probe_budget());
    SbxFeatures f;
    f.no_input = (help.out + help.err).find("--no-input") != std::string::npos;
    f.ls_json = (ls_help.out + ls_help.err).find("--json") != std::string::npos;
    if (help.ok() && ls_help.ok()) {
        features_ = f;
        host_.debug(std::string("sbx features: --no-input ") + (f.no_input ? "yes" : "no") +
                    ", ls --json " + (f.ls_json ? "yes" : "no"));
    } else {
        host_.debug(
            "sbx help probes did not both answer; this call goes on without optional "
            "flags and the probe is retried next time");
    }
    return f;
}

Error SbxCli::failure(const CliOutput& r, std::string_view what, std::chrono::milliseconds budget,
                      std::int32_t code, std::string_view default_fix) const {
    if (r.timed_out)
        return Error(RADIAL_E_UNAVAILABLE,
                     std::string(what) + ": sbx '" + settings_.binary + "' gave no answer within " +
                         std::to_string(budget.count()) +
                         " ms; check that the sandboxd daemon responds ('sbx diagnose')");
    if (r.cancelled)
        return Error(RADIAL_E_CANCELLED,
                     std::string(what) + ": interrupted by a kill before sbx answered");
    // sbx writes its errors to stderr; a message only on stdout is still the cause.
    std::string message = plugin_support::cli_message(r.err.empty() ? r.out : r.err, 1024);
    if (message.empty())
        message = r.status.exited
                      ? "sbx exited " + std::to_string(r.status.code) + " without a message"
                      : "sbx was killed by signal " + std::to_string(r.status.signal);
    Diagnosis d = diagnose_sbx_message(r.err + "\n" + r.out);
    if (d.problem != SbxProblem::unknown)
        return Error(d.code, std::string(what) + ": " + d.explanation + " (sbx said: " + message +
                                 "); " + d.fix);
    return Error(code, std::string(what) + ": " + message + "; " + std::string(default_fix));
}

std::string SbxCli::version() {
    const std::string what = "checking sbx '" + settings_.binary + "' with 'sbx version'";
    CliOutput r = call(sbx_version_args(), probe_budget());
    if (!r.ok())
        throw failure(r, what, probe_budget(), RADIAL_E_UNAVAILABLE,
                      "install a working sbx (Docker Sandboxes) or set run.sandbox.binary");
    std::string line = plugin_support::first_cli_line(r.out, "");
    if (line.empty())
        throw Error(RADIAL_E_UNAVAILABLE,
                    what +
                        ": it printed no version; install a working sbx (Docker Sandboxes) or "
                        "set run.sandbox.binary");
    return line;
}

std::vector<ListedSandbox> SbxCli::list(std::chrono::milliseconds budget) {
    const SbxFeatures f = features();
    const std::vector<std::string> args = sbx_list_args(f);
    const std::string what = "listing sandboxes with " + quoted_command(args);
    CliOutput r = call(args, budget);
    if (!r.ok())
        throw failure(r, what, budget, RADIAL_E_UNAVAILABLE,
                      "run 'sbx ls' by hand as the user radiald runs as and fix what it reports");
    // A silent ls lists nothing, which is not the same as listing no sandbox: a removal would
    // take its sandbox for gone (docs/design.md §8.3). The table has its header; the JSON form
    // is judged by its parser.
    if (r.out.find_first_not_of(" \t\r\n\f\v") == std::string::npos)
        throw Error(RADIAL_E_UNAVAILABLE,
                    what +
                        ": it succeeded but printed nothing, which is no listing; run it by "
                        "hand and see 'sbx diagnose'");
    if (!f.ls_json) return parse_sandbox_list_text(r.out);
    if (auto listed = parse_sandbox_list_json(r.out)) return *listed;
    throw Error(RADIAL_E_UNAVAILABLE,
                what + ": its output holds no {\"sandboxes\":[...]} document (it began '" +
                    plugin_support::first_cli_line(r.out, "").substr(0, 80) +
                    "'); report the sbx version ('sbx version') with this message");
}

SbxCli::Clock::time_point SbxCli::removal_deadline(std::string_view name) {
    std::lock_guard lock(removals_mutex_);
    const auto now = Clock::now();
    const std::chrono::milliseconds budget(settings_.removal_timeout_ms);
    auto it = removals_.find(name);
    // One episode of ending a box shares one deadline: the pump's stop, the teardown and the
    // host's kills ask in turn (docs/design.md §8.3). One that ended longer ago than a budget
    // is over; a later removal (session rm, reconciliation) gets a budget of its own.
    if (it != removals_.end() && now < it->second + budget) return it->second;
    if (it != removals_.end()) removals_.erase(it);
    return removals_.emplace(std::string(name), now + budget).first->second;
}

void SbxCli::removal_done(std::string_view name) {
    std::lock_guard lock(removals_mutex_);
    if (auto it = removals_.find(name); it != removals_.end()) removals_.erase(it);
}

void SbxCli::remove(std::string_view name, std::string_view label) {
    const auto deadline = removal_deadline(name);
    const std::vector<std::string> args = sbx_remove_args(name, features());
    const std::string what = "removing sandbox '" + std::string(name) + "' of box '" +
                             std::string(label) + "' with " + quoted_command(args);
    const std::string by_hand = "remove it by hand with 'sbx rm --force " + std::string(name) + "'";
    // The last rm sbx answered: what the failure reports when a later one was cut short by the
    // removal budget (its "no answer" would hide why the sandbox stayed).
    std::optional<CliOutput> answered;
    for (bool first = true;; first = false) {
        auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
        // Each caller's first try is a whole one, even at or past the shared deadline (a few ms
        // left would time out any rm); only its retries are held to the deadline.
        CliOutput r =
            call(args, first ? command_budget()
                             : std::clamp(left, std::chrono::milliseconds(1), command_budget()));
        if (r.ok()) {
            removal_done(name);
            return;
        }
        if (!r.timed_out) answered = r;
        // sbx may call an unknown name an error, and a removal already under way (another
        // thread's kill, the run's own teardown) may refuse a second one: ls decides.
        std::optional<bool> present;
        try {
            std::vector<ListedSandbox> listed = list(command_budget());
            present = std::any_of(listed.begin(), listed.end(),
                                  [&](const ListedSandbox& s) { return s.name == name; });
        } catch (const Error&) {
            // not known: retried below while the budget lasts
        }
        if (present == false) {
            host_.debug(what + " failed, but 'sbx ls' does not list it: it is gone (sbx said: " +
                        plugin_support::cli_message(r.err.empty() ? r.out : r.err, 256) + ")");
            removal_done(name);
            return;
        }
        if (Clock::now() + kFailedRemoveRetryEvery >= deadline)
            throw failure(r.timed_out && answered ? *answered : r, what, command_budget(),
                          RADIAL_E_UNAVAILABLE,
                          present ? "it is still listed; " + by_hand
                                  : "'sbx ls' does not answer either; " + by_hand);
        std::this_thread::sleep_for(kFailedRemoveRetryEvery);
    }
}

bool SbxCli::revoke(std::string_view name, std::uint32_t port, std::string_view label) {
    return revoke_rule(sbx_policy_revoke_args(name, port, features()), name,
                       "host port " + std::to_string(port), label);
}

bool SbxCli::revoke(std::string_view name, const std::string& resource, std::string_view label) {
    return revoke_rule(sbx_policy_revoke_resource_args(name, resource, features()), name,
                       "egress destination " + resource, label);
}

bool SbxCli::revoke_rule(const std::vector<std::string>& args, std::string_view name,
                         const std::string& reach, std::string_view label) {
    const std::string what = "revoking the rule that lets sandbox '" + std::string(name) +
                             "' of box '" + std::string(label) + "' reach " + reach + " with " +
                             quoted_command(args);
    CliOutput r = call(args, command_budget());
    if (r.ok()) return true;
    std::string said = plugin_support::cli_message(r.err.empty() ? r.out : r.err, 256);
    std::string lower = said;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (const char* gone : {"not found", "no such", "no matching", "does not exist"})
        if (!r.timed_out && lower.find(gone) != std::string::npos) {
            host_.debug(what + ": the rule is already gone (sbx said: " + said + ")");
            return true;
        }
    host_.warn(
        failure(r, what, command_budget(), RADIAL_E_UNAVAILABLE,
                "check 'sbx policy ls' and remove the rule by hand with " + quoted_command(args))
            .what());
    return false;
}

} // namespace radial::sandbox
