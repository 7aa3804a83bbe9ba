// [run.pool] (docs/design.md §13.14): what it reads, what it refuses and how the refusal names the
// key; and which turns a pool class serves (pool::box_shape).
#include "config/pool_keys.h"

#include <gtest/gtest.h>

#include "../../support/temp_dir.h"
#include "config/host_config.h"
#include "pool/pool_box.h"

namespace radial::config {
namespace {

std::string pool_error_of(const std::string& file) {
    try {
        load(file, std::nullopt, "/opt/radial/bin");
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(PoolKeys, NoPoolUnlessTheOperatorAsksForOne) {
    test::TempDir d;
    const auto c = load(d.write("r.toml", "[run]\n"), std::nullopt, "/x/bin");
    EXPECT_EQ(c.pool.size, 0u);
    EXPECT_TRUE(c.pool.images.empty());
    EXPECT_TRUE(c.pool.modes.empty()) << "run.mode's class only";
    EXPECT_EQ(c.pool.max_age_ms, 600'000u);
    EXPECT_EQ(c.pool.refill_concurrency, 1u);
}

TEST(PoolKeys, ReadsEveryKey) {
    test::TempDir d;
    const auto c = load(d.write("r.toml",
                                "[run]\n[run.pool]\nimages = [\"a:1\", \"b:2\"]\nsize = "
                                "4\nmaxAge = \"2m\"\nrefillConcurrency = 2\nmemoryBudget "
                                "= \"16g\"\nmodes = [\"read-only\", \"workspace-write\"]\n"),
                        std::nullopt, "/x/bin");
    EXPECT_EQ(c.pool.images, (std::vector<std::string>{"a:1", "b:2"}));
    EXPECT_EQ(c.pool.modes, (std::vector<std::string>{"read-only", "workspace-write"}));
    EXPECT_EQ(c.pool.size, 4u);
    EXPECT_EQ(c.pool.max_age_ms, 120'000u);
    EXPECT_EQ(c.pool.refill_concurrency, 2u);
    EXPECT_EQ(c.pool.memory_budget_bytes, 16ull << 30);
}

TEST(PoolKeys, RefusesBadValuesNamingTheKeyAndItsPlace) {
    test::TempDir d;
    auto f = d.write("s.toml", "[run.pool]\nimages = [\"a\"]\nsize = 65\n");
    EXPECT_EQ(pool_error_of(f),
              f + ":3:8: run.pool.size: must be a whole number of idle boxes per image and "
                  "mode from 0 to 64 (0: no pool)");
    f = d.write("md.toml", "[run.pool]\nmodes = [\"read-only\", \"rw\"]\n");
    EXPECT_EQ(pool_error_of(f), f + ":2:9: run.pool.modes: 'rw' is neither \"workspace-write\" "
                                    "nor \"read-only\"");
    f = d.write("mw.toml",
                "[run]\nmode = \"read-only\"\n[run.pool]\nimages = [\"a\"]\nsize = "
                "1\nmodes = [\"read-only\", \"workspace-write\"]\n");
    EXPECT_NE(pool_error_of(f).find("run.pool.modes: names \"workspace-write\" beside run.mode = "
                                    "\"read-only\", which no turn may widen"),
              std::string::npos)
        << pool_error_of(f);
    f = d.write("m2.toml", "[run.pool]\nmodes = [\"read-only\", \"read-only\"]\n");
    EXPECT_EQ(pool_error_of(f),
              f + ":2:9: run.pool.modes: names 'read-only' twice; name each mode once");
    f = d.write("a.toml", "[run.pool]\nimages = [\"a\"]\nsize = 1\nmaxAge = \"5s\"\n");
    EXPECT_NE(
        pool_error_of(f).find(f + ":4:10: run.pool.maxAge: must be a duration from 10s to 24h"),
        std::string::npos)
        << pool_error_of(f);
    f = d.write("c.toml", "[run.pool]\nrefillConcurrency = 0\n");
    EXPECT_EQ(pool_error_of(f),
              f + ":2:21: run.pool.refillConcurrency: must be a whole number of boxes "
                  "created at once from 1 to 16");
    f = d.write("i.toml", "[run.pool]\nimages = [\"a\", \"a\"]\n");
    EXPECT_EQ(pool_error_of(f),
              f + ":2:10: run.pool.images: names 'a' twice; name each image once");
    f = d.write("u.toml", "[run.pool]\nsise = 1\n");
    EXPECT_NE(pool_error_of(f).find("run.pool.sise: unknown key; did you mean 'size'?"),
              std::string::npos)
        << pool_error_of(f);
}

TEST(PoolKeys, RefusesAPoolTheRestOfTheFileMakesMeaningless) {
    test::TempDir d;
    auto f = d.write("n.toml", "[run.pool]\nsize = 2\n");
    EXPECT_EQ(pool_error_of(f),
              f + ":2:8: run.pool.size: is set but run.pool.images names no image; "
                  "name the images whose turns the pool serves, or set size = 0");
    f = d.write("x.toml", "[run]\ncodexAuth = true\n[run.pool]\nimages = [\"a\"]\nsize = 2\n");
    EXPECT_NE(pool_error_of(f).find("run.pool.size: is set beside run.codexAuth"),
              std::string::npos)
        << pool_error_of(f);
    f = d.write("t.toml",
                "[run]\nturnTransport = \"tcp\"\n[run.pool]\nimages = [\"a\"]\nsize = 2\n");
    EXPECT_NE(pool_error_of(f).find("run.pool.size: needs the unix turn transport"),
              std::string::npos)
        << pool_error_of(f);
    f = d.write("m.toml",
                "[run]\nmemory = \"2g\"\n[run.pool]\nimages = [\"a\"]\nsize = 2\nmemoryBudget = "
                "\"1g\"\n");
    EXPECT_NE(pool_error_of(f).find(
                  f + ":6:16: run.pool.memoryBudget: is less than one box's run.memory"),
              std::string::npos)
        << pool_error_of(f);
}

// Idle boxes and turns at once each hold an id of run.boxIdRange: 2 images × 2 modes × 3 idle
// boxes and 4 turns need at least 16 ids.
TEST(PoolKeys, APoolAndItsTurnsMustFitTheBoxIdRange) {
    test::TempDir d;
    const std::string pool16 =
        "[run.pool]\nimages = [\"a\", \"b\"]\nmodes = [\"read-only\", \"workspace-write\"]\n"
        "size = 3\n";
    auto shortfall = [&](const std::string& name, const std::string& run_keys) {
        return pool_id_shortfall(
            load(d.write(name, "[run]\n" + run_keys + pool16), std::nullopt, "/opt/radial/bin"));
    };
    const auto short15 =
        shortfall("ids15.toml", "maxConcurrentTurns = 4\nboxIdRange = \"3000000-3000014\"\n");
    ASSERT_TRUE(short15);
    EXPECT_EQ(*short15,
              "run.pool.size: 3 idle boxes for each image and mode (4 of them) and "
              "run.maxConcurrentTurns (4) need at least 16 ids, but run.boxIdRange holds 15; "
              "lower one of them or widen run.boxIdRange");
    EXPECT_EQ(shortfall("ids16.toml", "maxConcurrentTurns = 4\nboxIdRange = \"3000000-3000015\"\n"),
              std::nullopt);
    EXPECT_EQ(shortfall("fixed.toml",
                        "maxConcurrentTurns = 4\nuser = \"1000:1000\"\nboxIdRange = "
                        "\"3000000-3000001\"\n"),
              std::nullopt)
        << "a fixed run.user leases no ids";
    EXPECT_EQ(
        pool_id_shortfall(load(d.write("none.toml", "[run]\nboxIdRange = \"3000000-3000000\"\n"),
                               std::nullopt, "/opt/radial/bin")),
        std::nullopt)
        << "no pool";
}

TEST(PoolShape, ATurnMatchesAPoolBoxOnWhatABoxIsMadeWithAndNothingElse) {
    ContainerSpec turn;
    turn.label = "radial-turn-x-1";
    turn.image = "sha256:abc";
    turn.mounts = {{"/home/me/project", "/work", false}};
    turn.argv = {"make"};
    turn.env = {{"TOKEN", "s3cret", true}};
    turn.workdir = "/work/src";
    turn.timeout_ms = 5000;
    turn.user = "2000:2000";
    turn.memory_bytes = 1 << 30;
    ContainerSpec other = turn;
    other.label = "radial-turn-x-2";
    other.mounts.front().source = "/home/you/elsewhere";
    other.argv = {"true"};
    other.env.clear();
    other.workdir = "/work";
    other.timeout_ms = 0;
    other.user = "2001:2001";
    EXPECT_EQ(pool::box_shape(turn), pool::box_shape(other))
        << "what an exec or the claim supplies does not matter";
    EXPECT_TRUE(pool::box_shape(turn).mounts.front().source.empty());
    // What a box is made with does.
    for (auto change : std::vector<std::function<void(ContainerSpec&)>>{
             [](ContainerSpec& s) { s.image = "sha256:def"; },
             [](ContainerSpec& s) { s.mounts.front().read_only = true; },
             [](ContainerSpec& s) {
                 s.mounts.push_back({"/data", "/data", true});
             },
             [](ContainerSpec& s) { s.memory_bytes = 2 << 20; },
             [](ContainerSpec& s) { s.read_only_rootfs = Tristate::yes; },
             [](ContainerSpec& s) { s.network = "host"; },
             [](ContainerSpec& s) {
                 s.tmpfs.push_back({"/cache", 1 << 20});
             }}) {
        ContainerSpec changed = other;
        change(changed);
        EXPECT_NE(pool::box_shape(turn), pool::box_shape(changed));
    }
}

} // namespace
} // namespace radial::config
