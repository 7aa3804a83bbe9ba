// tests/support/box_id_leases.h — the box-id leases root's radialds hold on this host
// (turn/box_id_lease.h; docs/design.md §8.7), as a test that runs radiald as a process sees them.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "temp_dir.h"

namespace radial::test {

// Where root's radialds keep their box-id leases: <claim registry>/box-ids.
inline constexpr const char* kRootBoxIdLeaseDir = "/run/radial-claims/box-ids";

// How many of those leases name `state_dir` (a lease file names its box's state directory).
inline std::size_t box_id_leases_of(const std::string& state_dir) {
    std::size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(kRootBoxIdLeaseDir))
        n += read_file(e.path()).find("\"" + state_dir + "\"") != std::string::npos;
    return n;
}

} // namespace radial::test
