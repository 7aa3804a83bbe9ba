// host/egress/operator_policy.h — the operator's changes to egress while turns run (`radiald
// policy`, docs/design.md §9.7): destinations denied to every turn, and per running turn
// destinations added (within the ceiling) or denied. Kept as JSON in the state directory, which
// every running turn's broker watches, so a change reaches turns already running: a connection
// to a destination denied now is closed at once.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "egress/egress_policy.h"

namespace radial::egress {

struct OperatorPolicy {
    std::vector<AllowRule> deny; // for every turn, running or to come
    struct TurnChanges {
        std::vector<AllowRule> allow, deny;
    };
    std::map<std::string, TurnChanges> turns; // by turn id
};

// What one turn may reach now: a destination matching `allow` and no rule of `deny`.
struct TurnEgressRules {
    std::vector<AllowRule> allow, deny;
    // Whether `host`:`port` may be reached (an IP literal only by a rule naming it exactly). Pure.
    bool permits(std::string_view host, std::uint16_t port, bool literal) const;
    // Whether a rule of `deny` names it. Pure.
    bool denies(std::string_view host, std::uint16_t port, bool literal) const;
};

// `<state_dir>/egress-policy.json`.
std::string operator_policy_path(const std::string& state_dir);

// `<state_dir>/egress-policy-events.jsonl`: one line per change `radiald policy` made (when, who,
// allow or deny, the rules, the turn), appended, never rewritten (docs/design.md §9.7).
std::string operator_policy_events_path(const std::string& state_dir);

// `<state_dir>/egress-brokers/<turn_id>.json`: the ceiling a running turn's broker bounds the
// operator's additions by — [run.egress] allow as its turn started, which a config edited since
// does not change — kept there while the broker runs (EgressBrokerOptions::ceiling_note), so that
// `radiald policy` says what the broker will do (docs/design.md §9.7).
std::string broker_ceiling_path(const std::string& state_dir, const std::string& turn_id);
// `<state_dir>/egress-brokers`, where they are.
std::string broker_ceilings_dir(const std::string& state_dir);

// Writes `allow` to `path` whole (its directory made, mode 0700). Throws std::runtime_error.
void write_broker_ceiling(const std::string& path, const std::vector<AllowRule>& allow);

// The ceiling at `path`; nullopt when there is none (no broker of that turn runs). Throws
// PolicyError naming the file when it is not what write_broker_ceiling writes.
std::optional<std::vector<AllowRule>> read_broker_ceiling(const std::string& path);

// The policy at `path`; empty when there is no file. Throws PolicyError naming the file when it
// cannot be read or is not what write_operator_policy writes.
OperatorPolicy read_operator_policy(const std::string& path);

// Replaces the file at `path` whole (a temporary file renamed over it, mode 0600), so a reader
// sees the old policy or the new, never half of one. Throws std::runtime_error naming the file.
// Callers serialise writers with operator_policy_lock().
void write_operator_policy(const std::string& path, const OperatorPolicy& policy);

// Holds an exclusive lock on `<path>.lock` for as long as it lives (one writer at a time).
class OperatorPolicyLock {
public:
    explicit OperatorPolicyLock(const std::string& path); // throws std::runtime_error
    ~OperatorPolicyLock();
    OperatorPolicyLock(const OperatorPolicyLock&) = delete;
    OperatorPolicyLock& operator=(const OperatorPolicyLock&) = delete;

private:
    int fd_ = -1;
};

// A turn's rules once the operator's changes apply: its own (`turn_rules`) and those added for
// it that a rule of `ceiling` covers (the file may have been written against another config, or
// by hand: the running turn's ceiling still bounds it), less what is denied for every turn and
// for it. Pure.
TurnEgressRules effective_rules(const std::vector<AllowRule>& turn_rules,
                                const OperatorPolicy& policy, const std::string& turn_id,
                                const std::vector<AllowRule>& ceiling);

} // namespace radial::egress
