// plugins/docker/docker_engine.h — the docker runtime's calls to the Docker Engine API (create,
// attach, start, wait, inspect, remove, list, the version probe), each within its budget, and
// what the runtime concludes from the answers. The HTTP, version and framing plumbing is
// plugins/support/engine_api; only the pull is left to the docker CLI (docs/design.md §13.1).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "docker_argv.h"
#include "docker_settings.h"
#include "engine_api/engine_client.h"
#include "engine_api/engine_endpoint.h"
#include "support/mount_sources.h"

namespace radial::docker {

// The engine the runtime talks to and where that came from: run.docker.host, else $DOCKER_HOST,
// else the docker context, else unix:///var/run/docker.sock, with TLS material as the docker CLI
// takes it (engine_api::resolve_engine, docs/design.md §13.10). Throws
// radial::plugin::Error(RADIAL_E_INVALID, "host") with resolve_engine's message. Pure but for
// reading the docker config files `env` points at.
engine_api::ResolvedEngine docker_engine_address(const DockerSettings& settings,
                                                 const engine_api::EngineEnvironment& env);

// The engine's storage driver (GET /info `Driver`) and the filesystem under it (`DriverStatus`
// "Backing Filesystem"; empty when the engine does not say).
struct StorageDriver {
    std::string name;
    std::string backing_filesystem;
};

// How a pull ended when it did not fail.
enum class PullEnd { done, cancelled, timed_out };

// One engine for one runtime instance. [thread-safe]: every call opens its own connection.
class DockerEngine {
public:
    // Resolves the address (docker_engine_address with this process's environment) and loads its
    // TLS material; contacts nothing. Throws as docker_engine_address, and Error(RADIAL_E_INVALID,
    // "host") naming the TLS file that cannot be loaded.
    explicit DockerEngine(DockerSettings settings);

    const DockerSettings& settings() const noexcept { return settings_; }
    // The engine's address (with its TLS material) and where it came from.
    const engine_api::ResolvedEngine& resolved() const noexcept { return resolved_; }
    // The host paths through which a box would control this engine, which no mount may hand it
    // (plugin_support::refuse_engine_control_paths): the engine's unix socket, the docker client's
    // configuration directory ($DOCKER_CONFIG, else ~/.docker: credentials, contexts, their TLS
    // keys) and $DOCKER_CERT_PATH. Pure.
    std::vector<plugin_support::EngineControlPath> control_paths() const;

    // How messages name the engine: "'<host>'" (run.docker.host), "default host" (the default
    // socket), or "'<address>' (<source>)" for $DOCKER_HOST and a docker context.
    std::string engine_name() const;

    // Probes the engine (GET /_ping, or GET /version, within preflightTimeout, Engine API at
    // least 1.41) and returns its API version. Throws Error(RADIAL_E_UNAVAILABLE, "docker engine
    // unreachable via
    // '<binary>' (<engine>): <cause>; start dockerd or fix run.docker.host"). Never caches a
    // failure (docs/design.md §5.1).
    std::string server_version() const;

    // One OCI runtime the engine lists: its name, the path the engine runs it as ("" when it
    // gives none) and the arguments it adds (runtimeArgs).
    struct EngineRuntime {
        std::string name;
        std::string path;
        std::vector<std::string> args;
    };
    // The OCI runtimes the engine lists (GET /info `Runtimes`), within preflightTimeout, sorted
    // by name. Throws Error(RADIAL_E_UNAVAILABLE) when the engine does not answer with them.
    // Source: docs/design.md §13.9.
    std::vector<EngineRuntime> runtimes() const;

    // The engine's storage driver (GET /info), within preflightTimeout. Throws
    // Error(RADIAL_E_UNAVAILABLE) when the engine does not answer with one. Source:
    // docs/design.md §13.1 (run.docker.writableLayerSize).
    StorageDriver storage_driver() const;

    // Asks the engine for its data root (GET /info `DockerRootDir`, within preflightTimeout) and
    // keeps it for data_root(); an answer without one keeps "". Throws
    // Error(RADIAL_E_UNAVAILABLE) when the engine does not answer. Source: docs/design.md §7.5.
    void learn_data_root() const;
    // The data root learn_data_root() kept, asked for now when it never ran in this instance (an
    // instance created again after its plugin host process crashed gets no preflight). Throws as
    // learn_data_root. Thread-safe.
    std::string data_root() const;

