// tests/host/egress/workspace_net_test.cpp — workspace identities and both-sided edges
// (host/egress/workspace_net.h, host/config/workspace_keys.h; docs/design.md §9.7 "Between
// boxes"): the config as radiald reads it, the judgment of an edge, and the refusals a request
// meets at submit (turn_egress_rules, turn_offers) before any box exists.
#include "egress/workspace_net.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "../../support/temp_dir.h"
#include "config/host_config.h"
#include "turn/request_policy.h"
#include "turn/turn_egress.h"
#include "turn/turn_request.h"

namespace radial::egress {
namespace {

using ::testing::HasSubstr;

std::string workspaces_toml(const test::TempDir& d, const std::string& backend_peers,
                            const std::string& frontend_reach) {
    return "[run.workspaces.backend]\npath = \"" + d.path() +
           "/backend\"\nserve = { api = { port = 8080, peers = [" + backend_peers +
           "] } }\n[run.workspaces.frontend]\npath = \"" + d.path() + "/frontend\"\nreach = [" +
           frontend_reach + "]\n";
}

config::HostConfig load_text(const test::TempDir& d, const std::string& text) {
    return config::load(d.write("radiald.toml", text), std::nullopt, "/opt/radial/bin");
}

std::string error_of(const test::TempDir& d, const std::string& text) {
    try {
        load_text(d, text);
    } catch (const config::ConfigError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(EgressWorkspaceEdges, TheConfigNamesIdentitiesAndBothSidesOfAnEdge) {
    test::TempDir d("radial-ws");
    std::filesystem::create_directories(d.path() + "/backend");
    const auto cfg = load_text(d, workspaces_toml(d, "\"frontend\"", "\"api.backend\""));
    const auto& net = cfg.workspaces;
    ASSERT_EQ(net.workspaces.size(), 2u);
    EXPECT_EQ(net.workspaces.at("backend").serve.at("api").port, 8080);
    // The identity is the canonical path: a trailing slash or a '..' names the same directory.
    EXPECT_EQ(net.identity_of(d.path() + "/backend/"), "backend");
    EXPECT_EQ(net.identity_of(d.path() + "/frontend/../backend"), "backend");
    EXPECT_EQ(net.identity_of(d.path() + "/elsewhere"), "");
    EXPECT_EQ(net.identity_of(""), "");
    EXPECT_EQ(edge_refusal(net, "frontend", {"api", "backend"}, 8080), "");
    EXPECT_THAT(edge_refusal(net, "frontend", {"api", "backend"}, 8081),
                HasSubstr("run.workspaces.backend.serve.api is port 8080"));
    EXPECT_THAT(edge_refusal(net, "", {"api", "backend"}, 8080), HasSubstr("no identity"));
    EXPECT_THAT(edge_refusal(net, "frontend", {"db", "backend"}, 8080),
                HasSubstr("has no service 'db'"));
    EXPECT_EQ(offer_refusal(net, "backend", "api"), "");
    EXPECT_THAT(offer_refusal(net, "frontend", "api"),
                HasSubstr("run.workspaces.frontend.serve has no such service"));
    EXPECT_THAT(offer_refusal(net, "", "api"), HasSubstr("no identity"));
    // A name another radiald's config gave (one state directory, two configs) is no approval
    // here, and no throw.
    EXPECT_THAT(edge_refusal(net, "elsewhere", {"api", "backend"}, 8080),
                HasSubstr("no workspace 'elsewhere' in this radiald's run.workspaces"));
    EXPECT_THAT(offer_refusal(net, "elsewhere", "api"), HasSubstr("no workspace 'elsewhere'"));
}

TEST(EgressWorkspaceEdges, AnEdgeNeedsBothSides) {
    test::TempDir d("radial-ws");
    // Only the serving side approves: frontend's reach names nothing (another workspace exists
    // so the config is sound).
    auto cfg = load_text(d, workspaces_toml(d, "\"frontend\"", ""));
    EXPECT_THAT(edge_refusal(cfg.workspaces, "frontend", {"api", "backend"}, 8080),
                HasSubstr("run.workspaces.frontend.reach does not name 'api.backend'"));
    // Only the reaching side approves.
    cfg = load_text(d, workspaces_toml(d, "", "\"api.backend\""));
    EXPECT_THAT(edge_refusal(cfg.workspaces, "frontend", {"api", "backend"}, 8080),
                HasSubstr("run.workspaces.backend.serve.api.peers does not name 'frontend'"));
    EXPECT_THAT(edge_refusal(cfg.workspaces, "backend", {"api", "backend"}, 8080),
                HasSubstr("no edge"));
}

TEST(EgressWorkspaceEdges, TheConfigIsReadStrictly) {
    test::TempDir d("radial-ws");
    const std::string base = workspaces_toml(d, "\"frontend\"", "\"api.backend\"");
    const std::string b = "[run.workspaces.b]\npath = \"/srv/b\"\n";
    // {the file, what its refusal says}
    const std::vector<std::pair<std::string, std::string>> cases{
        {base + "colour = \"red\"\n", "run.workspaces.frontend.colour: unknown key"},
        {"[run.workspaces.Back_End]\npath = \"/srv/x\"\n",
         "run.workspaces.Back_End: 'Back_End' is no workspace name"},
        {"[run.workspaces.b]\npath = \"rel\"\n", "run.workspaces.b.path: must be an absolute path"},
        {"[run.workspaces.b]\nreach = []\n", "run.workspaces.b: names no path"},
        {b + "serve = { api = { port = 70000 } }\n",
         "run.workspaces.b.serve.api.port: must be a port from 1 to 65535"},
        {b + "serve = { api = { peers = [] } }\n", "run.workspaces.b.serve.api: names no port"},
        {b + "serve = { api = { port = 1, host = \"x\" } }\n",
         "run.workspaces.b.serve.api.host: unknown key"},
        {b + "reach = [\"api\"]\n", "run.workspaces.b.reach: 'api' is not SERVICE.WORKSPACE"},
        // radial-init takes the ports of 16 services at most.
        {b + "serve = {" +
             [] {
                 std::string s;
                 for (int i = 0; i < 17; ++i)
                     s += (i ? ", " : " ") + std::string("s") + std::to_string(i) +
                          " = { port = " + std::to_string(8000 + i) + " }";
                 return s;
             }() +
             " }\n",
         "run.workspaces.b.serve: names 17 services; a workspace serves at most 16"},
        // A peer or a reach naming nothing configured is an error, not a warning: an edge that
        // cannot exist is a typo the operator should see at once.
        {b + "reach = [\"api.nowhere\"]\n",
         "run.workspaces.b.reach: 'api.nowhere' names no workspace 'nowhere'"},
        {workspaces_toml(d, "\"frontend\"", "\"db.backend\""),
         "run.workspaces.backend.serve has no service 'db'"},
        {workspaces_toml(d, "\"nobody\"", ""),
         "run.workspaces.backend.serve.api.peers: no workspace 'nobody'"},
        {"[run.workspaces.a]\npath = \"/srv/b/\"\n" + b, "is also workspace 'a'"},
        // The reserved suffix is the edges' alone: never an allow rule nor a name in hosts.
        {"[run.egress]\nallow = [\"api.backend.radial:8080\"]\n",
         "run.egress.allow: 'api.backend.radial' is under the reserved suffix"},
        {"[run.egress]\nallow = [\"*.radial:8080\"]\n", "reserved suffix"},
        {"[run.egress]\nallow = [\"x.test:1\"]\nhosts = { \"api.backend.radial\" = \"127.0.0.2\" "
         "}\n",
         "run.egress.hosts: 'api.backend.radial' is under the reserved suffix"},
    };
    for (const auto& [text, says] : cases) EXPECT_THAT(error_of(d, text), HasSubstr(says)) << text;
}

turn::TurnRequest request(const std::string& workspace) {
    turn::TurnRequest r;
    r.image = "radial/busybox:latest";
    r.argv = {"true"};
    r.workspace = workspace;
    r.turn_id = "t-1";
    return r;
}

std::string refusal(const std::function<void()>& f) {
    try {
        f();
    } catch (const turn::RequestError& e) {
        return e.what();
    }
    return "(not refused)";
}

TEST(EgressWorkspaceEdges, ARequestIsJudgedByTheEdgesBeforeAnyBox) {
    test::TempDir d("radial-ws");
    auto cfg = load_text(d, "[run]\nstateDir = \"" + d.path() + "/state\"\n" +
                                workspaces_toml(d, "\"frontend\"", "\"api.backend\""));
    auto peer = request(d.path() + "/frontend");
    peer.egress = {"api.backend.radial:8080"};
    const auto rules = turn::turn_egress_rules(peer, cfg);
    ASSERT_EQ(rules.size(), 1u) << "judged by the edges, though run.egress allows nothing";
    EXPECT_EQ(rules[0].text(), "api.backend.radial:8080");
    peer.egress = {"API.Backend.radial.:8080"}; // one name, however spelled
    EXPECT_EQ(turn::turn_egress_rules(peer, cfg).size(), 1u);
    peer.egress = {"api.backend.radial:9999"};
    EXPECT_THAT(refusal([&] { turn::turn_egress_rules(peer, cfg); }), HasSubstr("is port 8080"));
    peer.egress = {"backend.radial:8080"};
    EXPECT_THAT(refusal([&] { turn::turn_egress_rules(peer, cfg); }),
                HasSubstr("written SERVICE.WORKSPACE.radial:PORT"));
    peer.egress = {"*.backend.radial:8080"};
    EXPECT_THAT(refusal([&] { turn::turn_egress_rules(peer, cfg); }),
                HasSubstr("written SERVICE.WORKSPACE.radial:PORT"));
    auto stranger = request(d.path() + "/elsewhere");
    stranger.egress = {"api.backend.radial:8080"};
    EXPECT_THAT(refusal([&] { turn::turn_egress_rules(stranger, cfg); }), HasSubstr("no identity"));

    auto server = request(d.path() + "/backend");
    server.offer = {"api"};
    EXPECT_EQ(turn::turn_offers(server, cfg).at("api"), 8080);
    server.offer = {"db"};
    EXPECT_THAT(refusal([&] { turn::turn_offers(server, cfg); }),
                HasSubstr("run.workspaces.backend.serve has no such service"));
    auto not_serving = request(d.path() + "/frontend");
    not_serving.offer = {"api"};
    EXPECT_THAT(refusal([&] { turn::build_container_spec(not_serving, cfg); }),
                HasSubstr("offer 'api': run.workspaces.frontend.serve has no such service"));
    server.offer = {"api"};
    server.session = "s-1";
    EXPECT_THAT(refusal([&] { turn::turn_offers(server, cfg); }),
                HasSubstr("a session's turn cannot offer a service yet"));

    // Each side alone: refused at submit, naming the side that is missing.
    cfg = load_text(d, "[run]\nstateDir = \"" + d.path() + "/state\"\n" +
                           workspaces_toml(d, "", "\"api.backend\""));
    peer.egress = {"api.backend.radial:8080"};
    EXPECT_THAT(refusal([&] { turn::build_container_spec(peer, cfg); }),
                HasSubstr("run.workspaces.backend.serve.api.peers does not name 'frontend'"));
    cfg = load_text(d, "[run]\nstateDir = \"" + d.path() + "/state\"\n" +
                           workspaces_toml(d, "\"frontend\"", ""));
    EXPECT_THAT(refusal([&] { turn::build_container_spec(peer, cfg); }),
                HasSubstr("run.workspaces.frontend.reach does not name 'api.backend'"));
}

TEST(EgressWorkspaceEdges, TheOfferedPortsVariableIsRadialdsAlone) {
    EXPECT_TRUE(turn::reserved_env_problem("RADIAL_OFFER_PORTS", false).has_value())
        << "a request setting it would have radial-init serve ports its workspace does not";
}

TEST(EgressWorkspaceEdges, TheRequestCarriesItsOffersThroughItsJson) {
    auto r = request("/srv/ws/backend");
    r.offer = {"api", "metrics"};
    EXPECT_EQ(turn::request_from_json(turn::request_to_json(r)).offer, r.offer);
}

} // namespace
} // namespace radial::egress
