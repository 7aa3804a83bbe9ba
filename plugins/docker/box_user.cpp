#include "box_user.h"

namespace radial::docker {

bool is_root_user(std::string_view user) noexcept {
    std::string_view uid = user.substr(0, user.find(':'));
    if (uid == "root") return true;
    if (uid.empty()) return false;
    for (char c : uid)
        if (c != '0') return false; // any other digit or letter: not uid 0
    return true;
}

std::optional<std::string> user_problem(std::string_view user) {
    if (user.empty()) return "the user is empty; give a non-root uid[:gid] such as 65534:65534";
    if (is_root_user(user))
        return "'" + std::string(user) +
               "' is root, and a box never runs as root; give a non-root uid[:gid] such as "
               "65534:65534";
    if (user.front() == ':')
        return "'" + std::string(user) + "' has no uid; give uid[:gid] such as 65534:65534";
    if (user.front() == '-')
        return "'" + std::string(user) + "' starts with '-'; give uid[:gid] such as 65534:65534";
    for (unsigned char c : user)
        if (c <= ' ' || c == 0x7f)
            return "'" + std::string(user) +
                   "' contains whitespace or a control character; give uid[:gid] such as "
                   "65534:65534";
    return std::nullopt;
}

} // namespace radial::docker
