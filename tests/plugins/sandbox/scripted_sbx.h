// tests/plugins/sandbox/scripted_sbx.h — drives tests/fakes/sbx/scripted-sbx: a private state
// directory holding a symlink to the script (the binary a runtime is pointed at), control files
// that make a step fail or hang, and readers for what the fake recorded.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "../../support/temp_dir.h"

namespace radial::test {

inline constexpr const char* kScriptedSbx = RADIAL_SOURCE_DIR "/tests/fakes/sbx/scripted-sbx";

class ScriptedSbx {
public:
    ScriptedSbx() : dir_("radial-sbx") { std::filesystem::create_symlink(kScriptedSbx, binary()); }

    // The path to give run.sandbox.binary.
    std::string binary() const { return dir_ / "sbx"; }
    const std::string& dir() const { return dir_.path(); }

    // Makes `step` (version, help, ls-help, ls, create, policy, policy-rm, exec, rm,
    // template) exit `rc` with
    // `message` on stderr.
    void fail(const std::string& step, int rc, const std::string& message) const {
        std::filesystem::create_directories(dir_ / "control");
        dir_.write("control/" + step + ".fail", std::to_string(rc) + "\n" + message + "\n");
    }
    // Makes `step` never answer.
    void hang(const std::string& step) const {
        std::filesystem::create_directories(dir_ / "control");
        dir_.write("control/" + step + ".hang", "");
    }
    // Makes `step` print exactly `out` and exit 0.
    void answer(const std::string& step, const std::string& out) const {
        std::filesystem::create_directories(dir_ / "control");
        dir_.write("control/" + step + ".out", out);
    }
    void clear(const std::string& step) const {
        std::filesystem::remove(dir_ / ("control/" + step + ".fail"));
        std::filesystem::remove(dir_ / ("control/" + step + ".hang"));
        std::filesystem::remove(dir_ / ("control/" + step + ".out"));
    }
    // Which optional flags the fake's help lists: any of "no-input", "json".
    void features(const std::string& words) const {
        std::filesystem::create_directories(dir_ / "control");
        dir_.write("control/features", words + "\n");
    }
    // Lines printed on stdout before every listing (daemon start-up noise).
    void ls_noise(const std::string& text) const {
        std::filesystem::create_directories(dir_ / "control");
        dir_.write("control/ls.noise", text);
    }
    // Adds a sandbox as if another process (or a crashed daemon) had created it.
    void add_sandbox(const std::string& name) const {
        std::filesystem::create_directories(dir_ / "sandboxes");
        dir_.write("sandboxes/" + name, "");
    }

    // Every invocation so far, each as its argv (without the binary).
    std::vector<std::vector<std::string>> calls() const {
        std::vector<std::vector<std::string>> out;
        std::string log = read_file(dir_ / "calls.log");
        for (std::size_t at = 0; at < log.size();) {
            std::size_t end = log.find('\n', at);
            if (end == std::string::npos) end = log.size();
            std::vector<std::string> argv;
            std::string line = log.substr(at, end - at);
            for (std::size_t a = 0; a < line.size();) {
                std::size_t sep = line.find('\037', a);
                if (sep == std::string::npos) sep = line.size();
                argv.push_back(line.substr(a, sep - a));
                a = sep + 1;
            }
            out.push_back(std::move(argv));
            at = end + 1;
        }
        return out;
    }
    // The invocations whose first argument is `command`, help probes (`ls --help`) left out.
    std::vector<std::vector<std::string>> calls(const std::string& command) const {
        std::vector<std::vector<std::string>> out;
        for (auto& c : calls())
            if (!c.empty() && c[0] == command && std::find(c.begin(), c.end(), "--help") == c.end())
                out.push_back(std::move(c));
        return out;
    }
    // The raw call log: every byte any sbx argv carried.
    std::string call_log() const { return read_file(dir_ / "calls.log"); }

    // Names of the sandboxes that exist now.
    std::vector<std::string> sandboxes() const {
        std::vector<std::string> out;
        std::error_code ec;
        for (std::filesystem::directory_iterator it(dir_ / "sandboxes", ec), end; !ec && it != end;
             it.increment(ec))
            out.push_back(it->path().filename());
        std::sort(out.begin(), out.end());
        return out;
    }
    // The rules of `sandbox` that still exist ("GLOBAL": rules without --sandbox).
    std::string rules(const std::string& sandbox) const {
        return read_file(dir_ / ("rules/" + sandbox));
    }
    // Every rule file that still exists.
    std::vector<std::string> rule_files() const {
        std::vector<std::string> out;
        std::error_code ec;
        for (std::filesystem::directory_iterator it(dir_ / "rules", ec), end; !ec && it != end;
             it.increment(ec))
            out.push_back(it->path().filename());
        return out;
    }
    std::string removed_rules() const { return read_file(dir_ / "removed-rules.log"); }
    // The rules `policy rm network` revoked, as "NAME allow RESOURCE" lines.
    std::string revoked_rules() const { return read_file(dir_ / "revoked-rules.log"); }
    // What `exec -i NAME` read on stdin.
    std::string exec_stdin(const std::string& name) const {
        return read_file(dir_ / ("stdin/" + name));
    }

private:
    TempDir dir_;
};

} // namespace radial::test
