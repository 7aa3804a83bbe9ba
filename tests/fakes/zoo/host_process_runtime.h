// tests/fakes/zoo/host_process_runtime.h — the well-behaved base of the conformance zoo: a runtime
// whose "box" is a process group on the host (no isolation at all; test use only), written with
// the plugin helper. Each zoo plugin turns on exactly one defect, so that the conformance harness
// must fail exactly the check that defect breaks (docs/design.md §5.11).
//
// What it honours: argv (execvp, so PATH lookup uses the host's default path), env (exactly the
// spec's, nothing inherited), workdir (chdir), timeoutMs, onOutput. It refuses everything that
// needs a container (image is superseded: there is none). Boxes live in one registry per loaded
// library, so every instance sees every box (as reconciliation needs). With the config key `boxDir`
// each box also has a file there, named after its label and holding its process group id, from
// before its process starts until the box is removed: what the harness's --verify-gone probe and
// --cleanup command look at, independently of the plugin. The config key `hang`, an array of
// "preflight", "describe_spec", "list_by_label", "kill", "get_extension", "session create",
// "session destroy",
// "resolve_image", "session changes", "session snapshot", "remove snapshot", "template load",
// makes those calls block forever (the runtime offers radial.template/1 only when its load is to
// hang; its snapshot calls otherwise refuse, as the helper's defaults do). The config key
// `changeBytes` makes its changes call give one changed file of that many bytes instead.
#pragma once

#include <map>
#include <mutex>
#include <radial/plugin/runtime.hpp>
#include <radial/plugin/session.hpp>
#include <radial/plugin/templates.hpp>
#include <set>
#include <string>

namespace radial::zoo {

// The defects a zoo plugin can have; all off is a conforming runtime.
struct Defects {
    bool ignore_timeout = false;       // spec.timeout_ms is ignored
    bool hang_until_killed = false;    // run does not return when the box ends, only when killed
    bool deaf = false;                 // run never returns at all, not even when killed
    bool list_everything = false;      // list_by_label ignores the prefix
    bool leave_box_after_kill = false; // kill ends the process but the box stays listed
    bool keep_exited = false;          // a box whose workload exits by itself is never removed, and
                                       // list_by_label lists running boxes only
    bool kill_own_only = false;        // kill acts only on boxes this instance started
    bool squash_exit_codes = false;    // exit codes 4-255 are reported as 1
    bool kill_noop = false;            // kill returns RADIAL_OK and does nothing
    bool hang_list = false;            // list_by_label never returns
    bool claim_confinement = false;    // reports user, readOnlyRootfs, tmpfs, network, pidsLimit,
                                    // memory, cpus and extraHosts HONOURED, and does none of them
    bool leak_session_env = false; // a session's exec also gets the previous exec's env
    bool keep_session = false;     // session destroy returns and the session stays listed
};

// Sessions (radial.session/1): a session is a registry entry; each exec is a run of the exec's
// argv with its own env, in the session's workdir, as the box "<label>.exec". Being host
// processes, what an exec writes is on the host, so the next exec sees it.
class HostProcessRuntime : public radial::plugin::Runtime,
                           public radial::plugin::Sessions,
                           public radial::plugin::Templates {
public:
    HostProcessRuntime(const radial::plugin::Host& host, radial::plugin::Config& config,
                       Defects defects);

    void preflight() override;
    std::vector<radial::plugin::Disposition> describe(const ContainerSpec& spec) override;
    radial::plugin::RunResult run(const ContainerSpec& spec, radial::plugin::Output& out) override;
    std::vector<std::string> list_by_label(std::string_view prefix) override;
    void kill(std::string_view label) override;

    const void* extension(std::string_view id) override;
    void create_session(const ContainerSpec& spec, std::uint64_t idle_timeout_ms,
                        std::uint64_t max_lifetime_ms) override;
    radial::plugin::RunResult exec(const ContainerSpec& exec, radial::plugin::Output& out) override;
    void destroy_session(std::string_view label) override;
    std::string resolve_image(std::string_view image) override;
    void changes(std::string_view label, std::uint64_t since_ms,
                 radial::plugin::ChangeSink& sink) override;
    std::string snapshot(std::string_view label, std::string_view image) override;
    void remove_snapshot(std::string_view image) override;
    void load_template(const std::string& archive, std::chrono::milliseconds budget) override;

private:
    void remove_box_file(std::string_view label) const;
    // Blocks forever when the config's `hang` array names `call` (a host's deadline test).
    void maybe_hang(std::string_view call) const;

    radial::plugin::Host host_;
    Defects defects_;
    std::string box_dir_;                     // empty: no box files
    std::set<std::string, std::less<>> hang_; // config `hang`: calls that never return
    std::string release_file_;       // config `releaseFile`: the hung calls return once it exists
    std::uint64_t change_bytes_ = 0; // config `changeBytes`: the size of the one changed file
    std::mutex mine_mutex_;
    std::set<std::string, std::less<>> mine_; // labels this instance started
};

} // namespace radial::zoo
