// host/cli/policy_command.h — `radiald policy ls|allow|deny`: the operator changes egress while
// turns run (docs/design.md §9.7, "Changing it while turns run"). The ceiling stays
// `[run.egress]`; these commands deny destinations to every turn, or add (within the ceiling) or
// deny destinations for one running turn, and every running turn's broker applies the change at
// once.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace radial::cli {

struct PolicyOptions {
    std::optional<std::string> config_file;
    std::vector<std::string> rules; // host:port
    std::string turn_id;            // empty: every turn
    bool json = false;
};

struct PolicyCommands {
    CLI::App* ls = nullptr;
    CLI::App* allow = nullptr;
    CLI::App* deny = nullptr;
};

PolicyCommands add_policy_commands(CLI::App& app, PolicyOptions& opts);

// Prints the ceiling, what is denied to every turn, and each running turn's changes. 0, or 2
// when the config or the policy file cannot be read.
int run_policy_ls(const PolicyOptions& opts);

// With --turn: adds the rules to that running turn (each within the ceiling). Without: lifts a
// deny made for every turn. 0; 1 when the turn is not running, a rule is outside the ceiling or
// not denied; 2 on a bad rule or config.
int run_policy_allow(const PolicyOptions& opts);

// Denies the rules to every turn (to come and running: open connections to them are closed), or
// with --turn to that running turn only. 0; 1 when the turn is not running; 2 on a bad rule.
int run_policy_deny(const PolicyOptions& opts);

} // namespace radial::cli
