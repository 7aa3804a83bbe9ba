// host/isolation/isolated_runtime.h — a runtime plugin run in a process of its own
// (run.pluginIsolation = "process", docs/design.md §5.13).
//
// radiald drives it through a descriptor of the same C ABI as the plugin's own, so everything
// above the seam (RuntimeClient, sessions, the box-root extension) is unchanged. Each of its
// functions carries the call to a radial-plugin-host process that has the plugin loaded. When that
// process ends during a call (a segfault, an abort, a corrupted heap), the call fails with
// RADIAL_E_INTERNAL and a message saying how it ended; the next call starts a new process and
// creates the instance again with the same config. A `run` or session exec that the crash ended
// also has its box removed through the new process, so nothing of it is left running.
#pragma once

#include <radial/internal/unique_fd.h>
#include <radial/runtime_plugin.h>

#include <chrono>
#include <memory>
#include <string>

namespace radial::isolation {

// The descriptor radiald uses in place of `real` (the plugin's own, read in radiald: its entry is
// pure by the ABI's rule, so reading it runs none of the plugin's code paths that can crash a
// call). Its identity, ABI version and the presence of each optional function are the plugin's.
// The file at `plugin_path` is opened here, once: every host process loads that open file, so a
// file put at the path later (after radiald's trust checks) is never what runs. Throws
// std::runtime_error when it cannot be opened.
// The returned object owns the descriptor and must outlive every instance made from it (a
// RuntimeClient's keep-alive). `helper` is the radial-plugin-host executable. `restart_budget`
// (run.pluginCallTimeout; zero: none) bounds what a call does on behalf of a crashed process:
// creating the instance again in a new one, and removing the box of a run the crash ended. Each
// runs inside another call (a kill, a run) and holds the instance, so a plugin whose create hangs
// after a crash would otherwise hold that call, and every call after it, for ever; past the
// budget the new process is killed and the call fails saying so. Thread-safety: the descriptor's
// functions follow the ABI's tags, as the plugin's own would.
class IsolatedPlugin {
public:
    static std::shared_ptr<IsolatedPlugin> make(const radial_runtime_descriptor& real,
                                                std::string plugin_path, std::string helper,
                                                std::chrono::milliseconds restart_budget = {});
    const radial_runtime_descriptor* descriptor() const noexcept { return &proxy_; }
    const std::string& helper() const noexcept { return helper_; }
    const std::string& plugin_path() const noexcept { return plugin_path_; }
    int plugin_fd() const noexcept { return plugin_fd_.get(); }
    const std::string& id() const noexcept { return id_; }
    std::chrono::milliseconds restart_budget() const noexcept { return restart_budget_; }

    IsolatedPlugin(const IsolatedPlugin&) = delete;
    IsolatedPlugin& operator=(const IsolatedPlugin&) = delete;
    ~IsolatedPlugin();

private:
    IsolatedPlugin() = default;
    radial_runtime_descriptor proxy_{};
    internal::UniqueFd plugin_fd_;
    std::string plugin_path_, helper_, id_, name_, version_;
    std::chrono::milliseconds restart_budget_{0};
};

// Where radial-plugin-host is: ../lib/radial from radiald's directory, beside radial-init, in an
// install (/usr/bin, /usr/lib/radial) as in a build tree (bin/, lib/radial/); empty when there is
// no executable one there.
std::string find_plugin_host(const std::string& radiald_dir);

} // namespace radial::isolation
