// tests/support/instance_config.h — the HostConfig that the turn unit tests build their requests,
// specs and labels against: everything default but the instance id.
#pragma once

#include <string>

#include "config/host_config.h"

namespace radial::test {

// A default HostConfig whose instance id is `instance_id` (labels: radial-turn-<id>-...).
inline config::HostConfig instance_config(std::string instance_id = "inst1") {
    config::HostConfig c;
    c.instance_id = std::move(instance_id);
    return c;
}

} // namespace radial::test
