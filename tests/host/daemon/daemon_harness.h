// tests/host/daemon/daemon_harness.h — the real `radiald run` as a background process, with a
// private state directory (never /var/lib/radial), and the commands around it (submit, status,
// records, reconcile). Shared by the daemon tests with the fake runtime and with the engine.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../../support/host_processes.h"
#include "../../support/no_pull.h"
#include "../../support/owned_instances.h"
#include "../../support/process_runner.h"
#include "../../support/temp_dir.h"

extern char** environ;

namespace radial::test {

using namespace std::chrono_literals;

// A turn file's keys that run `sh -c script` in the test image, then `extra` (more keys, TOML).
inline std::string shell_turn(const std::string& script, const std::string& extra = "") {
    nlohmann::json argv = {"sh", "-c", script};
    return "image = \"" RADIAL_TEST_IMAGE "\"\nargv = " + argv.dump() + "\n" + extra;
}

// A state directory, a config file and the commands that use them.
class DaemonSetup {
public:
    // `run_keys` go into [run] (after stateDir); `tables` after it (e.g. "[run.fake]\n...").
    explicit DaemonSetup(const std::string& run_keys = "", const std::string& tables = "")
        : dir_("radial-d") {
        config_text_ = "[run]\nstateDir = \"" + dir_.path() + "/state\"\n" + run_keys + "\n" +
                       with_pull_never(run_keys, tables);
        config_ = dir_.write("radiald.toml", config_text_);
        record_state_dir(state_dir()); // its generated instance id names its boxes
    }
    const std::string& config() const { return config_; }
    std::string state_dir() const { return dir_.path() + "/state"; }
    const TempDir& dir() const { return dir_; }

