// host/isolation/plugin_host_process.h — one radial-plugin-host process, as radiald sees it: its
// pid, its control socket, the thread that forwards its log lines, and how it ended
// (docs/design.md §5.12).
#pragma once

#include <radial/internal/unique_fd.h>
#include <radial/runtime_plugin.h>
#include <radial/session.h>
#include <sys/types.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace radial::isolation {

// The sinks one call may report to; null members are sinks the call does not have.
struct CallSinks {
    const radial_error_sink* err = nullptr;
    const radial_name_sink* names[2] = {nullptr, nullptr};
    const radial_disposition_sink* dispositions = nullptr;
    const radial_output_sink* output = nullptr;
    const radial_change_sink* changes = nullptr;
};

// A started radial-plugin-host. Thread-safety: call() from any number of threads at once (each
// call has a socket of its own); the rest as documented per member.
class PluginHostProcess {
public:
    using LogFn = std::function<void(std::uint32_t level, std::string_view line)>;

    // Starts `helper` (the radial-plugin-host executable) on `plugin_path`, with a control socket
    // on its fd 3, /dev/null as its stdin, stdout and stderr, and radiald's environment. `log`
    // receives the plugin's log lines from a thread of this object until it is destroyed.
    // Throws std::runtime_error naming the helper when it cannot be started.
    PluginHostProcess(const std::string& helper, const std::string& plugin_path, LogFn log);
    // Closes the control socket (the process exits at that), and waits until it has ended: at
    // most 5 s before it is SIGKILLed.
    ~PluginHostProcess();
    PluginHostProcess(const PluginHostProcess&) = delete;
    PluginHostProcess& operator=(const PluginHostProcess&) = delete;

    // Sends `request` as one call and delivers what the plugin reports to `sinks` while it runs.
    // The reply, or nullopt when the process ended (or broke the protocol, then it is killed)
    // before replying: ended() then says how.
    std::optional<nlohmann::json> call(const nlohmann::json& request, const CallSinks& sinks);

    // Whether the process has ended (it crashed, or was killed); never blocks.
    bool has_ended();
    // How the process ended, e.g. "was killed by signal 11 (Segmentation fault)": waits until it
    // has ended, at most 5 s after which it is SIGKILLed.
    std::string ended();
    pid_t pid() const noexcept { return pid_; }

private:
    void forward_logs(LogFn log);
    void kill_and_reap();

    pid_t pid_ = -1;
    internal::UniqueFd control_;
    internal::UniqueFd pidfd_;
    std::mutex send_mutex_; // one descriptor on the control socket at a time
    // Call sockets whose last call returned, for the next calls; guarded by send_mutex_.
    std::vector<internal::UniqueFd> idle_;
    std::mutex mutex_;
    std::condition_variable cv_;
    bool reaped_ = false;
    std::string how_ended_;
    std::thread reader_;
};

} // namespace radial::isolation
