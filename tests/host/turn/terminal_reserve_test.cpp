// tests/host/turn/terminal_reserve_test.cpp — the space a turn reserves for its terminal record:
// blank until kept, removed unless kept, and a kept record always fits the reserve.
#include "turn/terminal_reserve.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "../../support/temp_dir.h"

namespace radial::turn {
namespace {
namespace fs = std::filesystem;

TerminalRecord record(std::string tail) {
    TerminalRecord r;
    r.turn_id = "t1";
    r.status = TurnStatus::succeeded;
    r.exit_code = 0;
    r.stdout_tail = tail;
    r.stderr_tail = tail;
    r.journal_error = "writing the terminal record: database or disk is full";
    return r;
}

TEST(TerminalReserve, ABlankReserveIsNoRecordAndGoesAwayUnlessKept) {
    test::TempDir dir("radial-reserve");
    std::string path;
    {
        auto reserve = TerminalReserve::create(dir.path(), "t1");
        path = reserve.path();
        EXPECT_EQ(path, dir.path() + "/pending/t1.json");
        EXPECT_EQ(fs::file_size(path), kTerminalReserveBytes);
        EXPECT_FALSE(read_pending(dir.path(), "t1"));
        EXPECT_TRUE(list_pending(dir.path()).empty());
    }
    EXPECT_FALSE(fs::exists(path));
}

TEST(TerminalReserve, AKeptRecordFitsTheReserveAndKeepsTheEndsOfItsTails) {
    test::TempDir dir("radial-reserve");
    // Control bytes: six bytes of JSON each, far beyond the reserve unless the tails are cut.
    std::string tail(4096, '\x01');
    tail += "the end";
    {
        auto reserve = TerminalReserve::create(dir.path(), "t1");
        EXPECT_EQ(reserve.keep(record(tail)), "");
    }
    EXPECT_EQ(fs::file_size(dir.path() + "/pending/t1.json"), kTerminalReserveBytes)
        << "written over the reserved space, not beyond it";
    auto p = read_pending(dir.path(), "t1");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->status, "succeeded");
    auto j = nlohmann::json::parse(p->json);
    EXPECT_EQ(j["exitCode"], 0);
    EXPECT_EQ(j["journalError"], "writing the terminal record: database or disk is full");
    std::string out = j["outputTail"]["stdout"];
    EXPECT_LT(out.size(), tail.size());
    EXPECT_TRUE(out.ends_with("the end")) << out.size();
    ASSERT_EQ(list_pending(dir.path()).size(), 1u);
    remove_pending(dir.path(), "t1");
    EXPECT_TRUE(list_pending(dir.path()).empty());
}

// The record is kept as soon as the box is gone, then again with the journal's error when the
// journal refuses it (docs/design.md §11.5): a shorter record over a longer one is read whole.
TEST(TerminalReserve, AShorterRecordKeptOverALongerOneIsReadAsItself) {
    test::TempDir dir("radial-reserve");
    {
        auto reserve = TerminalReserve::create(dir.path(), "t1");
        EXPECT_EQ(reserve.keep(record(std::string(2000, 'x'))), "");
        EXPECT_EQ(reserve.keep(record("short")), "");
    }
    auto p = read_pending(dir.path(), "t1");
    ASSERT_TRUE(p) << "the second record left the first one's end behind it";
    EXPECT_EQ(nlohmann::json::parse(p->json)["outputTail"]["stdout"], "short");
}

TEST(TerminalReserve, ReleasedMeansGone) {
    test::TempDir dir("radial-reserve");
    auto reserve = TerminalReserve::create(dir.path(), "t2");
    reserve.release();
    EXPECT_FALSE(fs::exists(dir.path() + "/pending/t2.json"));
}

} // namespace
} // namespace radial::turn