    // The host ids a box's uid 0 and gid 0 are when the engine remaps user namespaces (dockerd
    // --userns-remap), read from GET /info within preflightTimeout (parse_userns_root); nullopt
    // when it does not remap, or its answer does not say so. Once found, namespaced_root() is true
    // for this instance's life. Throws Error(RADIAL_E_UNAVAILABLE) when the engine does not answer.
    // [thread-safe] Source: docs/design.md §8.8.
    std::optional<UsernsRoot> userns_root() const;
    // Whether userns_root() found a remapping: a box may then run as "0:0" (docker_create_body).
    // [thread-safe]
    bool namespaced_root() const noexcept { return namespaced_root_.load(); }

    // Every radial box in any state (GET /containers/json filtered by the label's presence; the
    // value is compared by the caller, C-04), within commandTimeout. Throws
    // Error(RADIAL_E_UNAVAILABLE) with the cause when the engine does not answer.
    std::vector<ListedBox> list() const;

    // The ids of the boxes whose radial.label is exactly `label`, byte for byte (C-04).
    std::vector<std::string> ids_with_label(std::string_view label) const;

    // How container `id` (of box `label`, for messages) stands, within commandTimeout. Throws
    // Error(RADIAL_E_NOT_FOUND) when the engine has no such container, Error(RADIAL_E_UNAVAILABLE)
    // when it does not answer.
    ContainerState state(const std::string& id, std::string_view label) const;

    // The ENTRYPOINT of `image` when the engine has the image; nullopt when it does not (yet).
    // Throws Error(RADIAL_E_UNAVAILABLE) when the engine does not answer.
    std::optional<std::vector<std::string>> image_entrypoint(std::string_view image) const;

    // `docker pull IMAGE` with the CLI (run.docker.binary), so that the user's registry
    // credential helpers apply, within `budget`; `cancel_fd` (-1: none) becoming readable stops it
    // (the client is then killed and reaped, as when the budget runs out). Throws
    // Error(RADIAL_E_NOT_FOUND) with docker's message when the pull fails,
    // Error(RADIAL_E_UNAVAILABLE) when the CLI cannot start.
    PullEnd pull(std::string_view image, std::string_view label, std::chrono::milliseconds budget,
                 int cancel_fd) const;

    // POST /containers/create?name=<label> with `body`; returns the new container's id. Throws
    // Error(RADIAL_E_NOT_FOUND) for a missing image, RADIAL_E_UNAVAILABLE when the engine does not
    // answer, RADIAL_E_INVALID naming writableLayerSize when the engine refuses its storage
    // option, RADIAL_E_INTERNAL with the engine's message otherwise. Every message starts with
    // "the engine's create failed, before the container existed: ".
    std::string create(const nlohmann::json& body, std::string_view label,
                       std::string_view image) const;

    // POST /containers/{id}/attach (stdout and stderr, following): the raw multiplexed stream.
    // Throws engine_api::EngineError.
    // With `with_stdin`, stdin too: what Stream::write sends reaches the box's stdin.
    std::unique_ptr<engine_api::Stream> attach(const std::string& id, std::string_view label,
                                               bool with_stdin = false) const;

    // POST /containers/{id}/start: nullopt when it started, else the engine's reason (HTTP status
    // and message). Throws engine_api::EngineError when the engine does not answer.
    std::optional<engine_api::Response> start(const std::string& id, std::string_view label) const;
    // The same within `budget` instead of commandTimeout (docs/design.md §13.1: startTimeout);
    // a timeout is an engine_api::EngineError whose timed_out() is true.
    std::optional<engine_api::Response> start(const std::string& id, std::string_view label,
                                              std::chrono::milliseconds budget) const;

    // POST /containers/{id}/wait?condition=not-running within commandTimeout: the exit code.
    // Throws Error(RADIAL_E_NOT_FOUND) when the container is gone, RADIAL_E_UNAVAILABLE when the
    // engine does not answer.
    int wait(const std::string& id, std::string_view label) const;

