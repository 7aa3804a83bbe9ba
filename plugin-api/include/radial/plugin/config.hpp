// radial/plugin/config.hpp — a runtime plugin's errors and its settings, for the C++ helper
// (radial/plugin/runtime.hpp includes it): radial::plugin::Error, the status and key a plugin
// returns, and radial::plugin::Config, its [run.<id>] section read key by key. Header-only.
#pragma once

#include <radial/runtime_plugin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <radial/container_spec.hpp>
#include <radial/names.hpp>
#include <radial/units.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace radial::plugin {

// Thrown by plugin code to return a specific status. `key` names the config key or spec field the
// error is about ("binary", "network"), or is empty.
class Error : public std::runtime_error {
public:
    Error(std::int32_t code, std::string key, const std::string& message)
        : std::runtime_error(message), code_(code), key_(std::move(key)) {}
    Error(std::int32_t code, const std::string& message) : Error(code, {}, message) {}
    std::int32_t code() const noexcept { return code_; }
    const std::string& key() const noexcept { return key_; }

private:
    std::int32_t code_;
    std::string key_;
};

// The plugin's config section (e.g. [run.docker]). Each getter marks its key as known; `finish`
// refuses any key no getter asked for, so a typo is an error and not a silently ignored setting.
// A key of the wrong type is RADIAL_E_INVALID naming the key. Not thread-safe: use in the
// constructor only.
class Config {
public:
    explicit Config(const radial_config* c) {
        if (c == nullptr) return;
        radial_config copy{};
        std::memcpy(&copy, c, c->struct_size < sizeof(copy) ? c->struct_size : sizeof(copy));
        section_ = std::string(to_view(copy.section));
        for_each_item<radial_config_entry>(
            copy.entries, [&](const radial_config_entry& e) { entries_.push_back(e); });
    }

    const std::string& section() const noexcept { return section_; }

    std::optional<std::string> string(std::string_view key) {
        const auto* e = find(key, RADIAL_CONFIG_STRING, "a string");
        if (e == nullptr) return std::nullopt;
        return std::string(to_view(e->string_value));
    }
    std::optional<std::int64_t> integer(std::string_view key) {
        const auto* e = find(key, RADIAL_CONFIG_INT, "an integer");
        if (e == nullptr) return std::nullopt;
        return e->int_value;
    }
    std::optional<bool> boolean(std::string_view key) {
        const auto* e = find(key, RADIAL_CONFIG_BOOL, "true or false");
        if (e == nullptr) return std::nullopt;
        return e->int_value != 0;
    }
    std::optional<std::vector<std::string>> strings(std::string_view key) {
        const auto* e = find(key, RADIAL_CONFIG_STRING_ARRAY, "an array of strings");
        if (e == nullptr) return std::nullopt;
        std::vector<std::string> out;
        for_each_item<radial_str>(e->items,
                                  [&](const radial_str& s) { out.emplace_back(to_view(s)); });
        return out;
    }
    // A size: a string such as "512m" / "2g", or an integer number of bytes.
    std::optional<std::uint64_t> size_bytes(std::string_view key) {
        return number(
            key, "a size such as \"512m\" or \"2g\", or a number of bytes",
            [](std::string_view s) { return units::parse_size_bytes(s); }, 1, units::kMaxSizeBytes,
            units::kMaxSizeText);
    }
    // A duration: a string such as "90s" / "1500ms", or an integer number of milliseconds. A string
    // that is a bare number ("30") is refused: as an integer it would be milliseconds, as text
    // parse_duration_ms would read seconds, and a config must not depend on the quotes.
    std::optional<std::uint64_t> duration_ms(std::string_view key) {
        return number(
            key, "a duration such as \"90s\" or \"1500ms\", or a number of milliseconds",
            [](std::string_view s) -> std::optional<std::uint64_t> {
                if (!s.empty() && s.find_first_not_of("0123456789.") == std::string_view::npos &&
                    s.find_first_not_of("0.") != std::string_view::npos)
                    return std::nullopt;
                return units::parse_duration_ms(s);
            },
            1, units::kMaxDurationMs, units::kMaxDurationText);
    }
    // A CPU count: a string such as "0.5", an integer or a float, in thousandths of a CPU. A count
    // that is not finite or above 1e6 CPUs is RADIAL_E_INVALID, like any other non-count: the
    // conversion to thousandths must never overflow.
    std::optional<std::uint64_t> cpus_milli(std::string_view key) {
        known_.insert(std::string(key));
        const auto* e = lookup(key);
        if (e == nullptr) return std::nullopt;
        constexpr double kMaxCpus = 1e6;
        const char* what = "a CPU count such as 2 or 0.5";
        if ((e->kind == RADIAL_CONFIG_FLOAT &&
             !(std::isfinite(e->float_value) && e->float_value <= kMaxCpus)) ||
            (e->kind == RADIAL_CONFIG_INT && e->int_value > static_cast<std::int64_t>(kMaxCpus)))
            throw Error(RADIAL_E_INVALID, std::string(key), std::string(key) + " must be " + what);
        if (e->kind == RADIAL_CONFIG_FLOAT && e->float_value > 0)
            return static_cast<std::uint64_t>(e->float_value * 1000.0 + 0.5);
        auto v = number(
            key, what, [](std::string_view s) { return units::parse_cpus_milli(s); }, 1000);
        if (v && *v > static_cast<std::uint64_t>(kMaxCpus) * 1000)
            throw Error(RADIAL_E_INVALID, std::string(key), std::string(key) + " must be " + what);
        return v;
    }

