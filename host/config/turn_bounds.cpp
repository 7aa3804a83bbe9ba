#include "config/turn_bounds.h"

#include <fmt/format.h>

#include <optional>
#include <radial/units.hpp>

namespace radial::config {
namespace {

// A size as a string ("16m") or a whole number of bytes, at most `max`; nullopt otherwise.
std::optional<std::uint64_t> size_value(const toml::node& v, std::uint64_t max) {
    std::optional<std::uint64_t> bytes;
    if (const auto* i = v.as_integer(); i != nullptr && i->get() >= 0)
        bytes = static_cast<std::uint64_t>(i->get());
    else if (const auto* s = v.as_string())
        bytes = units::parse_size_bytes(s->get());
    if (bytes && *bytes > max) return std::nullopt;
    return bytes;
}

// A duration as a string ("10s"), at most `max_ms`; nullopt otherwise.
std::optional<std::uint64_t> duration_value(const toml::node& v, std::uint64_t max_ms) {
    std::optional<std::uint64_t> ms;
    if (const auto* s = v.as_string()) ms = units::parse_duration_ms(s->get());
    if (ms && *ms > max_ms) return std::nullopt;
    return ms;
}

constexpr std::uint64_t kHourMs = 3'600'000;
constexpr std::uint64_t kTiB = 1ull << 40;

} // namespace

bool read_turn_bound(const std::string& name, const toml::node& v, HostConfig& cfg,
                     const std::function<void(const std::string& problem)>& fail) {
    if (name == "outputStall") {
        // An hour: a reader that takes nothing for longer is not reading.
        auto ms = duration_value(v, kHourMs);
        if (!ms) fail("must be a duration of at most 1h, such as \"10s\" (\"0s\": never wait)");
        cfg.output_stall_ms = *ms;
    } else if (name == "maxRecordsPerTurn") {
        const auto* i = v.as_integer();
        if (i == nullptr || i->get() < 0 || i->get() > 1'000'000'000)
            fail("must be a whole number of records from 0 to 1000000000 (0: no cap)");
        cfg.max_records_per_turn = static_cast<std::uint64_t>(i->get());
    } else if (name == "maxRecordBytesPerTurn") {
        auto bytes = size_value(v, kTiB);
        if (!bytes) fail("must be a size of at most \"1t\", such as \"16m\" (0: no cap)");
        cfg.max_record_bytes_per_turn = *bytes;
    } else if (name == "journalMaxAge") {
        // Ten years: beyond that, say 0 (kept for ever).
        auto ms = duration_value(v, 87'600 * kHourMs);
        if (!ms) fail("must be a duration of at most 87600h, such as \"720h\" (0s: kept for ever)");
        cfg.journal_max_age_ms = *ms;
    } else if (name == "journalMaxBytes") {
        // Below 1m every turn's end would remove nearly every finished turn, its own records
        // soon after: not a bound anyone means.
        auto bytes = size_value(v, kTiB);
        if (!bytes || (*bytes != 0 && *bytes < (1ull << 20)))
            fail("must be 0 (no bound) or a size from \"1m\" to \"1t\", such as \"256m\"");
        cfg.journal_max_bytes = *bytes;
    } else if (name == "turnLogMaxBytes") {
        auto bytes = size_value(v, kTiB);
        if (!bytes) fail("must be a size of at most \"1t\", such as \"16m\" (0: keep no log)");
        cfg.turn_log_max_bytes = *bytes;
    } else if (name == "turnLogsMaxBytes") {
        auto bytes = size_value(v, kTiB);
        if (!bytes) fail("must be a size of at most \"1t\", such as \"1g\" (0: no bound)");
        cfg.turn_logs_max_bytes = *bytes;
    } else {
        return false;
    }
    return true;
}

} // namespace radial::config
