// plugin-api/conformance/raw_instance.h — the plugin driven through its C descriptor directly, for
// the few checks that must hand it a host struct radiald would not (an older or a newer host) or
// must see exactly what the plugin reported (RuntimeClient fills gaps in, as radiald should).
// docs/design.md §5.11.
#pragma once

#include <cstdint>
#include <radial/container_spec.hpp>
#include <radial/host/runtime_client.hpp>
#include <string>
#include <vector>

namespace radial::conformance {

// The config section as a radial_config: the host's own conversion (runtime_client.hpp).
using host::CConfig;

// What a raw call returned: the status and what the error sink received.
struct RawStatus {
    std::int32_t status = RADIAL_OK;
    std::int32_t reported_code = RADIAL_OK;
    std::string key, message;
};

// Calls `create` with `host` (any struct_size: the caller simulates an older or newer host) and
// the harness's config section, then `destroy` on success. Under the budget: a call that does not
// return makes the harness hang(). An exception escaping `create` is rethrown.
RawStatus raw_create_destroy(const std::vector<unsigned char>& host_bytes);

// Calls `describe_spec` on a fresh instance and returns every disposition exactly as reported.
// `status` is the call's status. False when the plugin has no describe_spec.
bool raw_describe(const ContainerSpec& spec, std::vector<host::Disposition>& reported,
                  RawStatus& status);

// A radial_host as this host fills it, `size` bytes long (zero-padded when larger than this
// header's struct), with `abi_minor` as given. For simulating older and newer hosts.
std::vector<unsigned char> host_struct(std::uint32_t size, std::uint16_t abi_minor);

} // namespace radial::conformance
