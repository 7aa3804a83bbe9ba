#include "config_file.h"

// Header-only toml++: the installed harness then needs no toml++ shared library at run time.
#define TOML_HEADER_ONLY 1
#include <radial/internal/config_section_toml.h>
#include <toml++/toml.h>

#include <sstream>

namespace radial::conformance {
namespace {

std::string where(const std::string& file, const toml::source_region& r) {
    std::ostringstream s;
    s << file << ":" << r.begin.line << ":" << r.begin.column;
    return s.str();
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
    internal::flatten_config_section(
        *section->as_table(), "", out, [](const std::string&, const toml::node&) {},
        [&](const std::string& key, const toml::node& n, const char* problem) {
            throw ConfigFileError(where(path, n.source()) + ": " + out.section + "." + key + " " +
                                  problem);
        });
    return out;
}

} // namespace radial::conformance
