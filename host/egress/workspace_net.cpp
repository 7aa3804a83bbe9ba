#include "egress/workspace_net.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace radial::egress {

namespace {

std::string canonical(const std::string& dir) {
    std::error_code ec;
    auto p = std::filesystem::weakly_canonical(dir, ec);
    std::string out = ec ? std::filesystem::path(dir).lexically_normal().string() : p.string();
    // A part that does not exist keeps its trailing '/': "/srv/x/" is "/srv/x".
    while (out.size() > 1 && out.back() == '/') out.pop_back();
    return out;
}

bool has(const std::vector<std::string>& list, const std::string& item) {
    return std::find(list.begin(), list.end(), item) != list.end();
}

} // namespace

std::string WorkspaceNet::identity_of(const std::string& dir) const {
    if (dir.empty()) return {};
    const std::string want = canonical(dir);
    for (const auto& [name, ws] : workspaces)
        if (canonical(ws.path) == want) return name;
    return {};
}

bool valid_net_name(std::string_view name) {
    if (name.empty() || name.size() > 63 || name.front() == '-' || name.back() == '-') return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    });
}

bool is_service_host(std::string_view host) {
    // The suffix itself ("radial", no dot) is no service either, but is as reserved.
    return host.ends_with(kServiceSuffix) || host == kServiceSuffix.substr(1);
}

std::optional<ServiceName> parse_service_host(std::string_view host) {
    if (!host.ends_with(kServiceSuffix)) return std::nullopt;
    const std::string_view rest = host.substr(0, host.size() - kServiceSuffix.size());
    const auto dot = rest.find('.');
    if (dot == std::string_view::npos) return std::nullopt;
    ServiceName n{std::string(rest.substr(0, dot)), std::string(rest.substr(dot + 1))};
    if (!valid_net_name(n.service) || !valid_net_name(n.workspace)) return std::nullopt;
    return n;
}

std::string edge_refusal(const WorkspaceNet& net, const std::string& peer,
                         const ServiceName& target, std::uint16_t port) {
    const std::string dest =
        fmt::format("{}.{}{}:{}", target.service, target.workspace, kServiceSuffix, port);
    if (peer.empty())
        return fmt::format(
            "{}: the turn's workspace is none of run.workspaces, so it has no identity to reach "
            "a service with",
            dest);
    const auto serving = net.workspaces.find(target.workspace);
    if (serving == net.workspaces.end())
        return fmt::format("{}: no workspace '{}' in run.workspaces", dest, target.workspace);
    const auto svc = serving->second.serve.find(target.service);
    if (svc == serving->second.serve.end())
        return fmt::format("{}: run.workspaces.{}.serve has no service '{}'", dest,
                           target.workspace, target.service);
    if (svc->second.port != port)
        return fmt::format("{}: run.workspaces.{}.serve.{} is port {}", dest, target.workspace,
                           target.service, svc->second.port);
    const bool served_to_peer = has(svc->second.peers, peer);
    // The peer's name comes from another radiald on the same state directory, whose config may
    // name workspaces this one does not: none here is no approval here.
    const auto mine = net.workspaces.find(peer);
    if (mine == net.workspaces.end())
        return fmt::format("{}: no workspace '{}' in this radiald's run.workspaces", dest, peer);
    const bool reached_by_peer = has(mine->second.reach, target.service + "." + target.workspace);
    if (!served_to_peer || !reached_by_peer)
        return fmt::format(
            "{}: no edge from workspace '{}': both sides must approve it, and {}{}{}", dest, peer,
            served_to_peer ? ""
                           : fmt::format("run.workspaces.{}.serve.{}.peers does not name '{}'",
                                         target.workspace, target.service, peer),
            !served_to_peer && !reached_by_peer ? ", and " : "",
            reached_by_peer ? ""
                            : fmt::format("run.workspaces.{}.reach does not name '{}.{}'", peer,
                                          target.service, target.workspace));
    return {};
}

std::string offer_refusal(const WorkspaceNet& net, const std::string& identity,
                          const std::string& service) {
    if (identity.empty())
        return fmt::format(
            "offer '{}': the turn's workspace is none of run.workspaces, so it has no identity "
            "to offer a service under; pass --workspace with a configured workspace's path",
            service);
    const auto found = net.workspaces.find(identity);
    if (found == net.workspaces.end())
        return fmt::format("offer '{}': no workspace '{}' in run.workspaces", service, identity);
    const auto& ws = found->second;
    if (ws.serve.find(service) == ws.serve.end())
        return fmt::format("offer '{}': run.workspaces.{}.serve has no such service", service,
                           identity);
    return {};
}

std::vector<std::string> net_problems(const WorkspaceNet& net) {
    std::vector<std::string> out;
    std::map<std::string, std::string> by_path;
    for (const auto& [name, ws] : net.workspaces) {
        const std::string p = canonical(ws.path);
        if (auto [it, fresh] = by_path.emplace(p, name); !fresh)
            out.push_back(fmt::format(
                "run.workspaces.{}.path: '{}' is also workspace '{}'; one directory is one "
                "identity",
                name, ws.path, it->second));
        for (const auto& [svc, s] : ws.serve)
            for (const auto& peer : s.peers) {
                if (peer == name)
                    out.push_back(fmt::format(
                        "run.workspaces.{}.serve.{}.peers: names its own workspace; a turn "
                        "reaches its own box's services on its loopback",
                        name, svc));
                else if (!net.workspaces.contains(peer))
                    out.push_back(
                        fmt::format("run.workspaces.{}.serve.{}.peers: no workspace '{}' in "
                                    "run.workspaces",
                                    name, svc, peer));
            }
        for (const auto& r : ws.reach) {
            const auto dot = r.find('.');
            const std::string svc = r.substr(0, dot), other = r.substr(dot + 1);
            const auto it = net.workspaces.find(other);
            if (other == name)
                out.push_back(
                    fmt::format("run.workspaces.{}.reach: '{}' is its own service", name, r));
            else if (it == net.workspaces.end())
                out.push_back(fmt::format(
                    "run.workspaces.{}.reach: '{}' names no workspace '{}' of run.workspaces", name,
                    r, other));
            else if (!it->second.serve.contains(svc))
                out.push_back(fmt::format(
                    "run.workspaces.{}.reach: '{}': run.workspaces.{}.serve has no service '{}'",
                    name, r, other, svc));
        }
    }
    return out;
}

} // namespace radial::egress
