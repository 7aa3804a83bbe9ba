#include "config/turn_bounds.h"

#include <fmt/format.h>

#include <optional>
#include <radial/units.hpp>

#include "config/bounded_units.h"

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

void add_turn_bound_readers(
    std::vector<KeyReader>& readers, HostConfig& cfg,
    const std::function<void(const std::string& key, const std::string& problem)>& fail) {
    using Field = std::uint64_t HostConfig::*;
    // A size (a string such as "16m" or a number of bytes) up to 1t; 0, or at least `least`.
    auto size = [&](std::string_view name, Field field, std::uint64_t least, const char* problem) {
        readers.push_back({name, [&cfg, fail, field, least, problem](const std::string& key,
                                                                     const toml::node& v) {
                               auto bytes = size_value(v, kTiB);
                               if (!bytes || (*bytes != 0 && *bytes < least)) fail(key, problem);
                               cfg.*field = *bytes;
                           }});
    };
    // A duration string up to `max_ms`.
    auto duration = [&](std::string_view name, Field field, std::uint64_t max_ms,
                        const char* problem) {
        readers.push_back({name, [&cfg, fail, field, max_ms, problem](const std::string& key,
                                                                      const toml::node& v) {
                               // A bare number says no unit, as everywhere a file gives a
                               // duration (bounded_units.h, docs/design.md §7.3).
                               if (const auto* s = v.as_string())
                                   if (auto bare = bare_number_problem(s->get()); !bare.empty())
                                       fail(key, bare);
                               auto ms = duration_value(v, max_ms);
                               if (!ms) fail(key, problem);
                               cfg.*field = *ms;
                           }});
    };
    // An hour: a reader that takes nothing for longer is not reading.
    duration("outputStall", &HostConfig::output_stall_ms, kHourMs,
             "must be a duration of at most 1h, such as \"10s\" (\"0s\": never wait)");
    readers.push_back(
        {"maxRecordsPerTurn", [&cfg, fail](const std::string& key, const toml::node& v) {
             const auto* i = v.as_integer();
             if (i == nullptr || i->get() < 0 || i->get() > 1'000'000'000)
                 fail(key,
                      "must be a whole number of records from 0 to 1000000000 "
                      "(0: no cap)");
             cfg.max_records_per_turn = static_cast<std::uint64_t>(i->get());
         }});
    size("maxRecordBytesPerTurn", &HostConfig::max_record_bytes_per_turn, 0,
         "must be a size of at most \"1t\", such as \"16m\" (0: no cap)");
    // Ten years: beyond that, say 0 (kept for ever).
    duration("journalMaxAge", &HostConfig::journal_max_age_ms, 87'600 * kHourMs,
             "must be a duration of at most 87600h, such as \"720h\" (0s: kept for ever)");
    // Below 1m every turn's end would remove nearly every finished turn, its own records soon
    // after: not a bound anyone means.
    size("journalMaxBytes", &HostConfig::journal_max_bytes, 1ull << 20,
         "must be 0 (no bound) or a size from \"1m\" to \"1t\", such as \"256m\"");
    size("turnLogMaxBytes", &HostConfig::turn_log_max_bytes, 0,
         "must be a size of at most \"1t\", such as \"16m\" (0: keep no log)");
    size("turnLogsMaxBytes", &HostConfig::turn_logs_max_bytes, 0,
         "must be a size of at most \"1t\", such as \"1g\" (0: no bound)");
}

} // namespace radial::config
