#include "daemon/config_reload.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <map>
#include <set>
#include <sstream>

#include "config/config_text.h"
#include "config/host_config.h"

namespace radial::daemon {
namespace {

void flatten(const toml::table& t, const std::string& prefix,
             std::map<std::string, std::string>& out) {
    for (const auto& [k, v] : t) {
        const std::string key =
            prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
        if (const auto* sub = v.as_table()) {
            flatten(*sub, key, out);
            continue;
        }
        std::ostringstream text;
        v.visit([&](const auto& node) { text << node; });
        out[key] = text.str();
    }
}

std::map<std::string, std::string> flat(const std::string& toml_text, const char* which) {
    std::map<std::string, std::string> out;
    try {
        flatten(toml::parse(toml_text), "", out);
    } catch (const toml::parse_error& e) {
        throw config::ConfigError(fmt::format("the {} config does not parse: {}", which,
                                              config::toml_problem(e.description())));
    }
    return out;
}

} // namespace

bool is_reloadable_key(std::string_view key) {
    return key == "run.maxConcurrentTurns" || key == "run.shutdownGrace" || key == "run.logLevel";
}

std::vector<ConfigChange> changed_keys(const std::string& before, const std::string& after) {
    const auto a = flat(before, "running");
    const auto b = flat(after, "new");
    std::set<std::string> keys;
    for (const auto& [k, v] : a) keys.insert(k);
    for (const auto& [k, v] : b) keys.insert(k);
    std::vector<ConfigChange> out;
    for (const auto& k : keys) {
        auto ia = a.find(k), ib = b.find(k);
        if (ia != a.end() && ib != b.end() && ia->second == ib->second) continue;
        out.push_back({k, is_reloadable_key(k)});
    }
    return out;
}

} // namespace radial::daemon
