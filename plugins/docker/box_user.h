// plugins/docker/box_user.h — the identity a box runs as (`docker run --user`), and the hard rule
// that it is never root: neither uid 0 nor root's group.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace radial::docker {

// A box user as numeric ids, both non-zero (or both zero: a root in its own user namespace).
struct BoxUser {
    std::uint32_t uid = 0;
    std::uint32_t gid = 0;
    friend bool operator==(const BoxUser&, const BoxUser&) = default;
};

// The largest id runc accepts for a numeric --user (it parses with Atoi and refuses above 2^31-1).
inline constexpr std::uint32_t kMaxBoxId = 2147483647u;

// Parses `user` as "<uid>:<gid>": two runs of ASCII decimal digits (no sign, space or other byte),
// each between 1 and kMaxBoxId. Nullopt for anything else. Pure; thread-safe.
//
// Rationale: docker hands --user to runc, which resolves a name inside the image (so "nobody" may
// be uid 0 there), reads numbers with Go's Atoi (so "+0" is uid 0), and, when no gid is given,
// takes the group from the image's passwd entry or falls back to gid 0 with root's group as a
// supplementary group. Only an explicit, plainly numeric, non-zero uid and gid pins the identity.
//
// With `namespaced_root` (the engine remaps user namespaces, so a box's root is an unprivileged
// host id: docs/design.md §8.8), exactly "0:0" is accepted too, as BoxUser{0, 0}.
std::optional<BoxUser> parse_box_user(std::string_view user, bool namespaced_root = false) noexcept;

// Why `user` cannot be a box's --user value, or nullopt when it can (parse_box_user accepts it).
// The text says what is wrong and how to fix it, e.g. "'nobody' is a name, which docker resolves
// inside the image, where it may map to root; give numeric ids uid:gid such as 65534:65534".
// Pure; thread-safe. Source: docs/design.md §9 (non-root user), docs/design.md §13.1.
std::optional<std::string> user_problem(std::string_view user, bool namespaced_root = false);

} // namespace radial::docker
