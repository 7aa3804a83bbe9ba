#include "config/key_table.h"

#include <fmt/format.h>

#include "text/nearest_word.h"

namespace radial::config {

std::string unknown_key_problem(std::string_view name, const std::vector<KeyReader>& readers,
                                const UnknownKeys& unknown) {
    std::vector<std::string> names;
    for (const auto& r : readers) names.emplace_back(r.name);
    std::string problem = "unknown key";
    if (auto near = text::nearest_word(std::string(name), names))
        problem += fmt::format("; did you mean '{}'?", *near);
    std::string rest;
    if (!unknown.reference.empty()) {
        rest = fmt::format("see {}", unknown.reference);
    } else {
        rest = fmt::format("{} takes ", unknown.table);
        for (std::size_t i = 0; i < names.size(); ++i) {
            if (i > 0) rest += i + 1 == names.size() ? " and " : ", ";
            rest += names[i];
        }
    }
    // After a question, the rest is an aside.
    return problem.back() == '?' ? fmt::format("{} ({})", problem, rest)
                                 : fmt::format("{}; {}", problem, rest);
}

void read_keys(const toml::table& table, std::string_view prefix,
               const std::vector<KeyReader>& readers, const UnknownKeys& unknown,
               const std::function<void(const std::string& key, const toml::node& value,
                                        const std::string& problem)>& refuse,
               const std::function<bool(const std::string& name, const toml::node& value)>& other) {
    for (const auto& [k, v] : table) {
        const std::string name(k.str());
        const std::string key = prefix.empty() ? name : fmt::format("{}.{}", prefix, name);
        const KeyReader* reader = nullptr;
        for (const auto& r : readers)
            if (r.name == name) reader = &r;
        if (reader != nullptr) {
            reader->read(key, v);
        } else if (!other || !other(name, v)) {
            refuse(key, v, unknown_key_problem(name, readers, unknown));
        }
    }
}

} // namespace radial::config
