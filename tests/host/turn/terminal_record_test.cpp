#include "turn/terminal_record.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace radial::turn {
namespace {

TerminalRecord record(TurnStatus s, std::optional<int> code) {
    TerminalRecord r;
    r.turn_id = "t1";
    r.runtime = "docker";
    r.image = "radial/busybox:latest";
    r.label = "radial-turn-local-t1";
    r.status = s;
    r.exit_code = code;
    r.started_at =
        std::chrono::system_clock::time_point(std::chrono::milliseconds(1'764'422'100'123));
    r.ended_at = r.started_at + std::chrono::milliseconds(2500);
    r.duration_ms = 2500;
    return r;
}

TEST(TerminalRecord, JsonCarriesEveryField) {
    auto j = nlohmann::json::parse(record(TurnStatus::failed, 3).to_json());
    EXPECT_EQ(j["turnId"], "t1");
    EXPECT_EQ(j["runtime"], "docker");
    EXPECT_EQ(j["image"], "radial/busybox:latest");
    EXPECT_EQ(j["status"], "failed");
    EXPECT_EQ(j["exitCode"], 3);
    EXPECT_EQ(j["startedAt"], "2025-11-29T13:15:00.123Z");
    EXPECT_EQ(j["endedAt"], "2025-11-29T13:15:02.623Z");
    EXPECT_EQ(j["durationMs"], 2500);
    EXPECT_FALSE(j.contains("error"));
}

TEST(TerminalRecord, ExitStatusFollowsTimeoutAndDockerConventions) {
    EXPECT_EQ(record(TurnStatus::succeeded, 0).cli_exit_status(), 0);
    EXPECT_EQ(record(TurnStatus::failed, 3).cli_exit_status(), 3);
    EXPECT_EQ(record(TurnStatus::failed, 137).cli_exit_status(), 137);
    EXPECT_EQ(record(TurnStatus::timed_out, std::nullopt).cli_exit_status(), 124);
    EXPECT_EQ(record(TurnStatus::error, std::nullopt).cli_exit_status(), 125);
}

// `radiald turn` interrupted: 130 when the interrupt stopped the turn. One that came after the
// command ended by itself (a session turn's check of its changes) exited 130 while the record said
// `failed`, exit 4.
TEST(TerminalRecord, AnInterruptAfterTheCommandEndedKeepsItsStatus) {
    auto stopped = record(TurnStatus::failed, std::nullopt);
    stopped.reason = "interrupted";
    EXPECT_EQ(stopped.cli_exit_status(true), 130);
    EXPECT_EQ(record(TurnStatus::error, std::nullopt).cli_exit_status(true), 130);
    EXPECT_EQ(record(TurnStatus::failed, 4).cli_exit_status(true), 4);
    EXPECT_EQ(record(TurnStatus::succeeded, 0).cli_exit_status(true), 0);
}

TEST(TerminalRecord, InvalidUtf8InAnErrorDoesNotBreakTheRecord) {
    auto r = record(TurnStatus::error, std::nullopt);
    r.error = "docker said \xff\xfe";
    auto j = nlohmann::json::parse(r.to_json());
    EXPECT_EQ(j["status"], "error");
    EXPECT_NE(j["error"].get<std::string>().find("docker said"), std::string::npos);
}

} // namespace
} // namespace radial::turn

namespace radial::turn {
namespace {

// Every terminal record begins in one factory (terminal_record.h), so each names its turn alike.
TEST(TerminalRecordFactory, ARecordNamesItsSubjectAndAnEarlyErrorEndsWhereItStarted) {
    const TurnSubject who{"t-1", "check", "docker", "img", "radial-check-i-t-1"};
    const auto rec = terminal_record(who, TurnStatus::reclaimed);
    EXPECT_EQ(rec.turn_id, "t-1");
    EXPECT_EQ(rec.kind, "check");
    EXPECT_EQ(rec.runtime, "docker");
    EXPECT_EQ(rec.image, "img");
    EXPECT_EQ(rec.label, "radial-check-i-t-1");
    EXPECT_EQ(rec.status, TurnStatus::reclaimed);
    const auto at =
        std::chrono::system_clock::time_point(std::chrono::milliseconds(1'700'000'000'123));
    const auto early = error_record(who, "no engine", at);
    EXPECT_EQ(early.status, TurnStatus::error);
    EXPECT_EQ(early.error, "no engine");
    EXPECT_EQ(early.started_at, at);
    EXPECT_EQ(early.ended_at, at);
    const auto json = nlohmann::json::parse(early.to_json());
    EXPECT_EQ(json["kind"], "check");
    EXPECT_EQ(json["startedAt"], "2023-11-14T22:13:20.123Z");
    const journal::TurnEntry entry{"t-2", "radial-turn-i-t-2", "swarm", "busybox", "x.v1", "{}",
                                   "turn"};
    const auto from_entry = subject_of(entry);
    EXPECT_EQ(from_entry.turn_id, "t-2");
    EXPECT_EQ(from_entry.label, "radial-turn-i-t-2");
    EXPECT_EQ(from_entry.runtime, "swarm");
    EXPECT_EQ(from_entry.image, "busybox");
    EXPECT_EQ(from_entry.kind, "turn");
}

} // namespace
} // namespace radial::turn
