// plugins/docker/docker_env.h — the environment of the one docker CLI process the runtime still
// starts (`docker pull`, docs/design.md §13.1). A box's own environment never reaches any process:
// it travels in the create request's body (docker_create_body, docs/design.md §6.3).
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace radial::docker {

using EnvMap = std::map<std::string, std::string>;

// The environment variables of the parent process the docker CLI (pull) inherits, if set: what the
// CLI needs to find itself, its config and its engine. Nothing else of the parent's reaches it.
inline constexpr std::string_view kClientPassthroughEnv[] = {"PATH",
                                                             "HOME",
                                                             "DOCKER_HOST",
                                                             "DOCKER_CONTEXT",
                                                             "DOCKER_CONFIG",
                                                             "DOCKER_CERT_PATH",
                                                             "DOCKER_TLS_VERIFY",
                                                             "XDG_RUNTIME_DIR"};

} // namespace radial::docker
