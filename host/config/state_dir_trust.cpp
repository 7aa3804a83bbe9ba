#include "config/state_dir_trust.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "config/host_config.h"

namespace radial::config {
namespace fs = std::filesystem;

void check_state_dir_trust(const std::string& state_dir) {
    std::error_code ec;
    const fs::path resolved = fs::canonical(state_dir, ec);
    if (ec)
        throw HostRefusalError(fmt::format("resolving the state directory '{}' (run.stateDir): {}",
                                           state_dir, ec.message()));
    const uid_t me = ::geteuid();
    for (fs::path p = resolved;; p = p.parent_path()) {
        struct stat st {};
        if (::lstat(p.c_str(), &st) != 0)
            throw HostRefusalError(fmt::format("inspecting '{}' above the state directory '{}': {}",
                                               p.string(), state_dir, std::strerror(errno)));
        const bool self = p == resolved;
        const bool others_write = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
        const bool owner_ok = self ? st.st_uid == me : st.st_uid == me || st.st_uid == 0;
        const bool write_ok = self ? !others_write : !others_write || (st.st_mode & S_ISVTX);
        if (!S_ISDIR(st.st_mode) || !owner_ok || !write_ok)
            throw HostRefusalError(fmt::format(
                "the state directory '{}' (run.stateDir) is not radiald's alone: '{}' belongs to "
                "uid {} with mode {:o}, and {} must be uid {}'s{} and writable by nobody else{}; "
                "remove it and let radiald create it, or chown/chmod it (docs/design.md §15)",
                state_dir, p.string(), st.st_uid, st.st_mode & 07777,
                self ? "the state directory" : "each directory above it", me,
                self ? "" : " (or root's)", self ? "" : " unless sticky, as /tmp is"));
        if (p == p.root_path()) break;
    }
}

} // namespace radial::config
