// tests/host/cli/session_fixture.h — a session of a test's radiald setup, made with the real
// `radiald session create` and removed with `radiald session rm` when the test ends.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "../../support/owned_instances.h"
#include "../../support/process_runner.h"
#include "../../support/radiald_runner.h"

namespace radial::test {

// A session of `setup`'s instance; removed (with its box) when the test ends.
class Session {
public:
    Session(const RadialdSetup& setup, const std::vector<std::string>& flags) : setup_(setup) {
        std::vector<std::string> a{RADIALD_PATH, "session", "create", "--config", setup.config()};
        if (!from_snapshot(flags)) a.insert(a.end(), {"--image", RADIAL_TEST_IMAGE});
        a.insert(a.end(), flags.begin(), flags.end());
        created = run_process(a, {}, std::chrono::seconds(120));
        id = created.out.substr(0, created.out.find('\n'));
        if (created.exit_code == 0) {
            made_box_ = box();
            // The instance id its box is named by, should the test change it (owned_instances.h).
            record_instance_id(instance());
        }
    }
    ~Session() {
        if (id.empty()) return;
        auto rm = run_process({RADIALD_PATH, "session", "rm", "--config", setup_.config(), id});
        // A record the test damaged, or a removal that failed: the box goes all the same, rather
        // than outlive the test (docs/design.md §16).
        if (rm.exit_code != 0 && !made_box_.empty()) {
            std::fprintf(stderr,
                         "~Session: 'radiald session rm %s' failed (%d): %s; docker rm -f %s\n",
                         id.c_str(), rm.exit_code, rm.err.c_str(), made_box_.c_str());
            run_process({"docker", "rm", "-f", made_box_});
        }
    }
    // The session's box: "radial-session-<instanceId>-<id>".
    std::string box() const { return "radial-session-" + instance() + "-" + id; }

    ProcessResult created;
    std::string id;

private:
    std::string instance() const {
        const std::string inst = read_file(setup_.state_dir() + "/instance-id");
        return inst.substr(0, inst.find_first_of(" \n"));
    }
    static bool from_snapshot(const std::vector<std::string>& flags) {
        for (const auto& f : flags)
            if (f == "--from-snapshot") return true;
        return false;
    }
    const RadialdSetup& setup_;
    std::string made_box_; // the box `session create` made, by the instance id of then
};

} // namespace radial::test
