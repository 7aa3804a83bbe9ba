#include "config/workspace_keys.h"

#include <fmt/format.h>

#include "config/key_table.h"

namespace radial::config {

namespace {

constexpr const char* kNameRule = "1 to 63 of a-z, 0-9 and '-', not starting or ending with '-'";

void name_of(Reader& r, const std::string& key, const std::string& name, const char* what) {
    if (!egress::valid_net_name(name))
        r.fail(key, fmt::format("'{}' is no {} name: {}", name, what, kNameRule));
}

void read_service(Reader& r, const std::string& key, const toml::node& v,
                  egress::ServedService& out) {
    r.remember(key, v);
    const auto* t = v.as_table();
    if (t == nullptr) r.fail(key, "must be a table: { port = 8080, peers = [\"frontend\"] }");
    bool has_port = false;
    const std::vector<KeyReader> readers{
        {"port",
         [&](const std::string& k, const toml::node& n) {
             r.remember(k, n);
             const auto* i = n.as_integer();
             if (i == nullptr || i->get() < 1 || i->get() > 65535)
                 r.fail(k, "must be a port from 1 to 65535 (in the serving box's loopback)");
             out.port = static_cast<std::uint16_t>(i->get());
             has_port = true;
         }},
        {"peers",
         [&](const std::string& k, const toml::node& n) {
             out.peers = r.strings(k, n);
             for (const auto& p : out.peers) name_of(r, k, p, "workspace");
         }},
    };
    read_keys(*t, key, readers, {"a served service", ""},
              [&](const std::string& k, const toml::node& n, const std::string& problem) {
                  r.remember(k, n);
                  r.fail(k, problem);
              });
    if (!has_port) r.fail(key, "names no port; write { port = 8080, peers = [\"frontend\"] }");
}

void read_workspace(Reader& r, const std::string& key, const toml::node& v,
                    egress::Workspace& out) {
    r.remember(key, v);
    const auto* t = v.as_table();
    if (t == nullptr) r.fail(key, "must be a table ([" + key + "])");
    const std::vector<KeyReader> readers{
        {"path",
         [&](const std::string& k, const toml::node& n) {
             out.path = r.string(k, n);
             if (out.path.empty() || out.path.front() != '/')
                 r.fail(k, "must be an absolute path: the directory a turn's --workspace names");
         }},
        {"serve",
         [&](const std::string& k, const toml::node& n) {
             r.remember(k, n);
             const auto* s = n.as_table();
             if (s == nullptr)
                 r.fail(k, "must be a table: { api = { port = 8080, peers = [\"frontend\"] } }");
             // radial-init takes the ports of at most 16 (plugins/box-init/egress_forward.c).
             if (s->size() > 16)
                 r.fail(k,
                        fmt::format("names {} services; a workspace serves at most 16", s->size()));
             for (const auto& [name, svc] : *s) {
                 const std::string sk = k + "." + std::string(name.str());
                 r.remember(sk, svc);
                 name_of(r, sk, std::string(name.str()), "service");
                 read_service(r, sk, svc, out.serve[std::string(name.str())]);
             }
         }},
        {"reach",
         [&](const std::string& k, const toml::node& n) {
             out.reach = r.strings(k, n);
             for (const auto& e : out.reach) {
                 const auto dot = e.find('.');
                 if (dot == std::string::npos || !egress::valid_net_name(e.substr(0, dot)) ||
                     !egress::valid_net_name(e.substr(dot + 1)))
                     r.fail(k, fmt::format("'{}' is not SERVICE.WORKSPACE (such as "
                                           "\"api.backend\"), each {}",
                                           e, kNameRule));
             }
         }},
    };
    read_keys(*t, key, readers, {"[run.workspaces.NAME]", ""},
              [&](const std::string& k, const toml::node& n, const std::string& problem) {
                  r.remember(k, n);
                  r.fail(k, problem);
              });
    if (out.path.empty()) r.fail(key, "names no path; write path = \"/srv/ws/NAME\"");
}

} // namespace

void read_workspaces(Reader& r, const std::string& key, const toml::table& table,
                     egress::WorkspaceNet& out) {
    for (const auto& [name, v] : table) {
        const std::string wk = key + "." + std::string(name.str());
        r.remember(wk, v);
        name_of(r, wk, std::string(name.str()), "workspace");
        read_workspace(r, wk, v, out.workspaces[std::string(name.str())]);
    }
    if (const auto problems = egress::net_problems(out); !problems.empty())
        r.fail(key, problems.front());
}

} // namespace radial::config
