// host/cli/policy_command.cpp — see policy_command.h. Read, change and write the operator's policy
// file under its lock; running turns' brokers see it replaced (inotify) and apply it.
#include "cli/policy_command.h"

#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/config_file.h"
#include "cli/exit_status.h"
#include "cli/runtime_setup.h"
#include "config/host_config.h"
#include "egress/operator_policy.h"
#include "fs/durable_file.h"
#include "journal/journal_sqlite.h"
#include "log/logger.h"
#include "turn/terminal_record.h"

namespace radial::cli {
namespace {

// The turns running now (in flight); empty when there is no journal yet.
std::set<std::string> running_turns(const config::HostConfig& cfg) {
    std::set<std::string> out;
    const std::string path = journal_path(cfg);
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return out;
    for (const auto& t : journal::open_sqlite_journal(path)->in_flight()) out.insert(t.turn_id);
    return out;
}

std::vector<egress::AllowRule> parse_rules(const std::vector<std::string>& texts) {
    std::vector<egress::AllowRule> out;
    for (const auto& t : texts) out.push_back(egress::parse_allow_rule(t));
    return out;
}

bool has(const std::vector<egress::AllowRule>& rules, const egress::AllowRule& r) {
    return std::any_of(rules.begin(), rules.end(),
                       [&](const egress::AllowRule& x) { return x.text() == r.text(); });
}

void remove(std::vector<egress::AllowRule>& rules, const egress::AllowRule& r) {
    std::erase_if(rules, [&](const egress::AllowRule& x) { return x.text() == r.text(); });
}

std::string joined(const std::vector<egress::AllowRule>& rules) {
    std::string out;
    for (const auto& r : rules) out += (out.empty() ? "" : ", ") + r.text();
    return out.empty() ? "(none)" : out;
}

// A bad rule or policy file is a usage error; anything else is reported as every command does.
int policy_error(const std::exception& e) noexcept {
    if (dynamic_cast<const egress::PolicyError*>(&e) == nullptr)
        return report_error(e, CommandKind::other, "policy");
    log::error("policy", "{}", e.what());
    return kExitUsage;
}

// The rules of `policy`, one text, to tell whether a command changed any.
std::string policy_text(const egress::OperatorPolicy& policy) {
    std::string out = joined(policy.deny);
    for (const auto& [id, t] : policy.turns)
        out += "\n" + id + ": " + joined(t.allow) + " / " + joined(t.deny);
    return out;
}

// The policy log's line for a change: when, by whom (the real uid and its name, and the user
// sudo says ran it), which command, its rules and the turn it was limited to.
std::string policy_event(const PolicyOptions& o, std::string_view command,
                         const std::vector<egress::AllowRule>& rules) {
    const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    nlohmann::ordered_json j;
    j["at"] = turn::format_timestamp_ms(now);
    const uid_t uid = ::getuid();
    j["uid"] = uid;
    std::vector<char> buf(16384);
    passwd pw{};
    passwd* found = nullptr;
    if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr)
        j["user"] = found->pw_name;
    if (const char* sudo = std::getenv("SUDO_USER"); sudo != nullptr) j["sudoUser"] = sudo;
    j["change"] = command;
    auto texts = nlohmann::ordered_json::array();
    for (const auto& r : rules) texts.push_back(r.text());
    j["rules"] = texts;
    j["turn"] = o.turn_id.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(o.turn_id);
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The change itself (change_policy, below).
template <typename Change>
int change_policy_file(const PolicyOptions& o, std::string_view command, Change change) {
    try {
        const auto cfg = load_config(o.config_file);
        const auto rules = parse_rules(o.rules);
        const std::string path = egress::operator_policy_path(cfg.state_dir);
        std::error_code ec;
        if (!std::filesystem::is_directory(cfg.state_dir, ec)) {
            log::error("policy",
                       "no state directory at '{}' (run.stateDir): no turn has run with this "
                       "config; start radiald once, or name the right --config",
                       cfg.state_dir);
            return kExitFailed;
        }
        egress::OperatorPolicyLock lock(path);
        auto policy = egress::read_operator_policy(path);
        const auto running = running_turns(cfg);
        std::erase_if(policy.turns, [&](const auto& t) { return !running.contains(t.first); });
        if (!o.turn_id.empty() && !running.contains(o.turn_id)) {
            log::error("policy",
                       "turn '{}' is not running; a turn's own rules change only while it runs "
                       "('radiald status' lists the running ones)",
                       o.turn_id);
            return kExitFailed;
        }
        const std::string before = policy_text(policy);
        if (const int status = change(cfg, policy, rules); status != kExitOk) return status;
        egress::write_operator_policy(path, policy);
        if (policy_text(policy) == before) return kExitOk; // nothing changed: no line
        // Who changed what, after the change took (docs/design.md §9.7): the file is rewritten,
        // this log only appended to.
        const std::string events = egress::operator_policy_events_path(cfg.state_dir);
        try {
            fs_util::append_line(events, policy_event(o, command, rules) + "\n");
        } catch (const std::exception& e) {
            log::error("policy", "the change is made, but its line in the policy's log is not: {}",
                       e.what());
            return kExitFailed;
        }
        return kExitOk;
    } catch (const std::exception& e) {
        return policy_error(e);
    }
}

// Changes the policy file under its lock: `change` gets the policy and the running turns, and
// returns an exit status, saying in `done` what it changed; the file is written only when it
// returns 0, and `done` printed once the change took. Changes kept for turns that are no longer
// running are dropped on the way.
template <typename Change>
int change_policy(const PolicyOptions& o, std::string_view command, Change change) {
    std::vector<std::string> done;
    const int status = change_policy_file(o, command, [&](auto&&... args) {
        return change(std::forward<decltype(args)>(args)..., done);
    });
    if (status == kExitOk)
        for (const auto& line : done) fmt::print("{}\n", line);
    return status;
}

} // namespace

PolicyCommands add_policy_commands(CLI::App& app, PolicyOptions& o) {
    auto* policy = app.add_subcommand(
        "policy", "Change brokered egress while turns run (the ceiling stays [run.egress])");
    policy->require_subcommand(1);
    PolicyCommands c;
    c.ls =
        policy->add_subcommand("ls", "Print the ceiling, what is denied and each turn's changes");
    c.allow = policy->add_subcommand(
        "allow", "Add HOST:PORT to a running turn (--turn; within the ceiling), or lift a deny");
    c.deny = policy->add_subcommand(
        "deny", "Deny HOST:PORT to every turn (or --turn one): open connections to it close");
    for (auto* cmd : {c.ls, c.allow, c.deny})
        cmd->add_option("--config", o.config_file, "Config file (TOML)")->check(CLI::ExistingFile);
    c.ls->add_flag("--json", o.json, "One JSON object instead of text");
    for (auto* cmd : {c.allow, c.deny}) {
        cmd->add_option("rules", o.rules, "HOST:PORT, or *.SUFFIX:PORT")->required();
        cmd->add_option("--turn", o.turn_id, "A running turn's id: change only its rules");
    }
    return c;
}

int run_policy_ls(const PolicyOptions& o) {
    try {
        const auto cfg = load_config(o.config_file);
        const auto policy =
            egress::read_operator_policy(egress::operator_policy_path(cfg.state_dir));
        const auto running = running_turns(cfg);
        // The ceiling each running turn's broker bounds additions by (as its turn started).
        std::map<std::string, std::vector<egress::AllowRule>> brokers;
        for (const auto& id : running)
            if (auto c =
                    egress::read_broker_ceiling(egress::broker_ceiling_path(cfg.state_dir, id)))
                brokers[id] = std::move(*c);
        if (o.json) {
            nlohmann::ordered_json j;
            auto texts = [](const std::vector<egress::AllowRule>& rules) {
                auto a = nlohmann::ordered_json::array();
                for (const auto& r : rules) a.push_back(r.text());
                return a;
            };
            j["ceiling"] = texts(cfg.egress.allow);
            j["deny"] = texts(policy.deny);
            j["turns"] = nlohmann::ordered_json::object();
            for (const auto& [id, t] : policy.turns)
                if (running.contains(id))
                    j["turns"][id] = {{"allow", texts(t.allow)}, {"deny", texts(t.deny)}};
            j["brokers"] = nlohmann::ordered_json::object();
            for (const auto& [id, c] : brokers) j["brokers"][id] = {{"ceiling", texts(c)}};
            fmt::print("{}\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
            return kExitOk;
        }
        fmt::print("ceiling ([run.egress] allow in '{}'): {}\n",
                   cfg.file.empty() ? std::string("the defaults") : cfg.file,
                   joined(cfg.egress.allow));
        fmt::print("denied to every turn: {}\n", joined(policy.deny));
        for (const auto& [id, t] : policy.turns)
            if (running.contains(id))
                fmt::print("turn {}: added {}; denied {}\n", id, joined(t.allow), joined(t.deny));
        // A turn started under another ceiling keeps it: said where it differs.
        for (const auto& [id, c] : brokers)
            if (joined(c) != joined(cfg.egress.allow))
                fmt::print("turn {}: its broker keeps the ceiling it started with: {}\n", id,
                           joined(c));
        return kExitOk;
    } catch (const std::exception& e) {
        return policy_error(e);
    }
}

int run_policy_allow(const PolicyOptions& o) {
    return change_policy(
        o, "allow",
        [&](const config::HostConfig& cfg, egress::OperatorPolicy& policy,
            const std::vector<egress::AllowRule>& rules, std::vector<std::string>& done) {
            for (const auto& r : rules) {
                if (o.turn_id.empty()) {
                    if (!has(policy.deny, r)) {
                        log::error("policy",
                                   "{} is not denied to every turn ('radiald policy ls' lists what "
                                   "is); the ceiling itself is [run.egress] allow in the config",
                                   r.text());
                        return kExitFailed;
                    }
                    remove(policy.deny, r);
                    done.push_back(fmt::format("no longer denied to every turn: {}", r.text()));
                    continue;
                }
                // The turn's broker bounds it by the ceiling its turn started with, which a config
                // edited since does not change: that one is judged, as the broker will.
                // No broker yet (a claimed turn before its box starts), none any more, or none at
                // all (no egress, a runtime's own policy): the rule is kept, judged by the file's
                // ceiling, and a broker that starts applies it within its own.
                const auto ceiling = egress::read_broker_ceiling(
                    egress::broker_ceiling_path(cfg.state_dir, o.turn_id));
                try {
                    auto bound = cfg.egress;
                    if (ceiling) bound.allow = *ceiling;
                    egress::narrow(bound, {r.text()}); // the ceiling still bounds a turn
                } catch (const egress::PolicyError& e) {
                    if (ceiling)
                        log::error("policy", "{} (the ceiling turn {} started with: {})", e.what(),
                                   o.turn_id, joined(*ceiling));
                    else
                        log::error("policy", "{}", e.what());
                    return kExitFailed;
                }
                auto& t = policy.turns[o.turn_id];
                remove(t.deny, r);
                if (!ceiling)
                    done.push_back(fmt::format(
                        "turn {}: {} kept for its egress broker, which does not run now (it has "
                        "not started yet, or has ended; a turn given no egress destination, or "
                        "whose runtime enforces egress itself, has none, and reaches nothing "
                        "through this rule)",
                        o.turn_id, r.text()));
                else
                    done.push_back(fmt::format("turn {} may {} reach {}", o.turn_id,
                                               has(t.allow, r) ? "already" : "now", r.text()));
                if (!has(t.allow, r)) t.allow.push_back(r);
                for (const auto& d : policy.deny)
                    if (egress::covers(d, r))
                        log::warn("policy",
                                  "{} is added to turn {}, but denied to every turn by {} until "
                                  "'radiald policy allow {}'",
                                  r.text(), o.turn_id, d.text(), d.text());
            }
            return kExitOk;
        });
}

int run_policy_deny(const PolicyOptions& o) {
    return change_policy(
        o, "deny",
        [&](const config::HostConfig& cfg, egress::OperatorPolicy& policy,
            const std::vector<egress::AllowRule>& rules, std::vector<std::string>& done) {
            for (const auto& r : rules) {
                // Harmless (no turn reaches what the ceiling leaves out), but likely a typo of a
                // destination that is in it: said, and denied all the same. Not for an IP
                // literal: it denies the address a name of the ceiling leads to as well.
                boost::system::error_code literal_ec;
                boost::asio::ip::make_address(r.host, literal_ec);
                if (literal_ec && std::none_of(cfg.egress.allow.begin(), cfg.egress.allow.end(),
                                               [&](const egress::AllowRule& c) {
                                                   return egress::covers(c, r) ||
                                                          egress::covers(r, c);
                                               }))
                    log::warn("policy",
                              "{} is outside the ceiling ([run.egress] allow: {}), which no turn "
                              "reaches anyway; denied all the same (check its spelling)",
                              r.text(), joined(cfg.egress.allow));
                auto& deny = o.turn_id.empty() ? policy.deny : policy.turns[o.turn_id].deny;
                const std::string whom =
                    o.turn_id.empty() ? std::string("every turn") : "turn " + o.turn_id;
                done.push_back(fmt::format("{}denied to {}: {}", has(deny, r) ? "already " : "",
                                           whom, r.text()));
                if (!has(deny, r)) deny.push_back(r);
                if (!o.turn_id.empty()) remove(policy.turns[o.turn_id].allow, r);
            }
            return kExitOk;
        });
}

} // namespace radial::cli