    // POST /containers/{id}/kill?signal=`signal` within `budget`: to the box's PID 1 (radial-init
    // forwards it to the command). A container already gone or no longer running is not an
    // error. Throws Error(RADIAL_E_UNAVAILABLE) with the engine's message otherwise.
    void signal(const std::string& id, std::string_view label, std::string_view signal,
                std::chrono::milliseconds budget) const;

    // DELETE /containers/{id}?force=1&v=1 for each of `ids` (those of box `label`, for messages)
    // within commandTimeout, or within `budget`: the box is killed and removed with its anonymous
    // volumes. A container already gone or already being removed is not an error. Throws
    // Error(RADIAL_E_UNAVAILABLE) with the engine's message otherwise.
    void remove(const std::vector<std::string>& ids, std::string_view label) const;
    void remove(const std::vector<std::string>& ids, std::string_view label,
                std::chrono::milliseconds budget) const;

    // Session execs (docker_session.h; docker_engine_exec.cpp). POST /containers/{id}/exec with
    // `body`; returns the exec's id. Throws Error: RADIAL_E_NOT_FOUND when the box is gone,
    // RADIAL_E_UNAVAILABLE when the engine does not answer.
    std::string exec_create(const std::string& id, std::string_view label,
                            const nlohmann::json& body) const;
    // POST /exec/{id}/start, hijacked: the exec's multiplexed output, and its stdin.
    std::unique_ptr<engine_api::Stream> exec_start(const std::string& exec_id,
                                                   std::string_view label) const;
    // GET /exec/{id}/json: the exec's exit code once it ended, nullopt while it runs.
    std::optional<int> exec_exit_code(const std::string& exec_id, std::string_view label) const;
    // GET /containers/{id}/top: how many processes the container's cgroup holds, as the engine
    // sees them (a box cannot hide one from it); nullopt when the engine cannot say.
    std::optional<std::size_t> process_count(const std::string& id, std::string_view label) const;

    // Session snapshots (docker_snapshot.h; docker_engine_image.cpp).
    // GET /images/{name}/json: the image's whole inspect object; nullopt when the engine has no
    // such image. Throws Error(RADIAL_E_UNAVAILABLE) when the engine does not answer.
    std::optional<nlohmann::json> image_json(std::string_view image) const;
    // GET /containers/{id}/json: the container's whole inspect object. Throws
    // Error(RADIAL_E_NOT_FOUND) when the container is gone, RADIAL_E_UNAVAILABLE otherwise.
    nlohmann::json container_json(const std::string& id, std::string_view label) const;
    // POST /commit of container `id` (paused while committed) to `repo`:`tag`, with `config` as
    // the image's configuration (what it does not set the engine takes from the container), within
    // `budget`; returns the new image's id ("sha256:<hex>"). Throws Error(RADIAL_E_NOT_FOUND) when
    // the container is gone, RADIAL_E_UNAVAILABLE otherwise.
    std::string commit(const std::string& id, std::string_view label, const std::string& repo,
                       const std::string& tag, const nlohmann::json& config,
                       std::chrono::milliseconds budget) const;
    // DELETE /images/{name} (not forced): an unknown name is no error. Throws
    // Error(RADIAL_E_INVALID) when a container uses the image, RADIAL_E_UNAVAILABLE otherwise.
    void remove_image(std::string_view image) const;

private:
    // GET /info's JSON object within preflightTimeout; null when the engine answered something
    // else. Throws Error(RADIAL_E_UNAVAILABLE) when it did not answer (`what` names the call).
    nlohmann::json info_json(const std::string& what) const;

    DockerSettings settings_;
    engine_api::EngineEnvironment environment_; // this process's, read once at construction
    mutable std::atomic<bool> namespaced_root_{false};
    mutable std::mutex data_root_mutex_;
    mutable std::optional<std::string> data_root_; // guarded by data_root_mutex_; nullopt: unasked
    engine_api::ResolvedEngine resolved_;
    mutable engine_api::EngineClient client_;
};

} // namespace radial::docker
