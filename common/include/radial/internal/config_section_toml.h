// radial/internal/config_section_toml.h — a runtime's TOML table ([run.<id>]) flattened into the
// ConfigSection its plugin's `create` receives (docs/design.md §7): a nested table's keys become
// dotted ("a.b"), and a value is a string, an integer, a boolean, a float or an array of strings.
// One definition for radiald's config reader and for the conformance harness, which is installed
// without radiald's libraries (docs/design.md §2.3). An includer that wants toml++ header-only
// (the harness) defines TOML_HEADER_ONLY before its first include of toml++.
#pragma once

#include <toml++/toml.h>

#include <radial/host/runtime_client.hpp>
#include <string>
#include <utility>

namespace radial::internal {

// Appends the entries of `table` to `out.entries`, each key relative to the runtime's table:
// `rel` followed by a dot, or nothing at the top ("" there). `seen(key, node)` is called with
// every key read, a nested table's included, before its value is looked at. `refuse(key, node,
// problem)` is called for a value no runtime setting can take and must throw; `problem` reads
// after the key ("must be an array of strings"). Exceptions from either pass through, and `out`
// then holds the entries read before; were `refuse` to return, the flattening stops there.
template <class Seen, class Refuse>
void flatten_config_section(const toml::table& table, const std::string& rel,
                            host::ConfigSection& out, Seen&& seen, Refuse&& refuse) {
    for (const auto& [k, v] : table) {
        std::string key = rel.empty() ? std::string(k.str()) : rel + "." + std::string(k.str());
        seen(key, v);
        if (const auto* sub = v.as_table()) {
            flatten_config_section(*sub, key, out, seen, refuse);
            continue;
        }
        host::ConfigEntry e;
        e.key = key;
        if (const auto* s = v.as_string()) {
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
                if (!item.is_string()) {
                    refuse(key, v, "must be an array of strings");
                    return;
                }
                e.items.emplace_back(*item.as_string());
            }
        } else {
            refuse(key, v,
                   "has a type runtime settings cannot take (use a string, number, boolean or "
                   "array of strings)");
            return;
        }
        out.entries.push_back(std::move(e));
    }
}

} // namespace radial::internal
