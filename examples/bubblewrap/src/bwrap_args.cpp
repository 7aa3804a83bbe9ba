#include "bwrap_args.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <radial/plugin/runtime.hpp>

namespace radial::bubblewrap {
namespace {

using radial::plugin::Error;

std::optional<std::uint32_t> number(const std::string& s) {
    if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos)
        return std::nullopt;
    unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
    if (v > 0xfffffffeull) return std::nullopt;
    return static_cast<std::uint32_t>(v);
}

// Looks `name` (or a number) up in a passwd- or group-style file: "name:x:id:gid:...". Returns
// (id, gid-or-id).
std::optional<std::pair<std::uint32_t, std::uint32_t>> lookup(const std::string& file,
                                                              const std::string& name) {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
        std::vector<std::string> f;
        std::size_t at = 0;
        for (int i = 0; i < 4; ++i) {
            std::size_t colon = line.find(':', at);
            f.push_back(
                line.substr(at, colon == std::string::npos ? std::string::npos : colon - at));
            if (colon == std::string::npos) break;
            at = colon + 1;
        }
        if (f.size() < 3) continue;
        auto id = number(f[2]);
        if (!id || (f[0] != name && f[2] != name)) continue;
        auto gid = f.size() > 3 ? number(f[3]) : std::nullopt;
        return std::make_pair(*id, gid.value_or(*id));
    }
    return std::nullopt;
}

} // namespace

std::string default_state_dir() {
    if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg != nullptr && xdg[0] == '/')
        return std::string(xdg) + "/radial-bwrap";
    if (::geteuid() == 0) return "/run/radial-bwrap";
    return "/tmp/radial-bwrap-" + std::to_string(::geteuid());
}

std::string rootfs_for(const Settings& s, const std::string& image) {
    std::string path;
    if (!image.empty() && image[0] == '/') {
        path = image;
    } else {
        if (s.image_root.empty())
            throw Error(RADIAL_E_NOT_FOUND, "image",
                        "image '" + image +
                            "' is not an absolute path to a root filesystem "
                            "directory, and run.bubblewrap.imageRoot is not set to look it up in");
        if (image.find("..") != std::string::npos)
            throw Error(RADIAL_E_INVALID, "image", "image '" + image + "' must not contain '..'");
        path = s.image_root + "/" + image;
    }
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw Error(RADIAL_E_NOT_FOUND, "image",
                    "image '" + image + "': '" + path +
                        "' is not a root filesystem directory; "
                        "export one with examples/bubblewrap/make-rootfs.sh");
    return path;
}

UidGid resolve_user(const std::string& rootfs, const std::string& user) {
    std::string u = user, g;
    if (auto colon = user.find(':'); colon != std::string::npos) {
        u = user.substr(0, colon);
        g = user.substr(colon + 1);
    }
    UidGid out;
    if (auto n = number(u)) {
        out.uid = *n;
        out.gid = *n;
        if (auto p = lookup(rootfs + "/etc/passwd", u)) out.gid = p->second;
    } else if (auto p = lookup(rootfs + "/etc/passwd", u)) {
        out.uid = p->first;
        out.gid = p->second;
    } else {
        throw Error(RADIAL_E_INVALID, "user",
                    "user '" + user + "': no user '" + u +
                        "' in the image's /etc/passwd; give "
                        "uid[:gid] as numbers");
    }
    if (!g.empty()) {
        if (auto n = number(g))
            out.gid = *n;
        else if (auto grp = lookup(rootfs + "/etc/group", g))
            out.gid = grp->first;
        else
            throw Error(RADIAL_E_INVALID, "user",
                        "user '" + user + "': no group '" + g + "' in the image's /etc/group");
    }
    return out;
}

BwrapCommand bwrap_command(const Settings& s, const ContainerSpec& spec, const std::string& rootfs,
                           const UidGid& user, int info_fd) {
    BwrapCommand c;
    auto opt = [&](std::initializer_list<std::string> args) {
        c.options.insert(c.options.end(), args.begin(), args.end());
    };
    // Every namespace, the user's mapped to one uid; the box dies with the plugin.
    opt({"--unshare-all", "--unshare-user", "--uid", std::to_string(user.uid), "--gid",
         std::to_string(user.gid), "--hostname", "radial", "--die-with-parent", "--new-session",
         "--info-fd", std::to_string(info_fd)});

    // The root is bwrap's own tmpfs; the image's top-level entries are bound into it read-only,
    // so that mount targets and tmpfs can be created at the top level.
    std::vector<std::string> tmpfs_targets;
    for (const auto& t : spec.tmpfs) tmpfs_targets.push_back(t.target);
    std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(rootfs.c_str()), &::closedir);
    std::vector<std::string> entries;
    while (const dirent* e = dir ? ::readdir(dir.get()) : nullptr) {
        std::string name = e->d_name;
        if (name == "." || name == ".." || name == "proc" || name == "dev" || name == "tmp")
            continue;
        entries.push_back(name);
    }
    std::sort(entries.begin(), entries.end());
    for (const auto& name : entries) {
        std::string src = rootfs + "/" + name;
        struct stat st {};
        if (::lstat(src.c_str(), &st) != 0) continue;
        if (S_ISLNK(st.st_mode)) {
            std::string target(4096, '\0');
            ssize_t n = ::readlink(src.c_str(), target.data(), target.size());
            if (n <= 0) continue;
            target.resize(static_cast<std::size_t>(n));
            opt({"--symlink", target, "/" + name});
        } else if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) {
            opt({"--ro-bind", src, "/" + name});
        }
    }
    opt({"--proc", "/proc", "--dev", "/dev"});
    if (std::find(tmpfs_targets.begin(), tmpfs_targets.end(), "/tmp") == tmpfs_targets.end())
        opt({"--perms", "1777", "--size", std::to_string(s.tmp_size_bytes), "--tmpfs", "/tmp"});
    for (const auto& t : spec.tmpfs)
        opt({"--perms", t.target == "/tmp" ? "1777" : "0755", "--size",
             std::to_string(t.size_bytes != 0 ? t.size_bytes : s.tmp_size_bytes), "--tmpfs",
             t.target});
    for (const auto& m : spec.mounts)
        opt({m.read_only ? "--ro-bind" : "--bind", m.source, m.target});
    // readOnlyRootfs yes (and the hardened default): the tmpfs root becomes read-only too.
    if (spec.read_only_rootfs != Tristate::no) opt({"--remount-ro", "/"});
    if (!spec.workdir.empty()) opt({"--chdir", spec.workdir});

    opt({"--clearenv"});
    bool has_path = false;
    for (const auto& e : spec.env) {
        opt({"--setenv", e.name, e.value});
        has_path = has_path || e.name == "PATH";
    }
    if (!has_path)
        opt({"--setenv", "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"});
    c.command = spec.argv;
    return c;
}

} // namespace radial::bubblewrap
