// host/turn/turn_egress.h — a turn's brokered egress (docs/design.md §9.7): its broker, bound in
// the turn's socket directory, the variables that point the box's tools at radial-init's
// loopback endpoint, and a receipt per connection in the turn's journal.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <radial/container_spec.hpp>
#include <radial/host/runtime_client.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "config/host_config.h"
#include "egress/egress_broker.h"
#include "redaction/stream_redactor.h"
#include "turn/turn_request.h"

namespace radial::turn {

// The journal record type of a receipt, as `radiald records TURN` shows it.
inline constexpr const char* kEgressRecordType = "radial.egress";
// The record of a connection just opened (its receipt follows when it ends): one with no receipt
// after it was open when radiald stopped.
inline constexpr const char* kEgressOpenRecordType = "radial.egress.open";
// Where the box reaches radial-init's end: HTTP_PROXY and friends name it.
inline constexpr const char* kEgressProxyUrl = "http://127.0.0.1:3128";
// The variable naming the broker's socket in the box, and those that lead the box's tools to the
// proxy (kEgressProxyUrl) — all set by radiald, never by a request (request_policy.h).
inline constexpr std::string_view kEgressSocketEnv = "RADIAL_EGRESS_SOCKET";
inline constexpr std::string_view kEgressProxyEnv[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
                                                       "https_proxy"};
inline constexpr std::string_view kEgressNoProxyEnv[] = {"NO_PROXY", "no_proxy"};
// The port radial-init's endpoint listens on in the box (3128 unless set; never set by radiald,
// whose proxy variables name 3128): a request's value would part the endpoint from them.
inline constexpr std::string_view kEgressPortEnv = "RADIAL_EGRESS_PORT";
// The ports of the services the turn offers ("8080,9090"), for radial-init's control connection
// to the broker (docs/design.md §9.7, "Between boxes"); set by radiald only.
inline constexpr std::string_view kOfferPortsEnv = "RADIAL_OFFER_PORTS";

// A receipt as the journal keeps it: {"kind", "destination", "address", "verdict", "reason",
// "via", "bytesOut", "bytesIn", "startedAt", "endedAt", "peer"?} (times in Unix epoch ms; "peer"
// the peer turn of a SERVED receipt). The destination
// and reason were cut to a bounded length by the broker before anything could redact them: each
// is redacted with redact_cut (redaction/cut_text.h), so a secret a cut ended shows no start
// either. Pure.
std::string receipt_json(const egress::Receipt& r, const redaction::Redactor& redactor);

// The turn's rules: `req.egress` narrowed to `cfg.egress` (egress_policy.h narrow()). Throws
// RequestError naming the entry (outside the ceiling, unreadable), or when the request is a check
// (no socket directory to reach a broker through) or the box would have a network of its own
// (run.network: brokering it would be no boundary), or an entry the operator denies to every turn
// (`radiald policy deny`). Empty when the request names no egress.
std::vector<egress::AllowRule> turn_egress_rules(const TurnRequest& req,
                                                 const config::HostConfig& cfg);

// The services the turn offers (`req.offer`), each with its port in the box: each must be a
// service its workspace serves (run.workspaces.<identity>.serve). Throws RequestError naming the
// service, or for a check, a session's turn (not yet) or a box on run.network. Empty when the
// request offers none.
std::map<std::string, std::uint16_t> turn_offers(const TurnRequest& req,
                                                 const config::HostConfig& cfg);

// The turn's place among the workspaces (docs/design.md §9.7, "Between boxes").
struct TurnEdges {
    std::string workspace;                       // its identity; empty: none
    std::map<std::string, std::uint16_t> offers; // turn_offers()
};

// `<state_dir>/services`: where offered services' sockets live.
std::string services_dir(const std::string& state_dir);

// Whether the runtime enforces egress destinations itself (RADIAL_CAP_EGRESS_POLICY) instead of
// giving its boxes radial-init's endpoint to radiald's broker.
bool egress_by_runtime(const host::RuntimeClient& client);

// Hands the turn's rules to such a runtime (`spec.egress`, sent as a radial_spec_egress) and logs
// what it leaves out: receipts, quotas, the ceiling's address ranges and name map, and `radiald
// policy` changes while the turn runs. Throws TurnSetupError for a session's turn (an exec carries
// no spec to chain the destinations to), or unless the operator accepted that
// (run.egress.runtimePolicy).
void hand_egress_to_runtime(const std::vector<egress::AllowRule>& rules,
                            const config::HostConfig& cfg, const host::RuntimeClient& client,
                            bool session_turn, ContainerSpec& spec);

// Starts the turn's broker at `socket_dir`/egress.sock (owned by `owner` when set), under the
// operator's changes for every turn and for `turn_id` (`radiald policy`), and adds to
// `spec.env` what the box's tools need: RADIAL_EGRESS_SOCKET, HTTP_PROXY, HTTPS_PROXY (and their
// lowercase forms) and NO_PROXY for loopback; and, for a turn that offers services (`edges`),
// RADIAL_OFFER_PORTS for radial-init's control connection, the broker claiming each service.
// `store` gets each receipt's record type and JSON (kEgressOpenRecordType when a connection opens,
// kEgressRecordType when an attempt ends), its cut texts redacted by what `redactor` returns then
// (the turn's secrets as they are at that moment: they may grow, redaction/growing_redactor.h;
// redaction/cut_text.h). Throws TurnSetupError when the runtime's boxes have no egress endpoint
// (radial.cap.egress-endpoint) or the socket cannot be bound, or another live turn serves an
// offered service. Empty `rules` and no offer: nothing is started and nullptr returned.
std::unique_ptr<egress::EgressBroker> open_turn_egress(
    const std::vector<egress::AllowRule>& rules, const config::HostConfig& cfg,
    const host::RuntimeClient& client, const std::string& socket_dir, const std::string& turn_id,
    std::optional<std::pair<uid_t, gid_t>> owner, ContainerSpec& spec,
    std::function<redaction::Redactor()> redactor,
    std::function<void(const std::string& type, const std::string& receipt_json)> store,
    const TurnEdges& edges = {});

} // namespace radial::turn
