#include "turn/terminal_record.h"

#include <fmt/format.h>

#include <ctime>
#include <nlohmann/json.hpp>

#include "text/utf8.h"
#include "turn/output_tail.h"

namespace radial::turn {

std::string_view to_string(TurnStatus s) noexcept {
    switch (s) {
        case TurnStatus::succeeded: return "succeeded";
        case TurnStatus::failed: return "failed";
        case TurnStatus::timed_out: return "timed_out";
        case TurnStatus::error: return "error";
        case TurnStatus::killed: return "killed";
        case TurnStatus::reclaimed: return "reclaimed";
    }
    return "error";
}

int TerminalRecord::cli_exit_status(bool interrupted) const noexcept {
    if (interrupted && (reason == "interrupted" || status == TurnStatus::error)) return 130;
    switch (status) {
        case TurnStatus::succeeded: return 0;
        case TurnStatus::timed_out: return 124;
        case TurnStatus::error: return 125;
        case TurnStatus::reclaimed: return 125;
        case TurnStatus::killed: return 137;
        case TurnStatus::failed:
            if (exit_code) return *exit_code == 0 ? 1 : (*exit_code & 0xff ? *exit_code & 0xff : 1);
            if (signal) return 128 + *signal;
            return 1;
    }
    return 125;
}

std::string format_timestamp_ms(std::int64_t unix_ms) {
    return format_timestamp(
        std::chrono::system_clock::time_point(std::chrono::milliseconds(unix_ms)));
}

std::string format_timestamp(std::chrono::system_clock::time_point t) {
    using namespace std::chrono;
    auto ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[32];
    std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
    return fmt::format("{}.{:03d}Z", buf, static_cast<int>(ms % 1000));
}

std::string TerminalRecord::to_json() const {
    nlohmann::ordered_json j;
    j["turnId"] = turn_id;
    j["kind"] = kind;
    j["runtime"] = runtime;
    j["image"] = image;
    j["label"] = label;
    j["status"] = std::string(to_string(status));
    if (exit_code) j["exitCode"] = *exit_code;
    if (signal) j["signal"] = *signal;
    if (stopped_in_grace) j["stoppedInGrace"] = *stopped_in_grace;
    if (!reason.empty()) j["reason"] = reason;
    if (!error.empty()) j["error"] = error;
    if (call_abandoned) j["callAbandoned"] = true;
    if (!stdout_tail.empty() || !stderr_tail.empty()) {
        // A JSON string holds only characters: bytes that are not UTF-8 show as U+FFFD (dump()
        // below), and then the exact bytes follow in base64 so that nothing is lost.
        nlohmann::ordered_json tail = {{"stdout", stdout_tail}, {"stderr", stderr_tail}};
        if (!text::is_valid_utf8(stdout_tail)) tail["stdoutBase64"] = base64_encode(stdout_tail);
        if (!text::is_valid_utf8(stderr_tail)) tail["stderrBase64"] = base64_encode(stderr_tail);
        j["outputTail"] = std::move(tail);
    }
    j["startedAt"] = format_timestamp(started_at);
    j["endedAt"] = format_timestamp(ended_at);
    j["durationMs"] = duration_ms;
    if (records_received) j["recordsReceived"] = *records_received;
    if (connections_refused) j["connectionsRefused"] = *connections_refused;
    if (output_dropped)
        j["outputDropped"] = {{"stdoutBytes", output_dropped->stdout_bytes},
                              {"stderrBytes", output_dropped->stderr_bytes}};
    if (records_refused) j["recordsRefused"] = *records_refused;
    if (!journal_error.empty()) j["journalError"] = journal_error;
    if (!box_user.empty()) j["boxUser"] = box_user;
    if (!box_host_user.empty()) j["boxHostUser"] = box_host_user;
    if (create_ms) j["createMs"] = *create_ms;
    if (remove_ms) j["removeMs"] = *remove_ms;
    if (!session.empty()) j["session"] = session;
    if (!image_digest.empty()) j["imageDigest"] = image_digest;
    if (handback)
        j["workspaceHandback"] = {{"entries", handback->entries},
                                  {"setidCleared", handback->setid_cleared},
                                  {"worldWritableCleared", handback->open_to_all_cleared},
                                  {"complete", handback->complete}};
    // Invalid UTF-8 (the output tail, a CLI's message) shows as U+FFFD rather than making the
    // record unwritable.
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

TurnSubject subject_of(const journal::TurnEntry& entry) {
    return {entry.turn_id, entry.kind, entry.runtime, entry.image, entry.label};
}

TerminalRecord terminal_record(const TurnSubject& who, TurnStatus status) {
    TerminalRecord rec;
    rec.turn_id = who.turn_id;
    rec.kind = who.kind;
    rec.runtime = who.runtime;
    rec.image = who.image;
    rec.label = who.label;
    rec.status = status;
    return rec;
}

TerminalRecord error_record(const TurnSubject& who, std::string error,
                            std::chrono::system_clock::time_point at) {
    TerminalRecord rec = terminal_record(who, TurnStatus::error);
    rec.error = std::move(error);
    rec.started_at = rec.ended_at = at;
    return rec;
}

} // namespace radial::turn
