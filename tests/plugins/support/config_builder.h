// tests/plugins/support/config_builder.h — builds the C radial_config a host would pass for a
// runtime's section ([run.docker], [run.sandbox]), for the settings tests and the create() of the
// tests that load a real plugin.
#pragma once

#include <radial/runtime_plugin.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace radial::test {

class ConfigBuilder {
public:
    explicit ConfigBuilder(std::string section = "run.docker")
        : section_(keep(std::move(section))) {}
    ConfigBuilder(const ConfigBuilder&) = delete;
    ConfigBuilder& operator=(const ConfigBuilder&) = delete;

    ConfigBuilder& str(std::string key, std::string value) {
        radial_config_entry& e = add(std::move(key), RADIAL_CONFIG_STRING);
        e.string_value = c(keep(std::move(value)));
        return *this;
    }
    ConfigBuilder& integer(std::string key, std::int64_t value) {
        add(std::move(key), RADIAL_CONFIG_INT).int_value = value;
        return *this;
    }
    ConfigBuilder& floating(std::string key, double value) {
        add(std::move(key), RADIAL_CONFIG_FLOAT).float_value = value;
        return *this;
    }
    ConfigBuilder& boolean(std::string key, bool value) {
        add(std::move(key), RADIAL_CONFIG_BOOL).int_value = value ? 1 : 0;
        return *this;
    }
    ConfigBuilder& strings(std::string key, const std::vector<std::string>& values) {
        auto& items = arrays_.emplace_back();
        for (const auto& v : values) items.push_back(c(keep(v)));
        radial_config_entry& e = add(std::move(key), RADIAL_CONFIG_STRING_ARRAY);
        e.items = radial_array{items.empty() ? nullptr : items.data(),
                               static_cast<std::uint32_t>(items.size()), sizeof(radial_str)};
        return *this;
    }

    // Valid until this builder is changed or destroyed.
    const radial_config* get() {
        config_ = radial_config{};
        config_.struct_size = sizeof(radial_config);
        config_.section = c(section_);
        config_.entries =
            radial_array{entries_.empty() ? nullptr : entries_.data(),
                         static_cast<std::uint32_t>(entries_.size()), sizeof(radial_config_entry)};
        return &config_;
    }

private:
    static radial_str c(const std::string& s) { return radial_str{s.data(), s.size()}; }
    const std::string& keep(std::string s) { return strings_.emplace_back(std::move(s)); }
    radial_config_entry& add(std::string key, std::uint32_t kind) {
        radial_config_entry& e = entries_.emplace_back();
        e.key = c(keep(std::move(key)));
        e.kind = kind;
        return e;
    }

    std::deque<std::string> strings_;            // stable addresses for the radial_str views
    std::deque<std::vector<radial_str>> arrays_; // stable item arrays for string arrays
    const std::string& section_;
    std::vector<radial_config_entry> entries_;
    radial_config config_{};
};

} // namespace radial::test
