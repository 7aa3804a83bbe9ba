// host/config/config_reader.h — reading radiald's config file's values: each read remembers where
// the key stands in the file, and each refusal names the file, line, column and key with the
// problem (docs/design.md §7.1). Used by host_config.cpp and run_keys.cpp only. Not thread-safe.
#pragma once

#include <fmt/format.h>
#include <radial/internal/config_section_toml.h>
#include <toml++/toml.h>

#include <filesystem>
#include <string>
#include <vector>

#include "config/bounded_units.h"
#include "config/host_config.h"

namespace radial::config {

// "FILE:LINE:COLUMN".
inline std::string position(const std::string& file, const toml::source_region& r) {
    return fmt::format("{}:{}:{}", file, r.begin.line, r.begin.column);
}

// The reader of one config file into `cfg`: refusals throw ConfigError.
class Reader {
public:
    explicit Reader(HostConfig& cfg) : cfg_(cfg) {}

    [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
        throw ConfigError(fmt::format("{}{}: {}", cfg_.where(key), key, problem));
    }

    void remember(const std::string& key, const toml::node& n) {
        cfg_.positions[key] = position(cfg_.file, n.source());
    }

    std::string string(const std::string& key, const toml::node& n) {
        remember(key, n);
        if (!n.is_string()) fail(key, "must be a string");
        return std::string(*n.as_string());
    }

    std::vector<std::string> strings(const std::string& key, const toml::node& n) {
        remember(key, n);
        const auto* a = n.as_array();
        if (a == nullptr) fail(key, "must be an array of strings");
        std::vector<std::string> out;
        for (const auto& item : *a) {
            if (!item.is_string()) fail(key, "must be an array of strings");
            out.emplace_back(*item.as_string());
        }
        return out;
    }

    // Refuses a `kind` ("duration", "size") given as something other than a string, saying it
    // must be one; a bare number is told how to say its unit (`unit`, e.g. "s").
    [[noreturn]] void not_a_string(const std::string& key, const toml::node& n,
                                   std::string_view kind, std::string_view example,
                                   std::string_view unit) {
        if (const auto* i = n.as_integer())
            fail(key, fmt::format("must be a string, a {} such as {}; {} is a bare number "
                                  "(\"{}{}\" says its unit)",
                                  kind, example, i->get(), i->get(), unit));
        fail(key, fmt::format("must be a string, a {} such as {}", kind, example));
    }

    // A duration string from `min` to `max` ms (docs/design.md §7.3).
    std::uint64_t duration(const std::string& key, const toml::node& n, std::uint64_t min,
                           std::uint64_t max, std::string_view example) {
        remember(key, n);
        std::uint64_t ms = 0;
        const auto* str = n.as_string();
        if (str == nullptr) not_a_string(key, n, "duration", example, "s");
        // As the integer 30 is refused, so is "30": a file says its unit (a flag's bare number
        // is seconds, as timeout(1) reads it).
        if (std::string bare = bare_number_problem(str->get()); !bare.empty()) fail(key, bare);
        std::string problem = duration_problem(str->get(), ms, min, max, example);
        if (!problem.empty()) fail(key, problem);
        return ms;
    }

    // A size from `min` to `max` bytes: a string such as "256m", or with `integers` a number of
    // bytes (docs/design.md §7.3).
    std::uint64_t size(const std::string& key, const toml::node& n, std::uint64_t min,
                       std::uint64_t max, std::string_view example, bool integers = true) {
        remember(key, n);
        std::uint64_t bytes = 0;
        std::string text;
        if (const auto* str = n.as_string())
            text = str->get();
        else if (const auto* i = n.as_integer(); i != nullptr && integers)
            text = fmt::format("{}", i->get());
        else
            not_a_string(key, n, "size", example, "m");
        std::string problem = size_problem(text, bytes, min, max, example);
        if (!problem.empty()) fail(key, problem);
        return bytes;
    }

    // An array of absolute paths, each normalised without a trailing '/'.
    std::vector<std::string> absolute_paths(const std::string& key, const toml::node& n) {
        std::vector<std::string> out = strings(key, n);
        for (auto& p : out) {
            if (p.empty() || p.front() != '/')
                fail(key, fmt::format("'{}' is not an absolute path", p));
            p = std::filesystem::path(p).lexically_normal().string();
            if (p.size() > 1 && p.back() == '/') p.pop_back();
        }
        return out;
    }

    // Flattens a runtime's table into entries with keys relative to `prefix` ("run.docker").
    void flatten(const std::string& prefix, const toml::table& t, host::ConfigSection& out) {
        internal::flatten_config_section(
            t, "", out,
            [&](const std::string& key, const toml::node& n) { remember(prefix + "." + key, n); },
            [&](const std::string& key, const toml::node&, const char* problem) {
                fail(prefix + "." + key, problem);
            });
    }

private:
    HostConfig& cfg_;
};

} // namespace radial::config