    // Throws RADIAL_E_INVALID for the first key that no getter asked for, naming the known key it
    // is probably a typo of ("did you mean 'memory'?").
    void finish() const {
        for (const auto& e : entries_) {
            std::string key(to_view(e.key));
            if (known_.count(key) != 0) continue;
            std::string message = "unknown key '" + key + "' in [" + section_ + "]";
            if (auto near = nearest_name(key, known_)) message += "; did you mean '" + *near + "'?";
            throw Error(RADIAL_E_INVALID, key, message);
        }
    }

private:
    const radial_config_entry* lookup(std::string_view key) const {
        for (const auto& e : entries_)
            if (to_view(e.key) == key) return &e;
        return nullptr;
    }
    const radial_config_entry* find(std::string_view key, std::uint32_t kind, const char* what) {
        known_.insert(std::string(key));
        const auto* e = lookup(key);
        if (e != nullptr && e->kind != kind)
            throw Error(RADIAL_E_INVALID, std::string(key), std::string(key) + " must be " + what);
        return e;
    }
    // A positive number as a string `parse` reads or an integer in `int_unit`s; above `max` (named
    // by `max_text`) is refused naming the limit (docs/design.md §7.3).
    template <class Parse>
    std::optional<std::uint64_t> number(std::string_view key, const char* what, Parse parse,
                                        std::uint64_t int_unit,
                                        std::uint64_t max = ~std::uint64_t{0},
                                        const char* max_text = nullptr) {
        known_.insert(std::string(key));
        const auto* e = lookup(key);
        if (e == nullptr) return std::nullopt;
        std::optional<std::uint64_t> v;
        if (e->kind == RADIAL_CONFIG_INT && e->int_value >= 0)
            v = static_cast<std::uint64_t>(e->int_value) * int_unit;
        else if (e->kind == RADIAL_CONFIG_STRING)
            v = parse(to_view(e->string_value));
        if (v && *v == 0) // well formed, but no setting here means "none": say so, not the form
            throw Error(RADIAL_E_INVALID, std::string(key),
                        std::string(key) + " is zero; it must be more: " + what);
        if (!v)
            throw Error(RADIAL_E_INVALID, std::string(key), std::string(key) + " must be " + what);
        if (*v > max || (e->kind == RADIAL_CONFIG_INT &&
                         static_cast<std::uint64_t>(e->int_value) > max / int_unit))
            throw Error(RADIAL_E_INVALID, std::string(key),
                        std::string(key) + " is more than the limit of " +
                            (max_text != nullptr ? std::string(max_text) : std::to_string(max)) +
                            "; it must be " + what + " of at most that");
        return v;
    }

    std::string section_;
    std::vector<radial_config_entry> entries_;
    std::set<std::string, std::less<>> known_;
};

} // namespace radial::plugin
