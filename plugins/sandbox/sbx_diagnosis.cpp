#include "sbx_diagnosis.h"

#include <radial/runtime_plugin.h>

#include <initializer_list>

namespace radial::sandbox {

namespace {

std::string lower(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) out += (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c;
    return out;
}

bool any_of(const std::string& text, std::initializer_list<std::string_view> phrases) {
    for (auto p : phrases)
        if (text.find(p) != std::string::npos) return true;
    return false;
}

} // namespace

Diagnosis diagnose_sbx_message(std::string_view message) {
    const std::string m = lower(message);
    if (any_of(m, {"not signed in", "not logged in", "not authenticated", "unauthenticated",
                   "sbx login", "login required", "please log in", "please sign in"}))
        return {SbxProblem::not_signed_in, RADIAL_E_UNAVAILABLE,
                "sbx is not signed in to a Docker account",
                "run 'sbx login' once as the user radiald runs as (it is interactive, so radiald "
                "never runs it)"};
    if (any_of(m, {"policy has not been initialized", "policy has not been initialised",
                   "policy not initialized", "policy not initialised", "policy is not initialized",
                   "sbx policy init", "policy set-default"}))
        return {SbxProblem::policy_not_initialised, RADIAL_E_UNAVAILABLE,
                "sbx's network policy is not initialised",
                "choose one once with 'sbx policy init deny-all' (older sbx: 'sbx policy "
                "set-default deny-all'); radiald adds a per-sandbox rule for each turn"};
    if (any_of(m, {"daemon is not running", "daemon not running", "failed to connect to daemon",
                   "failed to connect to the daemon", "cannot connect to the sandbox daemon",
                   "failed to start daemon", "failed to start the daemon"}) ||
        (m.find("sandboxd") != std::string::npos &&
         any_of(m, {"connection refused", "no such file", "not running", "failed to start"})))
        return {SbxProblem::daemon_not_running, RADIAL_E_UNAVAILABLE,
                "the sandboxd daemon is not running",
                "start it with 'sbx daemon start -d' as the user radiald runs as, and see 'sbx "
                "diagnose' if it does not stay up"};
    if ((m.find("template") != std::string::npos && any_of(m, {"not found", "no such"})) ||
        any_of(m, {"pull access denied", "manifest unknown", "no such image"}))
        return {SbxProblem::template_missing, RADIAL_E_NOT_FOUND,
                "the sandbox template is not in sbx's image store",
                "load it once with 'docker image save IMAGE -o t.tar && sbx template load t.tar', "
                "or fix run.sandbox.template"};
    return {};
}

} // namespace radial::sandbox
