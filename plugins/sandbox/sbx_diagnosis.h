// plugins/sandbox/sbx_diagnosis.h — what a failing sbx call means, recognised from the CLI's
// message, and what the operator does about it (docs/design.md §7.4: a daemon that cannot dispatch
// says so).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace radial::sandbox {

enum class SbxProblem {
    unknown,                // nothing recognised: the CLI's message speaks for itself
    not_signed_in,          // every command needs `sbx login`, which is interactive
    policy_not_initialised, // the global network policy was never chosen
    daemon_not_running,     // sandboxd is down or unreachable
    template_missing,       // the --template image is not in sbx's image store
};

struct Diagnosis {
    SbxProblem problem = SbxProblem::unknown;
    std::int32_t code = 0;   // RADIAL_E_UNAVAILABLE, RADIAL_E_NOT_FOUND; 0 for unknown
    std::string explanation; // "sbx is not signed in to a Docker account"; empty for unknown
    std::string fix;         // "run 'sbx login' once as ..."; empty for unknown
};

// Recognises `message` (what sbx printed, any case) by the phrases sbx and its wrappers are seen
// to use: "not signed in" / "not logged in" / "not authenticated" / "sbx login";
// "policy has not been initialized" / "sbx policy init"; "daemon is not running" / "failed to
// connect to (the) daemon" / "sandboxd" with "connection refused" or "no such file";
// "template ... not found" / "pull access denied" / "manifest unknown". The fixes never ask
// radiald to run an interactive command; the operator runs it once, out of band. Pure;
// thread-safe. Source: docs/design.md §7.4, peers-and-sbx §1.6, §1.10.
Diagnosis diagnose_sbx_message(std::string_view message);

} // namespace radial::sandbox
