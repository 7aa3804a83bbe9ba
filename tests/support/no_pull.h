// tests/support/no_pull.h — tests never make the engine contact a registry. A box whose image is
// not local makes dockerd pull it (a DNS query leaves the machine) unless pulling is off, so:
//   - every radiald config a test harness writes gets [run.docker] pull = "never" unless the test
//     sets a pull policy itself (with_pull_never);
//   - before a harness starts a box, registry_contact_risk() says whether that box could make the
//     engine pull: an image that is not in the local store while the config's policy is not
//     "never". The harness then fails the test and does not start the box.
// The sandbox runtime's tests run the simulator, whose `docker run` passes --pull never.
#pragma once

#include <string>

#include "process_runner.h"
#include "temp_dir.h"

namespace radial::test {

// The [run.docker] table of `text` (from its header to the next table), or "" when it has none.
inline std::string docker_table(const std::string& text) {
    auto at = text.find("[run.docker]");
    if (at == std::string::npos) return "";
    auto end = text.find("\n[", at + 1);
    return text.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// `tables` with pull = "never" in its [run.docker] table (added when the table is missing), unless
// the config selects another runtime or already sets a pull policy.
inline std::string with_pull_never(const std::string& run_keys, const std::string& tables) {
    if (run_keys.find("containerRuntime") != std::string::npos &&
        run_keys.find("containerRuntime = \"docker\"") == std::string::npos)
        return tables;
    const std::string header = "[run.docker]\n";
    auto at = tables.find(header);
    if (at == std::string::npos) return tables + "\n" + header + "pull = \"never\"\n";
    if (docker_table(tables).find("\npull") != std::string::npos) return tables;
    std::string out = tables;
    out.insert(at + header.size(), "pull = \"never\"\n");
    return out;
}

// The pull policy a config gives the boxes of its docker runtime: "never" for another runtime
// (the sandbox simulator never pulls), else [run.docker] pull, else the default "missing".
inline std::string pull_policy(const std::string& config_text) {
    auto rt = config_text.find("containerRuntime = \"");
    if (rt != std::string::npos &&
        config_text.compare(rt, 28, "containerRuntime = \"docker\"") != 0)
        return "never";
    std::string table = docker_table(config_text);
    auto at = table.find("\npull = \"");
    if (at == std::string::npos) return "missing";
    at += 9;
    return table.substr(at, table.find('"', at) - at);
}

// Whether the local engine has `image` (docker image inspect: the local store only).
inline bool image_is_local(const std::string& image) {
    return run_process({"docker", "image", "inspect", "--format", "{{.Id}}", image}, {},
                       std::chrono::seconds(30))
               .exit_code == 0;
}

// Empty when a box of `image` under this config cannot make the engine contact a registry; else
// why it could, and what to do.
inline std::string registry_contact_risk(const std::string& config_text, const std::string& image) {
    std::string policy = pull_policy(config_text);
    if (policy == "never") return "";
    if (policy != "always" && image_is_local(image)) return "";
    return "image '" + image + "' is not local and [run.docker] pull is \"" + policy +
           "\": the engine would contact a registry. Set pull = \"never\" (a test about a missing "
           "image asserts the error without a pull) or use the local " RADIAL_TEST_IMAGE;
}

#ifdef RADIAL_TEST_IMAGE
// Builds `tag` locally from the test image plus `dockerfile_tail` (Dockerfile lines after its
// FROM), never pulling: an image a test needs beside the test image. The build's result.
inline ProcessResult build_from_test_image(const std::string& tag,
                                           const std::string& dockerfile_tail) {
    TempDir ctx("radial-image");
    ctx.write("Dockerfile", std::string("FROM ") + RADIAL_TEST_IMAGE + "\n" + dockerfile_tail);
    return run_process({"docker", "build", "--pull=false", "-q", "-t", tag, ctx.path()}, {},
                       std::chrono::seconds(120));
}
#endif

} // namespace radial::test
