#include "config_file.h"

// Header-only toml++: the installed harness then needs no toml++ shared library at run time.
#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

#include <sstream>

namespace radial::conformance {
namespace {

std::string where(const std::string& file, const toml::source_region& r) {
    std::ostringstream s;
    s << file << ":" << r.begin.line << ":" << r.begin.column;
    return s.str();
}

// Duplicates radiald's flattening (host/config/host_config.cpp, Reader::flatten), because the
// harness is installed without radiald's libraries; keep the two in step when either changes.
void flatten(const std::string& file, const std::string& section, const std::string& rel,
             const toml::table& t, host::ConfigSection& out) {
    for (const auto& [k, v] : t) {
        std::string key = rel.empty() ? std::string(k.str()) : rel + "." + std::string(k.str());
        host::ConfigEntry e;
        e.key = key;
        if (const auto* sub = v.as_table()) {
            flatten(file, section, key, *sub, out);
            continue;
        } else if (const auto* s = v.as_string()) {
            e.kind = RADIAL_CONFIG_STRING;
            e.string_value = std::string(s->get());
        } else if (const auto* i = v.as_integer()) {
            e.kind = RADIAL_CONFIG_INT;
            e.int_value = i->get();
        } else if (const auto* b = v.as_boolean()) {
            e.kind = RADIAL_CONFIG_BOOL;
            e.int_value = b->get() ? 1 : 0;
        } else if (const auto* f = v.as_floating_point()) {
            e.kind = RADIAL_CONFIG_FLOAT;
            e.float_value = f->get();
        } else if (const auto* a = v.as_array()) {
            e.kind = RADIAL_CONFIG_STRING_ARRAY;
            for (const auto& item : *a) {
                if (!item.is_string())
                    throw ConfigFileError(where(file, v.source()) + ": " + section + "." + key +
                                          " must be an array of strings");
                e.items.emplace_back(*item.as_string());
            }
        } else {
            throw ConfigFileError(where(file, v.source()) + ": " + section + "." + key +
                                  " has a type runtime settings cannot take (use a string, "
                                  "number, boolean or array of strings)");
        }
        out.entries.push_back(std::move(e));
    }
}

} // namespace

host::ConfigSection empty_config_section(const std::string& runtime_id) {
    host::ConfigSection s;
    s.section = "run." + runtime_id;
    return s;
}

host::ConfigSection load_config_section(const std::string& path, const std::string& runtime_id) {
    toml::table root;
    try {
        root = toml::parse_file(path);
    } catch (const toml::parse_error& e) {
        throw ConfigFileError(where(path, e.source()) + ": " + std::string(e.description()));
    }
    host::ConfigSection out = empty_config_section(runtime_id);
    const toml::node* run = root.get("run");
    if (run == nullptr) return out;
    if (!run->is_table())
        throw ConfigFileError(where(path, run->source()) + ": run must be a table");
    const toml::node* section = run->as_table()->get(runtime_id);
    if (section == nullptr) return out;
    if (!section->is_table())
        throw ConfigFileError(where(path, section->source()) + ": " + out.section +
                              " must be a table");
    flatten(path, out.section, "", *section->as_table(), out);
    return out;
}

} // namespace radial::conformance
