// plugins/docker/box_user.h — the identity a box runs as (`docker run --user`), and the hard rule
// that it is never root.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace radial::docker {

// True when `user` ("uid[:gid]" or "name[:group]", docker's --user syntax) names root: the uid
// part is "root" or a number equal to 0 ("0", "00", "0:1000", "root:root"). Pure; thread-safe.
bool is_root_user(std::string_view user) noexcept;

// Why `user` cannot be a box's --user value, or nullopt when it can. Refused: empty, root
// (is_root_user), an empty uid part (":1000"), whitespace or control characters, a leading '-'.
// Pure; thread-safe. Source: ADR §1 (non-root user), 003 Design 4.
std::optional<std::string> user_problem(std::string_view user);

} // namespace radial::docker