    // `radiald submit` of a turn file with `toml` as its content.
    ProcessResult submit_raw(const std::string& toml,
                             const std::map<std::string, std::string>& env = {}) const {
        // The request's image, as the daemon will run it: one that could make the engine
        // contact a registry is not submitted (no_pull.h).
        if (auto at = toml.find("image = \""); at != std::string::npos) {
            at += 9;
            std::string image = toml.substr(at, toml.find('"', at) - at);
            if (std::string risk = registry_contact_risk(config_text_, image); !risk.empty()) {
                ADD_FAILURE() << "radiald submit not run: " << risk;
                return ProcessResult{};
            }
        }
        std::string file = dir_.write("turn-" + std::to_string(counter_++) + ".toml", toml);
        return run_process({RADIALD_PATH, "submit", "--config", config_, file}, env, 30s);
    }
    // Submits and returns the turn id (a test failure when submit fails).
    std::string submit(const std::string& toml) const {
        auto r = submit_raw(toml);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        std::string id = r.out;
        while (!id.empty() && id.back() == '\n') id.pop_back();
        return id;
    }
    nlohmann::json status() const {
        auto r = run_process({RADIALD_PATH, "status", "--config", config_, "--json", "-n", "100"},
                             {}, 30s);
        // 3: no daemon holds the state directory (docs/design.md §14.4); the figures are there.
        EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.exit_code << ": " << r.err;
        return nlohmann::json::parse(r.out);
    }
    // `radiald records TURN --json`; null when the turn is unknown.
    nlohmann::json records(const std::string& turn_id) const {
        auto r =
            run_process({RADIALD_PATH, "records", "--config", config_, turn_id, "--json"}, {}, 30s);
        if (r.exit_code != 0) return nullptr;
        return nlohmann::json::parse(r.out);
    }
    // The terminal record of a turn; null until it has one.
    nlohmann::json terminal(const std::string& turn_id) const {
        auto r = records(turn_id);
        return r.is_null() ? r : r["terminal"];
    }
    // Waits until every turn in `ids` has a terminal record; true when they all do.
    bool wait_terminal(const std::vector<std::string>& ids,
                       std::chrono::milliseconds budget) const {
        return wait_until(
            [&] {
                auto s = status();
                std::size_t done = 0;
                for (const auto& t : s["recent"])
                    if (t["state"] == "finished" &&
                        std::find(ids.begin(), ids.end(), t["turnId"].get<std::string>()) !=
                            ids.end())
                        ++done;
                return done == ids.size();
            },
            budget);
    }
    ProcessResult reconcile() const {
        return run_process({RADIALD_PATH, "reconcile", "--config", config_}, {}, 120s);
    }

private:
    TempDir dir_;
    std::string config_text_;
    std::string config_;
    mutable int counter_ = 0;
};

// `radiald run --config <setup's>` in the background. Its stderr goes to a file read by log().
// The destructor SIGKILLs it if it still runs, and reaps it.
class DaemonProcess {
public:
    // `wrapper`: a command line radiald's own is appended to and run by (found in PATH), e.g.
    // unshare(1) to give the daemon a mount namespace of its own, as a systemd unit does.
    explicit DaemonProcess(const DaemonSetup& setup,
                           const std::map<std::string, std::string>& env = {},
                           const std::vector<std::string>& wrapper = {})
        : log_path_(setup.dir() / ("daemon-" + std::to_string(::getpid()) + "-" +
                                   std::to_string(counter()++) + ".log")) {
        std::vector<std::string> envs;
        for (char** e = environ; *e != nullptr; ++e) {
            std::string kv(*e);
            if (!env.count(kv.substr(0, kv.find('=')))) envs.push_back(kv);
        }
        for (const auto& [k, v] : env) envs.push_back(k + "=" + v);
        std::vector<char*> envp;
        for (auto& s : envs) envp.push_back(s.data());
        envp.push_back(nullptr);
        std::vector<std::string> args = wrapper;
        for (const char* a : {RADIALD_PATH, "run", "--config"}) args.emplace_back(a);
        args.push_back(setup.config());
        std::vector<char*> argv;
        for (auto& s : args) argv.push_back(s.data());
        argv.push_back(nullptr);

        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                         0600);
        int rc =
            ::posix_spawnp(&pid_, args.front().c_str(), &fa, nullptr, argv.data(), envp.data());
        posix_spawn_file_actions_destroy(&fa);
        if (rc != 0) throw std::runtime_error("posix_spawn radiald failed");
    }
    ~DaemonProcess() {
        if (!exit_) {
            ::kill(pid_, SIGKILL);
            wait_exit(10s);
        }
    }
    DaemonProcess(const DaemonProcess&) = delete;
    DaemonProcess& operator=(const DaemonProcess&) = delete;

    pid_t pid() const { return pid_; }
    void signal(int sig) const { ::kill(pid_, sig); }
    std::string log() const { return read_file(log_path_); }

    // Waits for `needle` to appear `count` times in the log.
    bool wait_for_log(const std::string& needle, std::chrono::milliseconds budget,
                      std::size_t count = 1) const {
        return wait_until(
            [&] {
                std::string l = log();
                std::size_t n = 0;
                for (auto at = l.find(needle); at != std::string::npos; at = l.find(needle, at + 1))
                    ++n;
                return n >= count;
            },
            budget);
    }

    // The exit status (code, or 128 + signal); nullopt when it has not exited within `budget`.
    std::optional<int> wait_exit(std::chrono::milliseconds budget) {
        if (exit_) return exit_;
        wait_until(
            [&] {
                int st = 0;
                if (::waitpid(pid_, &st, WNOHANG) != pid_) return false;
                exit_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                return true;
            },
            budget);
        return exit_;
    }

    // SIGKILL, as a crash: nothing of the daemon runs after this returns.
    void crash() {
        signal(SIGKILL);
        auto st = wait_exit(10s);
        EXPECT_EQ(st, 128 + SIGKILL);
    }

private:
    static int& counter() {
        static int n = 0;
        return n;
    }
    std::string log_path_;
    pid_t pid_ = -1;
    std::optional<int> exit_;
};

} // namespace radial::test
