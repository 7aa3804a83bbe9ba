// tests/support/radiald_runner.h — runs the real `radiald turn` hermetically: every run gets its
// own config with a private state directory (never /var/lib/radial) and, unless the test sets a
// pull policy, [run.docker] pull = "never"; a box that could make the engine contact a registry is
// not started and fails the test (no_pull.h). Its terminal record and journal can be read back.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "no_pull.h"
#include "owned_instances.h"
#include "process_runner.h"
#include "temp_dir.h"

namespace radial::test {

struct TurnRun {
    ProcessResult result;
    nlohmann::json record; // the --record-file, or null when none was written
    std::string state_dir;
    std::string config;
};

// A shell command for a box: posts `record` (a JSON object, no single quote in it) to the turn's
// unix socket with curl and prints the HTTP status on a line of its own.
inline std::string box_post_record_sh(const std::string& record) {
    return "curl -s -o /dev/null -w '%{http_code}\\n' --unix-socket "
           "\"${RADIAL_TURN_SOCKET#unix://}\" -H \"Authorization: Bearer $RADIAL_TURN_TOKEN\" "
           "-H 'Content-Type: application/json' --data-binary '" +
           record + "' http://radial/v1/records";
}

// A temporary radiald setup: a config file whose [run] table sets stateDir, plus `extra` TOML.
class RadialdSetup {
public:
    explicit RadialdSetup(const std::string& extra_run_keys = "",
                          const std::string& extra_tables = "")
        : dir_("radial-turn") {
        config_text_ = "[run]\nstateDir = \"" + dir_.path() + "/state\"\n" + extra_run_keys + "\n" +
                       with_pull_never(extra_run_keys, extra_tables);
        config_ = dir_.write("radiald.toml", config_text_);
        record_state_dir(state_dir()); // its generated instance id names its boxes
    }
    const std::string& config() const { return config_; }
    std::string state_dir() const { return dir_.path() + "/state"; }
    const TempDir& dir() const { return dir_; }

    // radiald turn --config <ours> --image IMAGE --record-file <ours> FLAGS -- ARGV
    TurnRun turn(const std::vector<std::string>& flags, const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& env = {},
                 const std::string& image = RADIAL_TEST_IMAGE) const {
        std::string record = dir_ / ("record-" + std::to_string(counter_++) + ".json");
        std::vector<std::string> a{RADIALD_PATH, "turn", "--config",      config_,
                                   "--image",    image,  "--record-file", record};
        a.insert(a.end(), flags.begin(), flags.end());
        a.push_back("--");
        a.insert(a.end(), argv.begin(), argv.end());
        TurnRun t;
        t.state_dir = state_dir();
        t.config = config_;
        if (std::string risk = registry_contact_risk(config_text_, image); !risk.empty()) {
            ADD_FAILURE() << "radiald turn not run: " << risk;
            return t;
        }
        t.result = run_process(a, env, std::chrono::seconds(120));
        std::string text = read_file(record);
        if (!text.empty()) t.record = nlohmann::json::parse(text);
        t.state_dir = state_dir();
        t.config = config_;
        return t;
    }

    // `radiald records TURN --json`, parsed.
    nlohmann::json records(const std::string& turn_id) const {
        auto r = run_process({RADIALD_PATH, "records", "--config", config_, turn_id, "--json"});
        if (r.exit_code != 0) return nullptr;
        return nlohmann::json::parse(r.out);
    }

private:
    TempDir dir_;
    std::string config_text_;
    std::string config_;
    mutable int counter_ = 0;
};

} // namespace radial::test
