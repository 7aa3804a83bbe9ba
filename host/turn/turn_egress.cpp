#include "turn/turn_egress.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "log/logger.h"
#include "redaction/cut_text.h"
#include "turn/turn_session.h"
#include "turn/turn_setup_error.h"

namespace radial::turn {

std::string receipt_json(const egress::Receipt& r, const redaction::Redactor& redactor) {
    nlohmann::ordered_json j;
    j["kind"] = r.kind;
    j["destination"] = redaction::redact_cut(redactor, r.destination);
    j["address"] = r.address;
    j["verdict"] = r.verdict;
    j["reason"] = redaction::redact_cut(redactor, r.reason);
    j["via"] = r.via;
    j["bytesOut"] = r.bytes_out;
    j["bytesIn"] = r.bytes_in;
    j["startedAt"] = r.started_ms;
    j["endedAt"] = r.ended_ms;
    if (!r.peer.empty()) j["peer"] = r.peer;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

// A broker is reached through the turn's socket directory, which a check has not, and is no
// boundary beside a network of the box's own (docs/design.md §9.7). `what` names the request's
// field, `use` what unsetting run.network allows.
void refuse_unbrokered(const TurnRequest& req, const config::HostConfig& cfg, std::string_view what,
                       std::string_view use) {
    if (req.kind == RequestKind::check)
        throw RequestError(fmt::format(
            "{}: a check gets no {} (it has no turn socket directory to reach a broker through); "
            "run it as a turn",
            what, what));
    if (!cfg.network.empty())
        throw RequestError(
            fmt::format("{}: boxes here join network '{}' (run.network), so a broker would be no "
                        "boundary; unset run.network to {}",
                        what, cfg.network, use));
}

} // namespace

std::vector<egress::AllowRule> turn_egress_rules(const TurnRequest& req,
                                                 const config::HostConfig& cfg) {
    if (req.egress.empty()) return {};
    refuse_unbrokered(req, cfg, "egress", "broker egress");
    std::vector<egress::AllowRule> rules;
    egress::OperatorPolicy policy;
    try {
        // A service of another workspace (SERVICE.WORKSPACE.radial) is judged by the edges of
        // run.workspaces, never by run.egress.allow (docs/design.md §9.7, "Between boxes").
        std::vector<std::string> ordinary;
        std::vector<egress::AllowRule> edges;
        const std::string me = cfg.workspaces.identity_of(req.workspace);
        for (const auto& text : req.egress) {
            auto rule = egress::parse_allow_rule(text);
            if (!egress::is_service_host(rule.host)) {
                ordinary.push_back(text);
                continue;
            }
            const auto name = egress::parse_service_host(rule.host);
            if (!name)
                throw RequestError(fmt::format(
                    "egress '{}': a name under '{}' is a service of run.workspaces, written "
                    "SERVICE.WORKSPACE{}:PORT (such as api.backend{}:8080)",
                    rule.text(), egress::kServiceSuffix, egress::kServiceSuffix,
                    egress::kServiceSuffix));
            if (const auto why = egress::edge_refusal(cfg.workspaces, me, *name, rule.port);
                !why.empty())
                throw RequestError("egress " + why);
            edges.push_back(std::move(rule));
        }
        rules = egress::narrow(cfg.egress, ordinary);
        rules.insert(rules.end(), edges.begin(), edges.end());
        policy = egress::read_operator_policy(egress::operator_policy_path(cfg.state_dir));
    } catch (const egress::PolicyError& e) {
        throw RequestError(e.what());
    }
    // What the operator denies for every turn is refused before a box exists, as the ceiling is.
    for (const auto& r : rules)
        for (const auto& d : policy.deny)
            if (egress::covers(d, r))
                throw RequestError(fmt::format(
                    "egress: {} is denied to every turn by the operator ('radiald policy deny {}'; "
                    "'radiald policy allow {}' lifts it)",
                    r.text(), d.text(), d.text()));
    return rules;
}

std::map<std::string, std::uint16_t> turn_offers(const TurnRequest& req,
                                                 const config::HostConfig& cfg) {
    if (req.offer.empty()) return {};
    refuse_unbrokered(req, cfg, "offer", "offer services");
    if (!req.session.empty())
        throw RequestError(
            "offer: a session's turn cannot offer a service yet (its box was made without the "
            "service ports); run the serving turn without --session");
    const std::string me = cfg.workspaces.identity_of(req.workspace);
    std::map<std::string, std::uint16_t> out;
    for (const auto& service : req.offer) {
        if (const auto why = egress::offer_refusal(cfg.workspaces, me, service); !why.empty())
            throw RequestError(why);
        out[service] = cfg.workspaces.workspaces.at(me).serve.at(service).port;
    }
    return out;
}

bool egress_by_runtime(const host::RuntimeClient& client) {
    return !client.has_capability(RADIAL_CAP_EGRESS_ENDPOINT) &&
           client.has_capability(RADIAL_CAP_EGRESS_POLICY);
}

void hand_egress_to_runtime(const std::vector<egress::AllowRule>& rules,
                            const config::HostConfig& cfg, const host::RuntimeClient& client,
                            bool session_turn, ContainerSpec& spec) {
    for (const auto& r : rules)
        if (egress::is_service_host(r.host))
            throw TurnSetupError(fmt::format(
                "egress: {} is a service of another workspace, reached only through radiald's "
                "broker; runtime '{}' enforces egress with its own policy. Run the turn on a "
                "runtime with radiald's broker (docker)",
                r.text(), client.info().id));
    if (!cfg.egress.runtime_policy)
        throw TurnSetupError(fmt::format(
            "egress: runtime '{}' enforces egress with its own policy, which keeps no "
            "radial.egress receipts and none of run.egress's quotas, connection cap, ranges or "
            "hosts, nor 'radiald policy' changes; set run.egress.runtimePolicy = true to accept "
            "that, or run the turn on a runtime with radiald's broker (docker)",
            client.info().id));
    if (session_turn)
        throw TurnSetupError(fmt::format(
            "egress: runtime '{}' enforces egress with its own policy, set when a box is made; a "
            "session's turn is an exec in a box made before it. Run the turn without --session, "
            "or create the session on a runtime with radiald's broker (docker)",
            client.info().id));
    for (const auto& r : rules) spec.egress.push_back(r.text());
    log::info("egress",
              "runtime '{}' enforces the turn's {} egress destination(s) with its own policy "
              "(docs/design.md §9.7): no radial.egress receipts, no run.egress quotas, ranges or "
              "hosts map, and 'radiald policy' does not reach this turn",
              client.info().id, rules.size());
}

std::unique_ptr<egress::EgressBroker> open_turn_egress(
    const std::vector<egress::AllowRule>& rules, const config::HostConfig& cfg,
    const host::RuntimeClient& client, const std::string& socket_dir, const std::string& turn_id,
    std::optional<std::pair<uid_t, gid_t>> owner, ContainerSpec& spec,
    std::function<redaction::Redactor()> redactor,
    std::function<void(const std::string& type, const std::string& receipt_json)> store,
    const TurnEdges& edges) {
    if (rules.empty() && edges.offers.empty()) return nullptr;
    if (!client.has_capability(RADIAL_CAP_EGRESS_ENDPOINT))
        throw TurnSetupError(fmt::format(
            "egress: runtime '{}' gives its boxes no egress endpoint and enforces no egress "
            "policy of its own (it reports neither {} nor {}; the docker runtime does the first "
            "with run.docker.boxInit, the sandbox runtime the second); run the turn without "
            "egress or select such a runtime",
            client.info().id, RADIAL_CAP_EGRESS_ENDPOINT, RADIAL_CAP_EGRESS_POLICY));
    egress::EgressBrokerOptions o;
    o.unix_path = socket_dir + "/egress.sock";
    o.owner = owner;
    o.ceiling = cfg.egress;
    o.rules = rules;
    o.policy_path = egress::operator_policy_path(cfg.state_dir);
    o.turn_id = turn_id;
    o.ceiling_note = egress::broker_ceiling_path(cfg.state_dir, turn_id);
    o.on_open = [store, redactor](const egress::Receipt& r) {
        store(kEgressOpenRecordType, receipt_json(r, redactor()));
    };
    o.on_receipt = [store, redactor](const egress::Receipt& r) {
        store(kEgressRecordType, receipt_json(r, redactor()));
    };
    o.on_log = [](const std::string& line) { log::warn("egress", "{}", line); };
    o.services_dir = services_dir(cfg.state_dir);
    o.workspace = edges.workspace;
    o.net = cfg.workspaces;
    o.offers = edges.offers;
    std::unique_ptr<egress::EgressBroker> broker;
    try {
        broker = std::make_unique<egress::EgressBroker>(std::move(o));
    } catch (const std::exception& e) {
        throw TurnSetupError(fmt::format("egress: {}", e.what()));
    }
    spec.env.push_back(
        {std::string(kEgressSocketEnv), fmt::format("{}/egress.sock", kBoxSocketDir), false});
    for (auto name : kEgressProxyEnv)
        spec.env.push_back({std::string(name), kEgressProxyUrl, false});
    for (auto name : kEgressNoProxyEnv)
        spec.env.push_back({std::string(name), "localhost,127.0.0.1,::1", false});
    if (!edges.offers.empty()) {
        std::string ports;
        for (const auto& [service, port] : edges.offers)
            ports += (ports.empty() ? "" : ",") + std::to_string(port);
        spec.env.push_back({std::string(kOfferPortsEnv), ports, false});
    }
    return broker;
}

std::string services_dir(const std::string& state_dir) { return state_dir + "/services"; }

} // namespace radial::turn
