// host/config/workspace_keys.h — [run.workspaces.NAME]: the workspace identities and the services
// their turns may offer and reach (docs/design.md §9.7, "Between boxes"; docs/configuration.md is
// the reference).
#pragma once

#include <toml++/toml.h>

#include <string>

#include "config/config_reader.h"
#include "egress/workspace_net.h"

namespace radial::config {

// Reads [run.workspaces] (`table`, whose key is `key`) into `out`: each workspace's path
// (absolute), serve (SERVICE = { port = 1..65535, peers = [WORKSPACE] }) and reach
// (["SERVICE.WORKSPACE"]), names as valid_net_name says; then the whole (net_problems): a peer or
// reach naming no configured workspace or service is an error too. Throws ConfigError naming the
// key.
void read_workspaces(Reader& r, const std::string& key, const toml::table& table,
                     egress::WorkspaceNet& out);

} // namespace radial::config
