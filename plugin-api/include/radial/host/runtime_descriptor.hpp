// radial/host/runtime_descriptor.hpp — what the host reads of a plugin's descriptor before it
// creates an instance (its identity, its required functions, whether this host can use it), and
// the plugin's config section as the C ABI's radial_config. Part of the host side of the C ABI
// (radial/host/runtime_client.hpp); header-only, shared by radiald's loader and the conformance
// harness. Pure functions and values; thread-safe.
#pragma once

#include <radial/runtime_plugin.h>

#include <cstdint>
#include <radial/container_spec.hpp>
#include <radial/names.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace radial::host {

// The longest name or version a descriptor may declare, in bytes (the id is at most 32). A longer
// one is a descriptor problem; read_descriptor_info copies at most this much of any of the three,
// so a declared size of terabytes costs nothing.
inline constexpr std::size_t kMaxDescriptorText = 256;

// The identity a descriptor declares, copied out of it (each string cut at kMaxDescriptorText
// bytes). Reading it is safe for any descriptor whose struct_size covers the fields; absent fields
// read as empty.
struct DescriptorInfo {
    std::uint16_t abi_major = 0;
    std::uint16_t abi_minor = 0;
    std::string id;
    std::string name;
    std::string version;
};

inline DescriptorInfo read_descriptor_info(const radial_runtime_descriptor& d) {
    DescriptorInfo info;
    info.abi_major = d.abi_major;
    info.abi_minor = d.abi_minor;
    auto cut = [](radial_str s) { return std::string(to_view(s).substr(0, kMaxDescriptorText)); };
    if (RADIAL_HAS_FIELD(&d, radial_runtime_descriptor, id)) info.id = cut(d.id);
    if (RADIAL_HAS_FIELD(&d, radial_runtime_descriptor, name)) info.name = cut(d.name);
    if (RADIAL_HAS_FIELD(&d, radial_runtime_descriptor, version)) info.version = cut(d.version);
    return info;
}

// The required functions (create, destroy, run, list_by_label, kill) that `d` lacks — beyond its
// struct_size or NULL — in that order; empty when it has them all. The one list of them, for the
// host's loader and the conformance harness.
inline std::vector<const char*> missing_required_functions(const radial_runtime_descriptor& d) {
    const radial_runtime_descriptor* p = &d;
    const std::pair<bool, const char*> required[] = {
        {RADIAL_HAS_FIELD(p, radial_runtime_descriptor, create) && d.create != nullptr, "create"},
        {RADIAL_HAS_FIELD(p, radial_runtime_descriptor, destroy) && d.destroy != nullptr,
         "destroy"},
        {RADIAL_HAS_FIELD(p, radial_runtime_descriptor, run) && d.run != nullptr, "run"},
        {RADIAL_HAS_FIELD(p, radial_runtime_descriptor, list_by_label) &&
             d.list_by_label != nullptr,
         "list_by_label"},
        {RADIAL_HAS_FIELD(p, radial_runtime_descriptor, kill) && d.kill != nullptr, "kill"},
    };
    std::vector<const char*> missing;
    for (const auto& [present, name] : required)
        if (!present) missing.push_back(name);
    return missing;
}

// Why a descriptor cannot be used by this host, or empty when it can. Checks, in order: the frozen
// header is present, the major matches, the plugin does not need a newer minor, the required
// functions are present and non-NULL, the id is well formed, and the name and version are at most
// kMaxDescriptorText bytes. Copies at most that much of any declared string.
inline std::string descriptor_problem(const radial_runtime_descriptor* d) {
    using std::to_string;
    if (d == nullptr) return "its entry point returned no descriptor";
    if (d->struct_size < 8)
        return "its descriptor is truncated (" + to_string(d->struct_size) + " bytes)";
    if (d->abi_major != RADIAL_RT_ABI_MAJOR)
        return "it targets runtime ABI " + to_string(d->abi_major) + "." + to_string(d->abi_minor) +
               ", this radiald supports " + to_string(RADIAL_RT_ABI_MAJOR) + "." +
               to_string(RADIAL_RT_ABI_MINOR) + "; rebuild the plugin against plugin-api " +
               to_string(RADIAL_RT_ABI_MAJOR) + ".x";
    if (d->abi_minor > RADIAL_RT_ABI_MINOR)
        return "it needs runtime ABI " + to_string(d->abi_major) + "." + to_string(d->abi_minor) +
               ", this radiald supports " + to_string(RADIAL_RT_ABI_MAJOR) + "." +
               to_string(RADIAL_RT_ABI_MINOR) + "; upgrade radiald or use an older plugin";
    if (const auto missing = missing_required_functions(*d); !missing.empty())
        return std::string("its descriptor lacks the required function '") + missing.front() + "'";
    std::string_view id = to_view(d->id);
    if (!is_runtime_id(id)) {
        if (id.size() > kMaxDescriptorText)
            return "its runtime id is " + to_string(id.size()) +
                   " bytes long; it must match [a-z0-9-]{1,32}";
        return "its runtime id '" + std::string(id) + "' does not match [a-z0-9-]{1,32}";
    }
    const std::pair<const char*, std::size_t> texts[] = {
        {"name", RADIAL_HAS_FIELD(d, radial_runtime_descriptor, name) ? d->name.size : 0},
        {"version", RADIAL_HAS_FIELD(d, radial_runtime_descriptor, version) ? d->version.size : 0},
    };
    for (const auto& [what, size] : texts)
        if (size > kMaxDescriptorText)
            return std::string("its descriptor's ") + what + " is " + to_string(size) +
                   " bytes long; at most " + to_string(kMaxDescriptorText) + " are allowed";
    return {};
}

// One entry of the plugin's config section, as C++ values (see radial_config_entry).
struct ConfigEntry {
    std::string key;
    std::uint32_t kind = RADIAL_CONFIG_STRING;
    std::string string_value;
    std::int64_t int_value = 0;
    double float_value = 0;
    std::vector<std::string> items;
};

// The plugin's own config section (e.g. [run.docker]), flattened: what `create` receives.
struct ConfigSection {
    std::string section; // "run.docker"
    std::vector<ConfigEntry> entries;
};

// `section` as the C ABI's radial_config, borrowing from it (it must outlive this): what
// `create` is given, by radiald and by the conformance harness alike. Not copyable: the C arrays
// point into its own vectors.
class CConfig {
public:
    explicit CConfig(const ConfigSection& section) {
        items_.reserve(section.entries.size());
        for (const auto& e : section.entries) {
            auto& items = items_.emplace_back();
            for (const auto& s : e.items) items.push_back(to_c(s));
            radial_config_entry ce{};
            ce.key = to_c(e.key);
            ce.kind = e.kind;
            ce.string_value = to_c(e.string_value);
            ce.int_value = e.int_value;
            ce.float_value = e.float_value;
            ce.items = {items.empty() ? nullptr : items.data(),
                        static_cast<std::uint32_t>(items.size()), sizeof(radial_str)};
            entries_.push_back(ce);
        }
        c_.struct_size = sizeof c_;
        c_.section = to_c(section.section);
        c_.entries = {entries_.empty() ? nullptr : entries_.data(),
                      static_cast<std::uint32_t>(entries_.size()), sizeof(radial_config_entry)};
    }
    CConfig(const CConfig&) = delete;
    CConfig& operator=(const CConfig&) = delete;
    const radial_config* get() const noexcept { return &c_; }

private:
    std::vector<std::vector<radial_str>> items_;
    std::vector<radial_config_entry> entries_;
    radial_config c_{};
};

} // namespace radial::host
