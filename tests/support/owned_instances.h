// tests/support/owned_instances.h — records of the instance ids a test's boxes are named by, for
// the ctest clean-up remove_owned_boxes (tests/support/remove_owned_boxes.sh), which runs after the
// live tests: a test ctest killed at its TIMEOUT (SIGKILL) ran no destructor, and its boxes
// (radial-{turn,check,session,pool}-<id>-…) and snapshot images (radial-snapshot-<id>:…) are
// still there (docs/design.md §16). One file a record in RADIAL_OWNED_DIR (<build>/Testing/
// owned-instances), its first line the recording process's pid: the clean-up leaves the records
// of a test still running (of another ctest in the same build tree). A test program built
// without RADIAL_OWNED_DIR records nothing.
#pragma once

#include <radial/internal/names.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace radial::test {

inline void record_owned([[maybe_unused]] const std::string& name,
                         [[maybe_unused]] const std::string& content) {
#ifdef RADIAL_OWNED_DIR
    std::error_code ec;
    std::filesystem::create_directories(RADIAL_OWNED_DIR, ec);
    std::ofstream(std::string(RADIAL_OWNED_DIR) + "/" + name) << ::getpid() << "\n" << content;
#endif
}

// An instance id the test's boxes may be named by; anything else (a marker or secret made by
// unique_instance_id) names no box and is not recorded.
inline void record_instance_id(const std::string& id) {
    if (internal::is_instance_id(id)) record_owned("id." + id, "");
}

// A state directory (in a temporary directory of its own) whose instance id radiald generates
// when it first runs, in <dir>/instance-id: the clean-up reads it there.
inline void record_state_dir(const std::string& dir) {
    std::string name = dir; // a temporary directory's path: no other test's
    for (char& c : name)
        if (c == '/') c = '_';
    record_owned("state." + name, dir + "\n");
}

} // namespace radial::test
