// tests/plugins/sandbox/loaded_sandbox_plugin.h — the real sandbox.so, loaded with dlopen and
// driven through its C descriptor exactly as radiald drives it (tests/plugins/support/
// loaded_plugin.h).
#pragma once

#include "../support/loaded_plugin.h"

namespace radial::test {

inline constexpr const char* kSandboxPluginPath =
    RADIAL_BINARY_DIR "/lib/radial/runtimes/sandbox.so";

// One instance of sandbox.so (create ... destroy), with the host's log captured.
class SandboxInstance : public PluginInstance {
public:
    explicit SandboxInstance(ConfigBuilder& config) : PluginInstance(kSandboxPluginPath, config) {}

    std::vector<std::string> capabilities() {
        std::vector<std::string> names;
        Reported r;
        radial_error_sink err = error_sink(r);
        radial_name_sink sink = name_sink(names);
        d().capabilities(rt(), &sink, &err);
        return names;
    }
    // {bind_host, box_host}
    std::pair<std::string, std::string> tcp_route() {
        std::vector<std::string> bind, box;
        Reported r;
        radial_error_sink err = error_sink(r);
        radial_name_sink b = name_sink(bind), x = name_sink(box);
        d().tcp_route(rt(), &b, &x, &err);
        return {bind.empty() ? "" : bind[0], box.empty() ? "" : box[0]};
    }

private:
    static radial_name_sink name_sink(std::vector<std::string>& into) {
        return radial_name_sink{sizeof(radial_name_sink), &into, [](void* ctx, radial_str name) {
                                    static_cast<std::vector<std::string>*>(ctx)->emplace_back(
                                        name.data, name.size);
                                }};
    }
};

} // namespace radial::test
