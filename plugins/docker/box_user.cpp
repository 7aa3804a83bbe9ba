#include "box_user.h"

#include <radial/internal/names.h>

namespace radial::docker {

namespace {

constexpr std::string_view kExample = "give numeric ids uid:gid such as 65534:65534";

// The value of a run of digits, or nullopt above kMaxBoxId (leading zeros are allowed: runc reads
// "0100" as 100).
std::optional<std::uint32_t> id_value(std::string_view digits) noexcept {
    std::uint64_t v = 0;
    for (char c : digits) {
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
        if (v > kMaxBoxId) return std::nullopt;
    }
    return static_cast<std::uint32_t>(v);
}

bool has_letter(std::string_view s) noexcept {
    for (char c : s)
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
    return false;
}

} // namespace

std::optional<BoxUser> parse_box_user(std::string_view user, bool namespaced_root) noexcept {
    if (namespaced_root && user == "0:0") return BoxUser{0, 0};
    std::size_t colon = user.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    std::string_view uid = user.substr(0, colon), gid = user.substr(colon + 1);
    if (!radial::internal::is_decimal(uid) || !radial::internal::is_decimal(gid))
        return std::nullopt;
    auto u = id_value(uid), g = id_value(gid);
    if (!u || !g || *u == 0 || *g == 0) return std::nullopt;
    return BoxUser{*u, *g};
}

std::optional<std::string> user_problem(std::string_view user, bool namespaced_root) {
    if (parse_box_user(user, namespaced_root)) return std::nullopt;
    const std::string quoted = "'" + std::string(user) + "'";
    const std::string example(kExample);
    if (user.empty()) return "the user is empty; " + example;
    std::size_t colon = user.find(':');
    std::string_view uid = user.substr(0, colon);
    std::string_view gid =
        colon == std::string_view::npos ? std::string_view() : user.substr(colon + 1);
    if (has_letter(user))
        return quoted +
               " is a name, which docker resolves inside the image, where it may map to root; " +
               example;
    if (!radial::internal::is_decimal(uid) ||
        (colon != std::string_view::npos && !radial::internal::is_decimal(gid)))
        return quoted +
               " is not two plain decimal numbers uid:gid (no sign, space or other character, "
               "which runc may read as root); " +
               example;
    if (colon == std::string_view::npos)
        return quoted +
               " has no gid, so docker would take the group from the image, or root's group 0 when "
               "the image does not list the uid; " +
               example;
    if (!id_value(uid) || !id_value(gid))
        return quoted + " is out of range: ids go up to " + std::to_string(kMaxBoxId) + "; " +
               example;
    if (*id_value(uid) == 0)
        return quoted +
               " is root (uid 0), and a box never runs as the host's root (only as root in a user "
               "namespace of its own, on an engine started with --userns-remap: docs/design.md "
               "§8.8); " +
               example;
    return quoted + " has gid 0, root's group, and a box never runs as root or in root's group; " +
           example;
}

} // namespace radial::docker
