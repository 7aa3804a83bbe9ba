#include "turn/box_root.h"

#include <radial/internal/names.h>

namespace radial::turn {

std::optional<std::pair<uid_t, gid_t>> numeric_user(const std::string& user) {
    if (user.empty()) return std::nullopt;
    const auto colon = user.find(':');
    const std::string u = user.substr(0, colon),
                      g = colon == std::string::npos ? u : user.substr(colon + 1);
    auto number = [](const std::string& s) -> std::optional<unsigned long> {
        if (!internal::is_decimal(s) || s.size() > 10) return std::nullopt;
        const unsigned long v = std::stoul(s);
        if (v > 0xFFFFFFFEul) return std::nullopt; // (uid_t)-1 means "unchanged" to chown(2)
        return v;
    };
    const auto uid = number(u), gid = number(g);
    if (!uid || !gid) return std::nullopt;
    return std::make_pair(static_cast<uid_t>(*uid), static_cast<gid_t>(*gid));
}

std::optional<std::pair<uid_t, gid_t>> box_host_ids(
    const std::string& spec_user,
    const std::optional<std::pair<std::uint32_t, std::uint32_t>>& box_root) {
    if (!box_root) return numeric_user(spec_user);
    // Under a namespaced root only the root is known on the host (docs/design.md §8.8).
    if (spec_user != kNamespacedRootUser) return std::nullopt;
    return std::make_pair(static_cast<uid_t>(box_root->first),
                          static_cast<gid_t>(box_root->second));
}

} // namespace radial::turn
