#include "sandbox_settings.h"

#include <radial/internal/names.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>

#include "support/settings_error.h"

namespace radial::sandbox {

namespace {

using radial::plugin::Error;

// A value sbx reads as one word: an option's argument or a positional.
void check_word(const radial::plugin::Config& config, std::string_view key, std::string_view v,
                std::string_view what) {
    if (v.empty())
        plugin_support::refuse_setting(config, key,
                                       "the value is empty; give " + std::string(what));
    if (v.front() == '-')
        plugin_support::refuse_setting(
            config, key,
            "'" + std::string(v) + "' starts with '-', which sbx reads as an option; give " +
                std::string(what));
    if (internal::has_space_or_control(v))
        plugin_support::refuse_setting(config, key,
                                       "'" + std::string(v) +
                                           "' contains whitespace or a control character; give " +
                                           std::string(what));
}

} // namespace

SandboxSettings parse_sandbox_settings(radial::plugin::Config& config) {
    long n = ::sysconf(_SC_NPROCESSORS_ONLN);
    return parse_sandbox_settings(config, n > 0 ? static_cast<unsigned>(n) : 0u);
}

SandboxSettings parse_sandbox_settings(radial::plugin::Config& config, unsigned online_cpus) {
    SandboxSettings s;
    const std::uint64_t host_cpus_milli = static_cast<std::uint64_t>(online_cpus) * 1000;
    if (host_cpus_milli != 0) s.cpus_milli = std::min(s.cpus_milli, host_cpus_milli);
    if (auto v = config.size_bytes("memory")) {
        if (*v < (512ull << 20))
            plugin_support::refuse_setting(
                config, "memory",
                std::to_string(*v) +
                    " bytes is too little for a microVM with its own kernel; give at least "
                    "\"512m\", e.g. \"4g\"");
        s.memory_bytes = *v;
    }
    if (auto v = config.cpus_milli("cpus")) {
        if (*v < 1000 || *v % 1000 != 0)
            plugin_support::refuse_setting(config, "cpus",
                                           "sbx takes a whole number of CPUs; give e.g. 1 or 2");
        if (host_cpus_milli != 0 && *v > host_cpus_milli)
            plugin_support::refuse_setting(
                config, "cpus",
                std::to_string(*v / 1000) + " CPUs is more than this host's " +
                    std::to_string(online_cpus) + " online CPUs; give at most " +
                    std::to_string(online_cpus));
        s.cpus_milli = *v;
    }
    if (auto v = config.string("binary")) {
        if (v->empty() || v->find('\0') != std::string::npos)
            plugin_support::refuse_setting(config, "binary",
                                           "the value is empty; give the sbx CLI's name or path");
        plugin_support::refuse_untrusted_program(config, "binary", *v, "replace the sbx CLI");
        s.binary = *v;
    }
    if (auto v = config.string("template")) {
        check_word(config, "template", *v, "a template image such as \"radial/turn:latest\"");
        s.template_image = *v;
    }
    if (auto v = config.string("agent")) {
        check_word(config, "agent", *v, "an sbx agent such as \"claude\" or \"shell\"");
        s.agent = *v;
    }
    if (auto v = config.strings("kits")) {
        for (std::size_t i = 0; i < v->size(); ++i)
            check_word(config, "kits", (*v)[i], "a kit reference (a directory, ZIP or OCI image)");
        s.kits = *v;
    }
    if (auto v = config.strings("createArgs")) {
        for (const auto& a : *v) {
            if (a.find('\0') != std::string::npos)
                plugin_support::refuse_setting(config, "createArgs",
                                               "an element contains a NUL byte; remove it");
            if (a == "--name" || a.starts_with("--name="))
                plugin_support::refuse_setting(
                    config, "createArgs",
                    "'" + a +
                        "' would rename the sandbox, whose name is the only mark of which "
                        "radiald owns it; remove it");
        }
        s.create_args = *v;
    }
    return s;
}

} // namespace radial::sandbox
