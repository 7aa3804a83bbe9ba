// host/turn/box_user_env.h — a coherent user environment for the box user (docs/design.md §8.7,
// docs/design.md §17, C-25): a passwd and group naming it, a writable home of its own, and HOME,
// USER, LOGNAME and the XDG base directories pointing there, whatever the image ships.
//
// The box runs as ids no image knows (config/box_identity.h) under a read-only root filesystem, so
// without this HOME is "/" or "/nonexistent", `id -un` fails and every tool that writes under
// ~/.config, ~/.cache or ~/.npm fails. Only for runtimes that run the box as spec.user and mount
// host files with host ids (RADIAL_CAP_HOST_UID_MOUNTS): a VM that supersedes the user has its own
// user and home, and a cluster node does not have the host's files (docs/design.md §8.7).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <radial/container_spec.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "turn/turn_setup_error.h"

namespace radial::turn {

// The box user's name and home inside the box. Fixed, never taken from a request or an image, so
// no name can inject a line or a field into the generated passwd.
inline constexpr const char* kBoxUserName = "radial";
inline constexpr const char* kBoxHome = "/home/radial";

// The /etc/passwd the box sees: root, nobody (unless the box user has its id) and the box user
// (kBoxUserName, home kBoxHome, shell /bin/sh). Pure; thread-safe.
std::string box_passwd(uid_t uid, gid_t gid);

// The /etc/group the box sees: root, nogroup (unless the box group has its id) and the box
// user's group, named kBoxUserName. Pure; thread-safe.
std::string box_group(gid_t gid);

// HOME, USER, LOGNAME, XDG_CONFIG_HOME, XDG_CACHE_HOME, XDG_DATA_HOME and XDG_STATE_HOME for a
// box whose home is `home`, leaving out every name `request_env` already sets: a variable the
// request names explicitly is the request's choice and wins. Pure; thread-safe.
std::vector<EnvVar> box_user_variables(const std::vector<EnvVar>& request_env,
                                       const std::string& home = kBoxHome,
                                       const std::string& user_name = kBoxUserName);

// Managed Codex auth (run.codexAuth, docs/design.md §8.7): the operator's Codex credentials file,
// copied per turn to $HOME/.codex/auth.json in the box.
//
// The file run.codexAuthFile names, or when that is empty $CODEX_HOME/auth.json, else
// ~/.codex/auth.json of radiald's user ($HOME, else the passwd entry). Reads the environment.
std::string codex_auth_path(const std::string& configured);

// The values in an auth.json that are secrets: OPENAI_API_KEY and every string under "tokens";
// the whole text, trimmed, when it is not a JSON object. Values shorter than `min_length` bytes
// are left out (too short to mask without masking ordinary output). Pure; thread-safe.
std::vector<std::string> codex_auth_secrets(std::string_view contents, std::size_t min_length);

// Where a turn's generated identity files live: <stateDir>/identity/<turnId>. The residue sweep
// removes what a crashed radiald left there (daemon/reconciler.h).
std::string box_identity_dir(const std::string& state_dir, const std::string& turn_id);

// One turn's identity files on the host, removed with the turn (RAII).
class BoxIdentity {
public:
    // Writes passwd and group (mode 0644) into `dir` (box_identity_dir() for a turn's or a pool
    // box's, session::session_identity_dir() for a session's), which it creates and which must
    // not exist (another box of the same id has it: TurnSetupError), creating its parent (mode
    // 0700) as needed. With `codex_auth` (the credentials' contents),
    // also a directory codex/ (0700) holding auth.json (0600, created so), both owned by uid:gid —
    // which needs radiald to be root. Throws TurnSetupError naming the path and the cause
    // (never the contents) when any of that fails.
    // With `namespaced_root` the box runs as root in a user namespace of its own
    // (docs/design.md §8.8): uid:gid are the host ids of that root, no passwd or group is written
    // (the image's own accounts stay, so a package manager can add to them), and the box's USER
    // is root.
    BoxIdentity(const std::string& dir, uid_t uid, gid_t gid,
                const std::optional<std::string>& codex_auth = std::nullopt,
                bool namespaced_root = false);
    // Removes the turn's directory; failures are logged, never thrown.
    ~BoxIdentity();
    BoxIdentity(const BoxIdentity&) = delete;
    BoxIdentity& operator=(const BoxIdentity&) = delete;

    const std::string& dir() const noexcept { return dir_; }

    // Leaves the files when this object goes: a session's box uses them for its whole life, and
    // `radiald session rm` removes them (session::session_identity_dir).
    void keep() noexcept { kept_ = true; }

    // Adds to `spec`: passwd and group mounted read-only over /etc/passwd and /etc/group (not with
    // a namespaced root), a tmpfs
    // of `home_bytes` at kBoxHome (the runtime makes it the box user's, mode 0700; docker:
    // docker_argv.h) and box_user_variables(); with Codex auth, codex/ mounted read-write at
    // kBoxHome/.codex, so the harness can refresh its tokens for the turn. Throws
    // TurnSetupError when a mount or tmpfs of the spec already takes one of those paths (the
    // message names the path and the fix). Without `with_variables` the variables are left to
    // each exec (a session's box: user_name()).
    void apply(ContainerSpec& spec, std::uint64_t home_bytes, bool with_variables = true) const;

    // The name box_user_variables() gives the box user: "root" for a namespaced root.
    std::string user_name() const { return namespaced_root_ ? "root" : kBoxUserName; }

private:
    std::string dir_;
    bool codex_ = false;
    bool namespaced_root_ = false;
    bool kept_ = false;
};

} // namespace radial::turn
