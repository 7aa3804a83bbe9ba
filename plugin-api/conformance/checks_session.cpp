// Checks of the session extension, radial.session/1 (radial/session.h; docs/design.md §5.11,
// §13.12): a box made once and given execs, each with its own environment, state kept between
// execs, each exec's deadline, and nothing left after destroy. A plugin without the extension
// skips them.
#include <radial/session.h>

#include "checks.h"

namespace radial::conformance {
namespace {

constexpr std::uint64_t kIdle = 600'000, kMaxLife = 900'000; // longer than any check

// Creates the session `spec.label`. False (the check then skips) when the plugin offers no
// sessions, or answers create with RADIAL_E_UNSUPPORTED and its reason (`why`).
bool create_session(Instance& inst, const ContainerSpec& spec, std::string& why) {
    if (!inst.has_sessions()) {
        why = "the plugin offers no " RADIAL_SESSION_EXTENSION_ID;
        return false;
    }
    try {
        inst.session_create(spec, kIdle, kMaxLife);
    } catch (const host::RuntimeError& e) {
        if (e.code() != RADIAL_E_UNSUPPORTED) throw;
        why = std::string("the plugin refuses sessions: ") + e.what();
        return false;
    }
    return true;
}

// The session's box spec: the harness's image, no command.
ContainerSpec session_spec(const std::string& label) {
    ContainerSpec s;
    s.label = label;
    s.image = Harness::get().options.image;
    return s;
}

// An exec of `script` in the session `label`.
ContainerSpec exec_spec(const std::string& label, const std::string& script,
                        std::vector<EnvVar> env = {}, std::uint64_t timeout_ms = 60'000) {
    ContainerSpec s;
    s.label = label;
    s.argv = {"sh", "-c", script};
    s.env = std::move(env);
    s.timeout_ms = timeout_ms;
    return s;
}

std::string exec_text(const RunObservation& o) {
    return o.ok ? outcome_text(o) : "failed: " + o.message;
}

} // namespace

CONFORMANCE_CHECK(session_execs_keep_state_not_env, Gate::ready,
                  "in a session, what one exec writes is there for the next, and an exec's "
                  "environment (secrets above all) is given to that exec only.") {
    const std::string l = label("s");
    std::string why;
    if (!create_session(instance(), session_spec(l), why)) GTEST_SKIP() << why;
    const std::string state = "/tmp/" + l;
    auto first = std::make_shared<OutputCapture>();
    auto one = instance().session_exec(
        exec_spec(l, "echo kept > " + state + "; echo \"[$RCF_SECRET][$RCF_PLAIN]\"",
                  {{"RCF_SECRET", "rcf-secret-value-1", true}, {"RCF_PLAIN", "plain-1", false}}),
        first);
    ASSERT_TRUE(one.ok && (one.outcome.flags & RADIAL_RUN_EXITED) && one.outcome.exit_code == 0)
        << "the first exec " << exec_text(one);
    EXPECT_EQ(first->out, "[rcf-secret-value-1][plain-1]\n")
        << "the first exec did not see the environment it was given";
    auto second = std::make_shared<OutputCapture>();
    auto two = instance().session_exec(
        exec_spec(l, "cat " + state + "; rm -f " + state + "; echo \"[$RCF_SECRET][$RCF_PLAIN]\""),
        second);
    ASSERT_TRUE(two.ok && (two.outcome.flags & RADIAL_RUN_EXITED))
        << "the second exec " << exec_text(two);
    EXPECT_EQ(second->out, "kept\n[][]\n")
        << "the second exec printed '" << printable(second->out)
        << "': expected the file the first exec wrote ('kept'), and none of the first exec's "
           "variables (an exec's environment, its secrets above all, is given to that exec only)";
    instance().session_destroy(l);
}

CONFORMANCE_CHECK(session_exec_timeout, Gate::ready,
                  "an exec's timeoutMs ends that exec (reported TIMED_OUT), and the session's "
                  "box takes the next exec.") {
    const std::string l = label("t");
    std::string why;
    if (!create_session(instance(), session_spec(l), why)) GTEST_SKIP() << why;
    auto slow = instance().session_exec(exec_spec(l, "sleep 600", {}, 2000),
                                        std::make_shared<OutputCapture>());
    ASSERT_TRUE(slow.ok) << "the exec " << exec_text(slow);
    EXPECT_TRUE(slow.outcome.flags & RADIAL_RUN_TIMED_OUT)
        << "an exec of `sleep 600` with timeoutMs 2000 " << outcome_text(slow)
        << "; expected TIMED_OUT";
    auto next_out = std::make_shared<OutputCapture>();
    auto next = instance().session_exec(exec_spec(l, "echo alive"), next_out);
    EXPECT_TRUE(next.ok && (next.outcome.flags & RADIAL_RUN_EXITED) && next_out->out == "alive\n")
        << "after a timed-out exec the session's next exec " << exec_text(next) << " and printed '"
        << printable(next_out->out) << "'; expected 'alive'";
    instance().session_destroy(l);
}

CONFORMANCE_CHECK(session_destroy_leaves_nothing, Gate::ready,
                  "after destroy no box of the session is listed and an exec in it is "
                  "RADIAL_E_NOT_FOUND; create refuses a command or a secret in the box's spec, "
                  "leaving nothing.") {
    const std::string l = label("d");
    std::string why;
    if (!create_session(instance(), session_spec(l), why)) GTEST_SKIP() << why;
    EXPECT_EQ(instance().list(l), std::vector<std::string>{l})
        << "list_by_label does not list the session's box";
    instance().session_destroy(l);
    EXPECT_TRUE(instance().list(l).empty())
        << "list_by_label('" << l << "') still lists the session's box after destroy returned";
    auto after = instance().session_exec(exec_spec(l, "true"), std::make_shared<OutputCapture>());
    EXPECT_FALSE(after.ok) << "an exec in a destroyed session " << outcome_text(after);
    EXPECT_EQ(after.code, RADIAL_E_NOT_FOUND)
        << "an exec in a destroyed session failed with status " << after.code << " ("
        << after.message << "); expected RADIAL_E_NOT_FOUND";

    const std::string bad = label("b");
    ContainerSpec with_argv = session_spec(bad);
    with_argv.argv = {"true"};
    ContainerSpec with_secret = session_spec(bad);
    with_secret.env = {{"RCF_SECRET", "rcf-secret-value-2", true}};
    for (const auto* spec : {&with_argv, &with_secret}) {
        try {
            instance().session_create(*spec, kIdle, kMaxLife);
            ADD_FAILURE() << "session create accepted a box spec with "
                          << (spec == &with_argv ? "a command" : "a secret variable");
            instance().session_destroy(bad);
        } catch (const host::RuntimeError& e) {
            EXPECT_EQ(e.code(), RADIAL_E_INVALID) << e.what();
        }
        EXPECT_TRUE(instance().list(bad).empty()) << "a refused session create left a box";
    }
}

} // namespace radial::conformance
