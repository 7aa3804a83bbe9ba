// tests/plugins/sandbox/scripted_executor.h — an in-process SbxExecutor (docs/design.md §5.1: the
// CLI is injectable): each short call is answered by a C++ function per command and recorded; a
// hung command waits out its budget or its cancel descriptor like a CLI that never answers; the
// exec is a real local process (default /bin/sh -s, so the exec script really runs).
#pragma once

#include <poll.h>

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "sbx_executor.h"

namespace radial::test {

using radial::sandbox::ChildProcess;
using radial::sandbox::CliOutput;
using radial::sandbox::UniqueFd;

inline CliOutput answer(std::string out, int code = 0, std::string err = {}) {
    CliOutput r;
    r.status.exited = true;
    r.status.code = code;
    r.out = std::move(out);
    r.err = std::move(err);
    return r;
}

class ScriptedExecutor final : public radial::sandbox::SbxExecutor {
public:
    using Answer = std::function<CliOutput(const std::vector<std::string>& args)>;

    // The key of a call: its first argument, or "ls --help" for the listing's help.
    static std::string key(const std::vector<std::string>& args) {
        if (args.size() >= 2 && args[0] == "ls" && args[1] == "--help") return "ls --help";
        if (args.size() >= 2 && args[0] == "policy" && args[1] == "rm") return "policy rm";
        return args.empty() ? std::string() : args[0];
    }

    ScriptedExecutor() {
        on("--help", [](auto&) { return answer("Flags:\n      --no-input   Never prompt\n"); });
        on("ls --help", [](auto&) { return answer("Flags:\n      --json   JSON output\n"); });
        on("version", [](auto&) { return answer("sbx version v0.43.0\n"); });
        on("ls", [](auto&) { return answer("{\"sandboxes\":[]}\n"); });
    }

    void on(const std::string& command, Answer a) {
        std::lock_guard lock(mutex_);
        answers_[command] = std::move(a);
    }
    void hang(const std::string& command) {
        std::lock_guard lock(mutex_);
        hanging_.insert(command);
    }
    // The exec's program (argv); it reads the exec script on stdin.
    void exec_program(std::vector<std::string> argv) {
        std::lock_guard lock(mutex_);
        exec_program_ = std::move(argv);
    }

    std::vector<std::vector<std::string>> calls() const {
        std::lock_guard lock(mutex_);
        return calls_;
    }
    std::vector<std::vector<std::string>> calls(const std::string& command) const {
        std::vector<std::vector<std::string>> out;
        for (auto& c : calls())
            if (key(c) == command) out.push_back(c);
        return out;
    }

    CliOutput invoke(const std::vector<std::string>& args, std::chrono::milliseconds budget,
                     int cancel_fd) override {
        Answer a;
        bool hangs;
        {
            std::lock_guard lock(mutex_);
            calls_.push_back(args);
            hangs = hanging_.count(key(args)) != 0;
            auto it = answers_.find(key(args));
            if (it != answers_.end()) a = it->second;
        }
        if (hangs) {
            CliOutput r;
            pollfd p{cancel_fd, POLLIN, 0};
            int n = ::poll(&p, cancel_fd >= 0 ? 1 : 0, static_cast<int>(budget.count()));
            (n > 0 ? r.cancelled : r.timed_out) = true;
            return r;
        }
        return a ? a(args) : answer("");
    }

    ChildProcess start(const std::vector<std::string>& args,
                       internal::UniqueFd stdin_source) override {
        std::vector<std::string> program;
        {
            std::lock_guard lock(mutex_);
            calls_.push_back(args);
            program = exec_program_;
        }
        ChildProcess::Options options;
        options.stdin_source = std::move(stdin_source);
        return ChildProcess::start(program.at(0), {program.begin() + 1, program.end()},
                                   {{"PATH", "/usr/bin:/bin"}}, std::move(options));
    }

private:
    mutable std::mutex mutex_;
    std::map<std::string, Answer> answers_;
    std::set<std::string> hanging_;
    std::vector<std::vector<std::string>> calls_;
    std::vector<std::string> exec_program_ = {"/bin/sh", "-s"};
};

} // namespace radial::test
