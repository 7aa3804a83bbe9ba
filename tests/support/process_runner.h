// tests/support/process_runner.h — runs a real program (radiald, docker) to completion and
// captures its exit status, stdout and stderr, with a time budget after which it is killed.
#pragma once

#include <boost/process.hpp>
#include <chrono>
#include <map>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "temp_dir.h"

namespace radial::test {

struct ProcessResult {
    int exit_code = -1;
    bool timed_out = false;
    std::string out;
    std::string err;
};

// Runs argv[0] (a path, or a name looked up in PATH) with argv[1..]. `env_set` adds or replaces
// variables in the inherited environment; `env_unset` removes them.
inline ProcessResult run_process(const std::vector<std::string>& argv,
                                 const std::map<std::string, std::string>& env_set = {},
                                 std::chrono::seconds budget = std::chrono::seconds(120),
                                 const std::vector<std::string>& env_unset = {}) {
    namespace bp = boost::process;
    TempDir io("radial-io");
    std::string out_path = io / "out", err_path = io / "err";
    auto env = boost::this_process::environment();
    bp::environment child_env = env;
    for (const auto& [k, v] : env_set) child_env[k] = v;
    for (const auto& k : env_unset) child_env.erase(k);
    std::string exe = argv.at(0);
    if (exe.find('/') == std::string::npos) exe = bp::search_path(exe).string();
    std::vector<std::string> args(argv.begin() + 1, argv.end());
    bp::child child(exe, bp::args(args), child_env, bp::std_in<bp::null, bp::std_out> out_path,
                    bp::std_err > err_path);
    ProcessResult r;
    std::error_code ec;
    // Poll rather than wait_for: Boost 1.74's wait_for sigtimedwait()s on SIGCHLD process-wide.
    auto deadline = std::chrono::steady_clock::now() + budget;
    while (child.running(ec) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (child.running(ec)) {
        r.timed_out = true;
        child.terminate(ec);
    }
    child.wait(ec);
    r.exit_code = child.exit_code();
    r.out = read_file(out_path);
    r.err = read_file(err_path);
    return r;
}

} // namespace radial::test
