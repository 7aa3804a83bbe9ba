#include "config/pool_keys.h"

#include <fmt/format.h>

#include <algorithm>
#include <radial/units.hpp>
#include <set>

#include "config/box_identity.h"

namespace radial::config {

namespace {

// More idle boxes than this per image is a typo: each holds a box's memory and a leased id.
constexpr std::int64_t kMaxPoolSize = 64;
// Creating more boxes at once than this only queues them in the engine.
constexpr std::int64_t kMaxRefillConcurrency = 16;

// A whole number from `min` to `max`, or `problem`.
std::size_t count(Reader& r, const std::string& key, const toml::node& v, std::int64_t min,
                  std::int64_t max, const std::string& problem) {
    r.remember(key, v);
    const auto* i = v.as_integer();
    if (i == nullptr || i->get() < min || i->get() > max) r.fail(key, problem);
    return static_cast<std::size_t>(i->get());
}

} // namespace

std::vector<KeyReader> pool_readers(Reader& r, PoolConfig& out) {
    using V = const toml::node&;
    using K = const std::string&;
    return {
        {"images",
         [&](K key, V v) {
             out.images = r.strings(key, v);
             std::set<std::string> seen;
             for (const auto& image : out.images) {
                 if (image.empty()) r.fail(key, "must not hold an empty image name");
                 if (!seen.insert(image).second)
                     r.fail(key, fmt::format("names '{}' twice; name each image once", image));
             }
         }},
        {"modes",
         [&](K key, V v) {
             out.modes = r.strings(key, v);
             std::set<std::string> seen;
             for (const auto& mode : out.modes) {
                 if (mode != "workspace-write" && mode != "read-only")
                     r.fail(key, fmt::format("'{}' is neither \"workspace-write\" nor "
                                             "\"read-only\"",
                                             mode));
                 if (!seen.insert(mode).second)
                     r.fail(key, fmt::format("names '{}' twice; name each mode once", mode));
             }
         }},
        {"size",
         [&](K key, V v) {
             out.size = count(r, key, v, 0, kMaxPoolSize,
                              fmt::format("must be a whole number of idle boxes per image and mode "
                                          "from 0 to {} (0: no pool)",
                                          kMaxPoolSize));
         }},
        // An idle box past an hour is a box kept for nothing; under ten seconds one would end
        // before a turn could claim it.
        {"maxAge",
         [&](K key, V v) {
             out.max_age_ms = r.duration(key, v, 10'000, 24ull * 3'600'000, "\"10m\"");
         }},
        {"refillConcurrency",
         [&](K key, V v) {
             out.refill_concurrency =
                 count(r, key, v, 1, kMaxRefillConcurrency,
                       fmt::format("must be a whole number of boxes created at once from 1 to {}",
                                   kMaxRefillConcurrency));
         }},
        {"memoryBudget",
         [&](K key, V v) {
             out.memory_budget_bytes =
                 r.size(key, v, 0, units::kMaxSizeBytes, "\"8g\" (0: the size alone bounds it)");
         }},
    };
}

void check_pool(Reader& r, const HostConfig& cfg) {
    const auto& p = cfg.pool;
    if (p.size > 0 && p.images.empty())
        r.fail("run.pool.size",
               "is set but run.pool.images names no image; name the images whose turns the pool "
               "serves, or set size = 0");
    if (p.size == 0) return;
    for (const auto& mode : p.modes)
        if (mode == "workspace-write" && cfg.mode == "read-only")
            r.fail("run.pool.modes",
                   "names \"workspace-write\" beside run.mode = \"read-only\", which no turn may "
                   "widen (docs/design.md §7.6), so no turn could take such a box; drop it");
    if (cfg.codex_auth)
        r.fail("run.pool.size",
               "is set beside run.codexAuth: a pool box is made before its turn and holds nothing "
               "of one, so it cannot get the turn's Codex credentials; unset one of them");
    if (cfg.turn_transport == "tcp")
        r.fail("run.pool.size",
               "needs the unix turn transport (a pool box gets its turn's socket directory through "
               "a mount made when the box was); set run.turnTransport = \"unix\" or \"auto\"");
    if (p.memory_budget_bytes > 0 && cfg.memory_bytes > p.memory_budget_bytes)
        r.fail("run.pool.memoryBudget",
               fmt::format("is less than one box's run.memory ({} bytes), so the pool could hold "
                           "no box; raise it, or set it to 0",
                           cfg.memory_bytes));
}

std::optional<std::string> turn_id_shortfall(const HostConfig& cfg) {
    if (cfg.pool.size != 0 || !uses_box_id_range(cfg)) return std::nullopt;
    const std::uint64_t ids = std::uint64_t{cfg.box_id_last} - cfg.box_id_first + 1;
    if (cfg.max_concurrent_turns <= ids) return std::nullopt;
    return fmt::format(
        "run.maxConcurrentTurns ({}) is more than the {} id(s) of run.boxIdRange {}-{}: turns "
        "beyond them wait queued for an id, and a 'radiald turn' beside them is refused; lower "
        "run.maxConcurrentTurns or widen run.boxIdRange",
        cfg.max_concurrent_turns, ids, cfg.box_id_first, cfg.box_id_last);
}

std::optional<std::string> pool_id_shortfall(const HostConfig& cfg) {
    const auto& p = cfg.pool;
    if (p.size == 0 || !uses_box_id_range(cfg)) return std::nullopt;
    const std::size_t classes = p.images.size() * std::max<std::size_t>(1, p.modes.size());
    const std::uint64_t ids = std::uint64_t{cfg.box_id_last} - cfg.box_id_first + 1;
    const std::uint64_t least = std::uint64_t{classes} * p.size + cfg.max_concurrent_turns;
    if (least <= ids) return std::nullopt;
    return fmt::format(
        "run.pool.size: {} idle boxes for each image and mode ({} of them) and "
        "run.maxConcurrentTurns ({}) need at least {} ids, but run.boxIdRange holds {}; lower "
        "one of them or widen run.boxIdRange",
        p.size, classes, cfg.max_concurrent_turns, least, ids);
}

} // namespace radial::config
