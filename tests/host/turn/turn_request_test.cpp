#include "turn/turn_request.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "../../support/instance_config.h"
#include "../../support/temp_dir.h"
#include "turn/request_policy.h"
#include "turn/turn_secrets.h"

namespace radial::turn {
namespace {

TEST(TurnRequest, BuildsTheSpecWithWorkspaceAtWork) {
    test::TempDir ws;
    ASSERT_EQ(::chown(ws.path().c_str(), 1234, 5678), 0);
    TurnRequest r;
    r.turn_id = "abc-1";
    r.image = "img";
    r.workspace = ws.path() + "/";
    r.argv = {"sh", "-c", "echo hi"};
    r.env = {{"MODEL_KEY", "sk-123456", true}};
    r.timeout_ms = 5000;
    auto s = build_container_spec(r, test::instance_config());
    EXPECT_EQ(s.label, "radial-turn-inst1-abc-1");
    EXPECT_EQ(s.image, "img");
    ASSERT_EQ(s.mounts.size(), 1u);
    EXPECT_EQ(s.mounts[0], (Mount{ws.path(), "/work", false}));
    EXPECT_EQ(s.workdir, "/work");
    // Never the workspace's owner or group: the box ids (docs/design.md §17, C-12).
    EXPECT_EQ(s.user, "2000000000:2000000000");
    EXPECT_EQ(s.timeout_ms, 5000u);
    ASSERT_EQ(s.env.size(), 1u);
    EXPECT_TRUE(s.env[0].secret);
}

// The variables radiald sets in the box are refused where the spec is built, so every entry point
// (radiald turn, a turn file, submit, the daemon's claim) refuses them alike.
// The operator's bounds on a turn's timeout (run.defaultTimeout, run.maxTimeout): a request naming
// none gets the default, else the maximum, so no turn runs without a deadline where either is set;
// a request naming more than the maximum is refused, naming the key; within it, its own holds.
TEST(TurnRequest, TheOperatorsTimeoutsBoundEveryRequest) {
    TurnRequest r;
    r.turn_id = "t-1";
    r.image = "img";
    r.argv = {"true"};
    auto cfg = test::instance_config();
    EXPECT_EQ(build_container_spec(r, cfg).timeout_ms, 0u) << "a timeout without any key set";
    cfg.max_timeout_ms = 3'600'000;
    EXPECT_EQ(build_container_spec(r, cfg).timeout_ms, 3'600'000u);
    cfg.default_timeout_ms = 600'000;
    EXPECT_EQ(build_container_spec(r, cfg).timeout_ms, 600'000u);
    r.timeout_ms = 5'000;
    EXPECT_EQ(build_container_spec(r, cfg).timeout_ms, 5'000u);
    r.timeout_ms = 7'200'000;
    try {
        build_container_spec(r, cfg);
        ADD_FAILURE() << "a timeout above run.maxTimeout was taken";
    } catch (const RequestError& e) {
        EXPECT_STREQ(e.what(),
                     "timeout 2h is more than run.maxTimeout (1h); give a shorter timeout");
    }
    r.timeout_ms = 0;
    cfg.default_timeout_ms = 7'200'000;
    EXPECT_THROW(build_container_spec(r, cfg), RequestError) << "a default above the maximum";
}

TEST(TurnRequest, AVariableRadialdSetsInTheBoxIsRefusedAsEnvAsSecretAndByName) {
    auto refusal = [](TurnRequest r) -> std::string {
        r.turn_id = "abc-1";
        r.image = "img";
        r.argv = {"true"};
        try {
            build_container_spec(r, test::instance_config());
        } catch (const RequestError& e) {
            return e.what();
        }
        return "(accepted)";
    };
    for (const char* name : {"RADIAL_TURN_TOKEN", "RADIAL_TURN_SOCKET", "RADIAL_EGRESS_SOCKET"}) {
        TurnRequest plain;
        plain.env = {{name, "x", false}};
        EXPECT_EQ(refusal(plain), std::string("env '") + name +
                                      "' is set by radiald for every turn; pick another "
                                      "name");
        TurnRequest secret;
        secret.env = {{name, "value-of-a-secret", true}};
        EXPECT_EQ(refusal(secret), std::string("secret '") + name +
                                       "' is set by radiald for every turn; pick another name");
        TurnRequest by_name;
        by_name.secrets = {name};
        EXPECT_EQ(refusal(by_name), std::string("secret '") + name +
                                        "' is set by radiald for every turn; pick another name");
    }
    // The proxy variables are the request's own unless the turn has egress.
    TurnRequest proxy;
    proxy.env = {{"HTTPS_PROXY", "http://10.0.0.1:3128", false}, {"no_proxy", "*", false}};
    EXPECT_EQ(refusal(proxy), "(accepted)");
    EXPECT_EQ(reserved_env_problem("HTTPS_PROXY", true),
              "is set by radiald for a turn with egress: it leads the box's tools to the egress "
              "broker; drop it, or run the turn without egress");
    EXPECT_TRUE(reserved_env_problem("no_proxy", true).has_value());
    EXPECT_THAT(reserved_env_problem("RADIAL_EGRESS_PORT", true).value_or("(accepted)"),
                HasSubstr("is read by radial-init for a turn with egress"));
    EXPECT_FALSE(reserved_env_problem("RADIAL_EGRESS_PORT", false).has_value());
    EXPECT_FALSE(reserved_env_problem("HTTPS_PROXY", false).has_value());
    EXPECT_FALSE(reserved_env_problem("RADIAL_TURN_TOKENS", false).has_value());
}

// Secret names get their values in one place (turn_secrets.h), for the CLI and the daemon.
TEST(TurnRequest, SecretValuesComeFromTheLookupAndAnUnsetOneNamesTheFix) {
    TurnRequest r;
    r.secrets = {"A_KEY", "B_KEY"};
    r.env = {{"PLAIN", "1", false}};
    auto lookup = [](const std::string& n) -> std::optional<std::string> {
        if (n == "A_KEY") return std::string("value-a");
        return std::nullopt;
    };
    try {
        with_secret_values(r, lookup, "export it first");
        ADD_FAILURE() << "an unset secret was accepted";
    } catch (const RequestError& e) {
        EXPECT_STREQ(e.what(),
                     "secret 'B_KEY' is not set in radiald's environment; export it first");
    }
    r.secrets = {"A_KEY"};
    const auto done = with_secret_values(r, lookup, "export it first");
    ASSERT_EQ(done.env.size(), 2u);
    EXPECT_EQ(done.env[1].name, "A_KEY");
    EXPECT_EQ(done.env[1].value, "value-a");
    EXPECT_TRUE(done.env[1].secret);
    EXPECT_EQ(done.secrets, r.secrets) << "the names stay, for the journal";
    r.secrets = {"not a name"};
    EXPECT_THROW(with_secret_values(r, lookup, "x"), RequestError);
}

// A value at rest names the way to give it instead: a secret variable as $NAME in the box; a
// managed credential (codexAuth.N, no variable's name) from the file the box already has.
TEST(TurnRequest, ASecretAtRestNamesHowTheBoxGetsItInstead) {
    const redaction::Redactor redactor(
        redaction::SecretSet{{"MY_KEY", "value-of-my-key"}, {"codexAuth.3", "token-of-codex"}});
    const auto refusal = [&](const std::string& word) {
        ContainerSpec spec;
        spec.image = "img";
        spec.argv = {"echo", word};
        try {
            refuse_secrets_at_rest(spec, redactor);
        } catch (const RequestError& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_NE(refusal("value-of-my-key").find("refer to it inside the box as $MY_KEY"),
              std::string::npos);
    const std::string codex = refusal("token-of-codex");
    EXPECT_NE(codex.find("the box reads it from $HOME/.codex/auth.json"), std::string::npos)
        << codex;
    EXPECT_EQ(codex.find("$codexAuth"), std::string::npos) << codex;
}

TEST(TurnRequest, C12_TheBoxUserIsTheBoxIdsUnlessTheOperatorChoseOtherwise) {
    test::TempDir ws;
    ASSERT_EQ(::chown(ws.path().c_str(), 1234, 5678), 0);
    TurnRequest r{"t", "img", ws.path(), {}, {"true"}, 0};
    auto c = test::instance_config();
    EXPECT_EQ(build_container_spec(r, c).user, "2000000000:2000000000");
    c.user = "1000:1000";
    EXPECT_EQ(build_container_spec(r, c).user, "1000:1000");
    // The explicit opt-in: the workspace owner's uid, the box gid (never the workspace's group).
    c.user = "workspace-owner";
    EXPECT_EQ(build_container_spec(r, c).user, "1234:2000000000");
    ASSERT_EQ(::chown(ws.path().c_str(), 0, 0), 0);
    EXPECT_THROW(build_container_spec(r, c), RequestError) << "a root-owned workspace";
    TurnRequest no_ws{"t", "img", "", {}, {"true"}, 0};
    EXPECT_THROW(build_container_spec(no_ws, c), RequestError);
}

// docs/design.md §6.4: the host's bounds are in every spec, whatever the runtime's defaults.
TEST(TurnRequest, TheSpecCarriesTheHostsBoundsByDefaultAndTheOperatorsWhenSet) {
    TurnRequest r{"t", "img", "", {}, {"true"}, 0};
    auto dflt = config::load(std::nullopt, std::nullopt, "/x/bin");
    dflt.instance_id = "inst1";
    auto s = build_container_spec(r, dflt);
    EXPECT_EQ(s.memory_bytes, 2ull << 30);
    const std::uint64_t host = config::online_cpus_milli();
    EXPECT_EQ(s.cpus_milli, host != 0 && host < 2000 ? host : 2000u);
    EXPECT_EQ(s.pids_limit, 256);

    test::TempDir d;
    auto set = config::load(d.write("r.toml",
                                    "[run]\ninstanceId = \"inst1\"\nmemory = \"512m\"\ncpus = 0.5\n"
                                    "pidsLimit = 100\n"),
                            std::nullopt, "/x/bin");
    s = build_container_spec(r, set);
    EXPECT_EQ(s.memory_bytes, 512ull << 20);
    EXPECT_EQ(s.cpus_milli, 500u);
    EXPECT_EQ(s.pids_limit, 100);

    // The runtime's own key is the operator's word for that runtime: the host leaves it that bound.
    auto runtime = config::load(d.write("k.toml",
                                        "[run]\ninstanceId = \"inst1\"\n"
                                        "[run.docker]\npidsLimit = 300\n"),
                                std::nullopt, "/x/bin");
    s = build_container_spec(r, runtime);
    EXPECT_EQ(s.pids_limit, 0);
    EXPECT_EQ(s.memory_bytes, 2ull << 30);
}

TEST(TurnRequest, RefusesAMissingWorkspace) {
    TurnRequest r{"t", "img", "/nonexistent/ws", {}, {"true"}, 0};
    try {
        build_container_spec(r, test::instance_config());
        FAIL();
    } catch (const RequestError& e) {
        EXPECT_STREQ(e.what(),
                     "workspace '/nonexistent/ws' is not an existing directory; create it or "
                     "pass another --workspace");
    }
}

TEST(TurnRequest, RefusesAnEmptyCommandOrImage) {
    EXPECT_THROW(
        build_container_spec(TurnRequest{"t", "img", "", {}, {}, 0}, test::instance_config()),
        RequestError);
    EXPECT_THROW(
        build_container_spec(TurnRequest{"t", "", "", {}, {"true"}, 0}, test::instance_config()),
        RequestError);
    EXPECT_THROW(build_container_spec(TurnRequest{"T_1", "img", "", {}, {"true"}, 0},
                                      test::instance_config()),
                 RequestError);
}

TEST(TurnRequest, TurnIdRules) {
    EXPECT_NO_THROW(validate_turn_id("a-7"));
    EXPECT_THROW(validate_turn_id(""), RequestError); // would be exactly the reconcile prefix
    EXPECT_THROW(validate_turn_id("-7"), RequestError);
    EXPECT_THROW(validate_turn_id(std::string(65, 'a')), RequestError);
    EXPECT_NO_THROW(validate_turn_id(std::string(64, 'a')));
    EXPECT_THROW(validate_turn_id("A7"), RequestError);
}

TEST(TurnRequest, TurnIdsAreDistinctAndLabelSafe) {
    auto a = new_turn_id(), b = new_turn_id();
    EXPECT_NE(a, b);
    for (char c : a) EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-') << a;
}

} // namespace
} // namespace radial::turn
