// radial/internal/file_trust.h — whether a file radiald loads, obeys or runs (a runtime plugin, its
// config file, a CLI the config names) can be changed by nobody but root and radiald's own user
// (docs/design.md §5.9, §15.1), shared by radiald and the runtime plugins (§2.3). Each function
// returns why not, or an empty string; the caller says what it was doing.
//
// Rationale: whoever may replace such a file, or rename a directory above it, decides what runs
// as radiald (root, for the packaged daemon), so the file must be owned by root or radiald's user
// and writable by nobody else, and so must every directory above it — a root-owned sticky
// directory, as /tmp, excepted: nobody else can rename or remove what is in it.
#pragma once

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace radial::internal {

// Whether group `gid` lets nobody but `owner`, a user other than root, write what it may write:
// the owner's own private group (its primary group, of its name, with no other member), in which
// a umask of 002 leaves group-writable files. Root's files are held to no group write at all.
// [thread-safe]
inline bool group_is_owners_alone(gid_t gid, uid_t owner) {
    if (gid == 0 || owner == 0) return false;
    std::vector<char> buf(16384);
    passwd pw{};
    passwd* pwp = nullptr;
    if (::getpwuid_r(owner, &pw, buf.data(), buf.size(), &pwp) != 0 || pwp == nullptr ||
        pw.pw_gid != gid)
        return false;
    const std::string user = pw.pw_name;
    std::vector<char> gbuf(65536);
    group gr{};
    group* grp = nullptr;
    if (::getgrgid_r(gid, &gr, gbuf.data(), gbuf.size(), &grp) != 0 || grp == nullptr) return false;
    if (user != gr.gr_name) return false;
    for (char** m = gr.gr_mem; m != nullptr && *m != nullptr; ++m)
        if (user != *m) return false;
    return true;
}

// Why `path`, of which `st` is the stat, may not be trusted, or empty. `what` names it ("file",
// "directory"); `harm` is what another user who may write it could do ("replace the runtime").
// [thread-safe]
inline std::string trust_problem(const std::string& path, const struct stat& st,
                                 std::string_view what, std::string_view harm) {
    const std::string named = std::string(what) + " '" + path + "'";
    const bool sticky_root_dir = S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) && st.st_uid == 0;
    if ((st.st_mode & S_IWOTH) != 0 && !sticky_root_dir)
        return "the " + named + " is writable by group or others, so anyone could " +
               std::string(harm) + "; run 'chmod go-w " + path + "'";
    if ((st.st_mode & S_IWGRP) != 0 && !sticky_root_dir &&
        !group_is_owners_alone(st.st_gid, st.st_uid))
        return "the " + named + " is writable by its group (gid " + std::to_string(st.st_gid) +
               "), whose members could " + std::string(harm) + "; run 'chmod g-w " + path + "'";
    if (st.st_uid != 0 && st.st_uid != ::geteuid())
        return "the " + named + " is owned by uid " + std::to_string(st.st_uid) +
               ", neither root nor radiald's user, who could " + std::string(harm) +
               "; run 'chown root " + path + "'";
    return {};
}

// Why `dir` or a directory above it may not be trusted, or empty: whoever may change one of them
// may put another file (or a link) at a path below it. Links in `dir` are followed by stat(2),
// so the caller judges the canonical path too where links may lie on it. [thread-safe]
inline std::string untrusted_directory(std::filesystem::path dir, std::string_view harm) {
    for (;; dir = dir.parent_path()) {
        struct stat st {};
        if (::stat(dir.c_str(), &st) != 0)
            return "inspecting '" + dir.string() + "': " + std::strerror(errno);
        if (auto p = trust_problem(dir.string(), st, "directory", harm); !p.empty()) return p;
        if (dir == dir.root_path() || dir.empty()) return {};
    }
}

// Why the file at `path` may not be trusted, or empty, judged as a plugin is (§5.9): the
// directory it is named in and every one above it, as named and as they really are; a link
// there owned by root or radiald's user, and then where it leads, judged the same way; the file
// itself. A path where nothing is yet is judged by the nearest directory above it that exists:
// only whoever may write there can put a file at it. A relative path is taken from the working
// directory. [thread-safe]
inline std::string untrusted_file(const std::string& path, std::string_view harm) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path p = fs::absolute(path, ec).lexically_normal();
    if (ec) return "resolving '" + path + "': " + ec.message();
    for (int links = 0; links < 40; ++links) {
        fs::path dir = p.parent_path();
        while (!fs::exists(dir, ec) && dir != dir.root_path()) dir = dir.parent_path();
        if (auto problem = untrusted_directory(dir, harm); !problem.empty()) return problem;
        const fs::path real_dir = fs::canonical(dir, ec);
        if (ec) return "resolving '" + dir.string() + "': " + ec.message();
        if (real_dir != dir)
            if (auto problem = untrusted_directory(real_dir, harm); !problem.empty())
                return problem;
        if (dir != p.parent_path()) return {}; // nothing there yet
        p = real_dir / p.filename();
        struct stat st {};
        if (::lstat(p.c_str(), &st) != 0)
            return errno == ENOENT ? std::string()
                                   : "inspecting '" + p.string() + "': " + std::strerror(errno);
        if (!S_ISLNK(st.st_mode)) return trust_problem(p.string(), st, "file", harm);
        if (st.st_uid != 0 && st.st_uid != ::geteuid())
            return "the link '" + p.string() + "' is owned by uid " + std::to_string(st.st_uid) +
                   ", neither root nor radiald's user, who could " + std::string(harm) +
                   "; remove it, or name the file it leads to";
        const fs::path target = fs::read_symlink(p, ec);
        if (ec) return "reading the link '" + p.string() + "': " + ec.message();
        p = (p.parent_path() / target).lexically_normal(); // an absolute target replaces it
    }
    return "resolving '" + path + "': too many levels of symbolic links";
}

} // namespace radial::internal
