// plugins/support/engine_api/engine_endpoint.h — which Docker Engine a runtime talks to, and with
// what TLS material, chosen the way the docker CLI chooses it (docs/design.md §13.10): the
// runtime's own `host` setting, else $DOCKER_HOST, else the docker context ($DOCKER_CONTEXT, else
// `currentContext` in $DOCKER_CONFIG/config.json), else unix:///var/run/docker.sock.
#pragma once

#include <string>
#include <string_view>

#include "engine_api/engine_client.h"

namespace radial::engine_api {

// The part of a process's environment the choice depends on. Empty means unset (the docker CLI
// treats a variable set to "" as unset too).
struct EngineEnvironment {
    std::string docker_host;       // $DOCKER_HOST
    std::string docker_context;    // $DOCKER_CONTEXT
    std::string docker_config;     // $DOCKER_CONFIG; empty: <home>/.docker
    std::string docker_tls_verify; // $DOCKER_TLS_VERIFY; any non-empty value turns TLS on
    std::string docker_cert_path;  // $DOCKER_CERT_PATH; empty: the docker config directory
    std::string home;              // $HOME, else the passwd entry's home directory

    // This process's values. Reads the environment (getenv) and, without $HOME, the passwd
    // database. [thread-safe] as long as nobody calls setenv meanwhile.
    static EngineEnvironment of_process();
    // $DOCKER_CONFIG, else <home>/.docker (empty when both are): where the docker CLI keeps
    // config.json, its contexts and their TLS material. Pure.
    std::string config_directory() const;
};

// An engine address and where it came from.
struct ResolvedEngine {
    EngineAddress address;
    // For the debug log and messages: "run.docker.host", "$DOCKER_HOST", "docker context 'x'
    // ($DOCKER_CONTEXT)", "docker context 'x' (currentContext in /h/.docker/config.json)" or
    // "the default socket".
    std::string source;
};

// The SHA-256 of `name` in lower-case hex: the directory the docker CLI keeps a context's
// metadata and TLS material under. Pure.
std::string context_directory_name(std::string_view name);

// Chooses the engine: `configured` (the runtime's own setting, named `setting` in messages, e.g.
// "run.docker.host") when non-empty, else env.docker_host, else the docker context, else
// unix:///var/run/docker.sock. The context "default" is the default socket. A tcp:// address from
// the setting or $DOCKER_HOST uses TLS when $DOCKER_TLS_VERIFY is set: ca.pem (required), cert.pem
// and key.pem in $DOCKER_CERT_PATH, else in the docker config directory (a missing cert.pem/key.pem
// pair means no client certificate, as for the docker CLI). A context's tcp:// address uses TLS
// when the context has TLS material (contexts/tls/<hash>/docker/{ca,cert,key}.pem) or
// SkipTLSVerify. Reads only the files named above; contacts nothing. Throws std::invalid_argument
// naming the source, the file and what to do when the address is malformed or not unix:// or
// tcp://, when a named context has no metadata, when $DOCKER_TLS_VERIFY finds no ca.pem, or when
// config.json or a context's meta.json is not valid JSON. Never falls back to another source when
// the chosen one is unusable.
ResolvedEngine resolve_engine(std::string_view configured, std::string_view setting,
                              const EngineEnvironment& env);

} // namespace radial::engine_api
