// host/egress/workspace_net.h — workspace identities and the edges between them
// (docs/design.md §9.7, "Between boxes"): the operator names directories as workspaces
// ([run.workspaces.NAME]), each says which services its turns may offer and who may reach each
// (serve), and which services of other workspaces its turns may reach (reach). An edge exists only
// when both say so. A peer names a service as the destination "SERVICE.WORKSPACE.radial:PORT",
// a reserved suffix that is never resolved. Pure data and pure judgments: [thread-safe].
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace radial::egress {

// The reserved suffix of a service destination: such a name is judged against the edges and
// reached through the serving turn's broker, never looked up by DNS or run.egress.hosts.
inline constexpr std::string_view kServiceSuffix = ".radial";

// A service a workspace's turns may offer.
struct ServedService {
    std::uint16_t port = 0;         // the port in the serving box's loopback, 1..65535
    std::vector<std::string> peers; // the workspaces that may reach it
};

// One [run.workspaces.NAME] table.
struct Workspace {
    std::string path;                           // absolute, as written
    std::map<std::string, ServedService> serve; // by service name
    std::vector<std::string> reach;             // "SERVICE.WORKSPACE" of other workspaces
};

// [run.workspaces]: every workspace by name.
struct WorkspaceNet {
    std::map<std::string, Workspace> workspaces;
    // The name of the workspace whose path is `dir` (both canonicalised, symlinks followed), or
    // empty when none is: a turn without such a workspace has no identity and gets no edge.
    std::string identity_of(const std::string& dir) const;
};

// A service destination's parts.
struct ServiceName {
    std::string service, workspace;
};

// Whether `name` is a workspace or service name: 1..63 of [a-z0-9-], not starting or ending
// with '-' (a DNS label, since both form the destination's name).
bool valid_net_name(std::string_view name);

// Whether `host` (lowercase) ends in the reserved suffix.
bool is_service_host(std::string_view host);

// "SERVICE.WORKSPACE.radial" → its parts; nullopt when `host` is not exactly that shape.
std::optional<ServiceName> parse_service_host(std::string_view host);

// Why the turn of workspace `peer` (empty: a turn with no identity) may not reach `service` of
// `serving` at `port`, or empty when the edge exists: `serving` lists `peer` among the service's
// peers AND `peer` lists "SERVICE.SERVING" in reach, and `port` is the service's port.
std::string edge_refusal(const WorkspaceNet& net, const std::string& peer,
                         const ServiceName& target, std::uint16_t port);

// Why the turn of workspace `identity` (empty: none) may not offer `service`, or empty.
std::string offer_refusal(const WorkspaceNet& net, const std::string& identity,
                          const std::string& service);

// Problems in `net` as a whole (each naming its key): a peer or reach naming an unknown workspace
// or service, a workspace reaching itself, two workspaces with one path. Empty when it is sound.
std::vector<std::string> net_problems(const WorkspaceNet& net);

} // namespace radial::egress
