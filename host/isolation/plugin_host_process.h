// host/isolation/plugin_host_process.h — one radial-plugin-host process, as radiald sees it: its
// pid, its control socket, the thread that forwards its log lines, and how it ended
// (docs/design.md §5.13).
#pragma once

#include <radial/internal/unique_fd.h>
#include <radial/runtime_plugin.h>
#include <radial/session.h>
#include <sys/types.h>

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

    // Starts `helper` (the radial-plugin-host executable) on the plugin open at `plugin_fd` (the
    // file radiald checked, passed as the process's fd 4, so a file put at its path since is not
    // what runs; `plugin_path` is for messages, `plugin_id` the id radiald read, which the
    // process checks). Its control socket is its fd 3, /dev/null its stdin, stdout and stderr; it
    // gets radiald's environment and a process group of its own (a terminal's Ctrl-C aimed at
    // radiald does not end it: it ends when its control socket closes). `log` receives the
    // plugin's log lines from a thread of this object until it is destroyed. Throws
    // std::runtime_error naming the helper when it cannot be started.
    PluginHostProcess(const std::string& helper, int plugin_fd, const std::string& plugin_path,
                      const std::string& plugin_id, LogFn log);
    // Closes the control socket (the process exits at that), and waits until it has ended: at
    // most 5 s before it is SIGKILLed.
    ~PluginHostProcess();
    PluginHostProcess(const PluginHostProcess&) = delete;
    PluginHostProcess& operator=(const PluginHostProcess&) = delete;

    // Sends `request` as one call and delivers what the plugin reports to `sinks` while it runs.
    // The reply, or nullopt when the process ended (or broke the protocol, then it is killed)
    // before replying: ended() then says how.
    std::optional<nlohmann::json> call(const nlohmann::json& request, const CallSinks& sinks);

    // Whether the process is still running (not yet exited, whether or not reaped); never blocks.
    bool alive();
    // How the process ended, e.g. "was killed by signal 11 (Segmentation fault)": waits until it
    // has ended — at most 5 s, after which it is SIGKILLed — and reaps it. It does not depend on
    // the control socket, which a child the plugin started may hold open.
    std::string ended();
    pid_t pid() const noexcept { return pid_; }

    // Kills the process, whose reply broke the protocol in a way only the caller can see (a
    // field missing): nothing it sent after can be trusted, nor a call socket it still holds.
    // ended() then says `why`. [thread-safe]
    void abandon(const std::string& why) { kill_for("broke the call protocol (" + why + ")"); }
    // Kills the process, which did not answer a call within the caller's budget; ended() then
    // says `why` ("… did not return within N ms"). [thread-safe]
    void kill_past_budget(std::string why) { kill_for(std::move(why)); }

private:
    void forward_logs(LogFn log);
    void kill_for(std::string why);

    pid_t pid_ = -1;
    internal::UniqueFd control_;
    internal::UniqueFd pidfd_;
    std::mutex send_mutex_; // one descriptor on the control socket at a time
    // Call sockets whose last call returned, for the next calls; guarded by send_mutex_.
    std::vector<internal::UniqueFd> idle_;
    std::mutex reap_mutex_; // one reaper; guards the two below
    bool reaped_ = false;
    std::string how_ended_;
    std::string killed_because_; // why radiald killed it, if it did: "broke the call protocol (…)"
    std::thread reader_;
};

} // namespace radial::isolation
