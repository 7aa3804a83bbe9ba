// examples/bubblewrap/src/bwrap_args.h — a ContainerSpec as bwrap arguments, and the settings of
// the bubblewrap runtime ([run.bubblewrap]). Pure functions but for reading the root filesystem
// directory (its top-level entries, /etc/passwd, /etc/group). Issue 7.
#pragma once

#include <cstdint>
#include <radial/container_spec.hpp>
#include <string>
#include <vector>

namespace radial::bubblewrap {

// [run.bubblewrap]
struct Settings {
    std::string binary = "bwrap";     // binary: the bwrap to run (PATH is searched without '/')
    std::string state_dir;            // stateDir: where the box registry lives
    std::string image_root;           // imageRoot: where relative image names are looked up
    std::string user = "65534:65534"; // user: the box user when the spec names none
    std::uint64_t tmp_size_bytes = 256ull << 20; // tmpSize: size of /tmp and of unsized tmpfs
};

// The default state directory: $XDG_RUNTIME_DIR/radial-bwrap, else /run/radial-bwrap for root,
// else /tmp/radial-bwrap-<uid>.
std::string default_state_dir();

// The root filesystem directory for `image`: the image itself when it is an absolute path, else
// <image_root>/<image>. Throws plugin::Error(RADIAL_E_NOT_FOUND, "image") when it is not a
// directory, RADIAL_E_INVALID when the name climbs out of image_root ("..").
std::string rootfs_for(const Settings& s, const std::string& image);

// A box user as numbers: "uid[:gid]" with numbers or names looked up in the root filesystem's
// /etc/passwd and /etc/group. Throws plugin::Error(RADIAL_E_INVALID, "user") when it cannot.
struct UidGid {
    std::uint32_t uid = 0;
    std::uint32_t gid = 0;
};
UidGid resolve_user(const std::string& rootfs, const std::string& user);

// What bwrap is run with: `options` are passed NUL-separated through --args FD (so env values,
// secrets included, never appear on bwrap's command line); `command` follows "--".
struct BwrapCommand {
    std::vector<std::string> options;
    std::vector<std::string> command;
};

// The bwrap arguments for `spec` in `rootfs` as `user`. `info_fd` is the fd bwrap reports the
// box's init pid on. The spec must already be accepted (describe() refuses what this cannot do).
BwrapCommand bwrap_command(const Settings& s, const ContainerSpec& spec, const std::string& rootfs,
                           const UidGid& user, int info_fd);

} // namespace radial::bubblewrap
