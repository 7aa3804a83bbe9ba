// radial/internal/path_compare.h — comparing host paths as the kernel would reach them, for the
// rules that keep a path from being, lying below or holding another (radiald's request policy and
// workspace roots, a runtime's refusal of its engine's data root).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace radial::internal {

// `path` with symlinks and ".." resolved as far as it exists (a path that does not exist here still
// compares by its name), normalised, without a trailing '/' (but "/"). Reads the filesystem;
// never throws but std::bad_alloc. Thread-safe.
inline std::string comparable_path(std::string_view path) {
    std::error_code ec;
    std::filesystem::path p = std::filesystem::weakly_canonical(std::filesystem::path(path), ec);
    if (ec) p = std::filesystem::path(path).lexically_normal();
    std::string s = p.string();
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    return s;
}

// True when `p` is `base` or lies below it: whole components only ("/srv/docker2" is not below
// "/srv/docker"). Both absolute and as comparable_path gives them. Pure.
inline bool at_or_under(std::string_view p, std::string_view base) {
    if (base == "/") return true;
    return p == base ||
           (p.size() > base.size() && p.substr(0, base.size()) == base && p[base.size()] == '/');
}

} // namespace radial::internal
