// plugins/docker/docker_cli.h — the short docker CLI calls (info, ps, rm), each run to completion
// within a time budget, and what the runtime concludes from them.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "docker_argv.h"
#include "docker_settings.h"
#include "support/cli_capture.h"

namespace radial::docker {

using plugin_support::CliOutput;

// This process's values of the kClientPassthroughEnv variables (getenv; not synchronised with a
// concurrent setenv in the host, which a daemon does not do).
EnvMap parent_client_env();

// Runs the docker CLI for the runtime. Immutable after construction; [thread-safe].
class DockerCli {
public:
    explicit DockerCli(DockerSettings settings) : settings_(std::move(settings)) {}

    const DockerSettings& settings() const noexcept { return settings_; }

    // The CLI to execute: settings.binary itself when it contains '/', else the first match in
    // PATH. Resolved on every call (cheap; picks up an install made after startup).
    // Throws radial::plugin::Error(RADIAL_E_UNAVAILABLE, "binary", ...) naming it when absent.
    std::filesystem::path executable() const;

    // Runs `argv` (argv[0] is replaced by executable()) with parent_client_env() and stdin on
    // /dev/null, and waits for it within `budget` (plugin_support::capture_cli); past it the
    // client is killed and reaped and the result says timed_out. Throws
    // Error(RADIAL_E_UNAVAILABLE) when it cannot start.
    CliOutput capture(const std::vector<std::string>& argv, std::chrono::milliseconds budget) const;

    // The engine's version, from `docker info` within preflightTimeout, judged from the output
    // (C-07). Throws Error(RADIAL_E_UNAVAILABLE, "docker engine unreachable via '<binary>'
    // (<host>): <cause>; start dockerd or fix run.docker.host"). Never caches anything.
    // Source: docs/design.md §7.4 (startup fail-fast), docs/design.md §7.4 (fail closed).
    std::string server_version() const;

    // The names of the OCI runtimes the engine lists (`docker info`), within preflightTimeout.
    // Throws Error(RADIAL_E_UNAVAILABLE) with docker's message when the engine does not answer
    // with them. Source: docs/design.md §13.9.
    std::vector<std::string> runtime_names() const;

    // Every radial box (any state), within commandTimeout. Throws Error(RADIAL_E_UNAVAILABLE)
    // with docker's message when the engine does not answer.
    std::vector<ListedBox> list() const;

    // The ids of the boxes whose radial.label is exactly `label`, byte for byte (C-04).
    std::vector<std::string> ids_with_label(std::string_view label) const;

    // How container `id` (of box `label`, for messages) stands, from `docker inspect` within
    // commandTimeout. Throws Error(RADIAL_E_NOT_FOUND) when the engine answers that the container
    // does not exist, Error(RADIAL_E_UNAVAILABLE) with docker's message when it does not answer.
    ContainerState state(const std::string& id, std::string_view label) const;

    // The ENTRYPOINT of `image` when the engine has the image, within commandTimeout; nullopt
    // when it does not have it (yet: `docker run` may still pull it) or does not answer.
    std::optional<std::vector<std::string>> image_entrypoint(std::string_view image) const;

    // `docker rm --force --volumes` of `ids` (those of box `label`, for messages) within
    // commandTimeout, or within `budget`. A container already gone or already being removed is
    // not an error. Throws Error(RADIAL_E_UNAVAILABLE) with docker's message otherwise, also
    // when the budget ran out (the rm client is then killed and reaped).
    void remove(const std::vector<std::string>& ids, std::string_view label) const;
    void remove(const std::vector<std::string>& ids, std::string_view label,
                std::chrono::milliseconds budget) const;

    // How messages name the engine: "'<host>'" or "default host".
    std::string engine_name() const;

private:
    // "<what> (engine E): <docker's message>" or "<what>: no answer within N ms ...".
    std::string failure(const CliOutput& r, std::string_view what,
                        std::chrono::milliseconds budget) const;

    DockerSettings settings_;
};

} // namespace radial::docker
