#include "config/box_identity.h"

#include <dirent.h>
#include <fmt/format.h>
#include <grp.h>
#include <pwd.h>
#include <radial/internal/proc_file.h>
#include <sys/stat.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>

namespace radial::config {

namespace {

// "Uid:\t0\t0\t0\t0" → the four ids, when `line` starts with `prefix`.
bool ids_in_range(const std::string& line, std::string_view prefix, const HostConfig& cfg,
                  std::uint64_t& hit) {
    if (!line.starts_with(prefix)) return false;
    std::istringstream in(line.substr(prefix.size()));
    std::uint64_t id = 0;
    while (in >> id)
        if (id >= cfg.box_id_first && id <= cfg.box_id_last) {
            hit = id;
            return true;
        }
    return false;
}

[[noreturn]] void collide(const HostConfig& cfg, const std::string& what) {
    throw HostRefusalError(fmt::format(
        "{}run.boxIdRange {}-{}: {}; a box must not share its uid or gid with anything on the "
        "host (that could read the box's secrets); choose a range nothing on this host uses",
        cfg.where("run.boxIdRange"), cfg.box_id_first, cfg.box_id_last, what));
}

// How many pid namespaces deep a process is: the entries of its status's "NSpid:" line (1 in the
// host's namespace). 0 when the file has none (a kernel before 4.1).
std::size_t pid_ns_depth(const std::string& status) {
    std::istringstream in(status);
    for (std::string line; std::getline(in, line);)
        if (line.starts_with("NSpid:")) {
            std::istringstream ids(line.substr(6));
            std::size_t n = 0;
            for (std::uint64_t id = 0; ids >> id;) ++n;
            return n;
        }
    return 0;
}

} // namespace

std::pair<uid_t, gid_t> default_box_ids(const HostConfig& cfg) noexcept {
    return {static_cast<uid_t>(cfg.box_id_first), static_cast<gid_t>(cfg.box_id_first)};
}

bool uses_box_id_range(const HostConfig& cfg) noexcept {
    return cfg.user.empty() || cfg.user == kWorkspaceOwnerUser;
}

void check_box_id_range(const HostConfig& cfg) {
    check_box_id_range_accounts(cfg);
    check_box_id_range_processes(cfg);
}

void check_box_id_range_accounts(const HostConfig& cfg) {
    if (!uses_box_id_range(cfg)) return;
    auto in_range = [&](std::uint64_t id) {
        return id >= cfg.box_id_first && id <= cfg.box_id_last;
    };
    ::setpwent();
    while (const passwd* pw = ::getpwent()) {
        if (in_range(pw->pw_uid) || in_range(pw->pw_gid)) {
            std::string what = fmt::format("host user '{}' is uid {} gid {} (passwd)", pw->pw_name,
                                           pw->pw_uid, pw->pw_gid);
            ::endpwent();
            collide(cfg, what);
        }
    }
    ::endpwent();
    ::setgrent();
    while (const group* gr = ::getgrent()) {
        if (in_range(gr->gr_gid)) {
            std::string what =
                fmt::format("host group '{}' is gid {} (group)", gr->gr_name, gr->gr_gid);
            ::endgrent();
            collide(cfg, what);
        }
    }
    ::endgrent();
}

void check_box_id_range_processes(const HostConfig& cfg) {
    if (!uses_box_id_range(cfg)) return;
    struct stat own_ns {};
    if (::stat("/proc/self/ns/pid", &own_ns) != 0) return; // no /proc: nothing more to learn
    const std::size_t own_depth = pid_ns_depth(internal::read_proc_file("/proc/self/status"));
    std::unique_ptr<DIR, int (*)(DIR*)> proc(::opendir("/proc"), ::closedir);
    if (!proc) return;
    while (const dirent* e = ::readdir(proc.get())) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        const std::string dir = std::string("/proc/") + e->d_name;
        // Not an ifstream: it throws when the process exits mid-read, and opens without
        // O_CLOEXEC while plugins may be starting children on another thread (docs/design.md §3.2).
        const std::string text = internal::read_proc_file(dir + "/status");
        struct stat ns {};
        // Another pid namespace is a container (a box among them). Its ns link is another user's
        // to read; status, which anyone may read, says as much: a process in a namespace below
        // ours has more NSpid entries. A radiald that is not root tells boxes apart that way.
        if (::stat((dir + "/ns/pid").c_str(), &ns) == 0) {
            if (ns.st_ino != own_ns.st_ino || ns.st_dev != own_ns.st_dev) continue;
        } else if (own_depth > 0 && pid_ns_depth(text) > own_depth) {
            continue;
        }
        std::istringstream status(text);
        std::string line, name;
        std::uint64_t hit = 0;
        while (std::getline(status, line)) {
            if (line.starts_with("Name:")) name = line.substr(line.find_first_not_of(" \t", 5));
            if (ids_in_range(line, "Uid:", cfg, hit) || ids_in_range(line, "Gid:", cfg, hit))
                collide(cfg,
                        fmt::format("host process {} ({}) runs with id {}", e->d_name, name, hit));
        }
    }
}

bool proc_hides_other_users(std::string_view mountinfo) noexcept {
    // The last procfs mounted at /proc is the one in effect (mounts stack).
    bool hides = false;
    while (!mountinfo.empty()) {
        const auto nl = mountinfo.find('\n');
        const std::string_view line = mountinfo.substr(0, nl);
        mountinfo = nl == std::string_view::npos ? std::string_view() : mountinfo.substr(nl + 1);
        // "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS"
        std::size_t at = 0;
        std::string_view fields[5];
        for (auto& f : fields) {
            const auto end = line.find(' ', at);
            f = line.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
            at = end == std::string_view::npos ? line.size() : end + 1;
        }
        const auto dash = line.find(" - ");
        if (fields[4] != "/proc" || dash == std::string_view::npos) continue;
        const std::string_view rest = line.substr(dash + 3);
        if (!rest.starts_with("proc ")) continue;
        const auto opts = rest.find(' ', 5);
        const std::string_view super =
            opts == std::string_view::npos ? std::string_view() : rest.substr(opts + 1);
        const auto hp = super.find("hidepid=");
        std::string_view value =
            hp == std::string_view::npos ? std::string_view("0") : super.substr(hp + 8);
        value = value.substr(0, value.find(','));
        hides = value != "0" && value != "off";
    }
    return hides;
}

bool host_proc_hides_other_users() noexcept {
    try {
        std::ifstream in("/proc/self/mountinfo");
        const std::string text((std::istreambuf_iterator<char>(in)), {});
        return proc_hides_other_users(text);
    } catch (...) {
        return false;
    }
}

} // namespace radial::config
