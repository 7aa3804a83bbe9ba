#include "loader/plugin_loader.h"

#include <fmt/format.h>
#include <radial/internal/file_trust.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/dll/shared_library.hpp>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "fs/file_kind.h"
#include "loader/elf_search_paths.h"
#include "loader/signal_snapshot.h"

namespace radial::loader {
namespace fs = std::filesystem;

namespace {

// What another user who could write a plugin or a directory above it could do (docs/design.md
// §5.9).
constexpr std::string_view kHarm = "replace the runtime";

std::string trust_problem(const std::string& path, const struct stat& st, const char* what) {
    return internal::trust_problem(path, st, what, kHarm);
}

std::string untrusted_directory(const fs::path& dir) {
    return internal::untrusted_directory(dir, kHarm);
}

// Why the libraries the dynamic linker would load with `so` may not be trusted, or empty: its
// runpath directories (with $ORIGIN), and the files its DT_NEEDED entries name by path, are judged
// as the plugin's own directory is, and so are the libraries found through them, in turn
// (docs/design.md §5.9). The system's own directories (ld.so.cache) are the host's.
std::string untrusted_search_path(const fs::path& so, std::set<std::string>& seen, int depth = 0) {
    if (depth > 8 || !seen.insert(so.string()).second) return {};
    const auto paths = elf_search_paths(so.string());
    std::vector<fs::path> dirs;
    for (const auto& raw : paths.run_paths) {
        std::string dir = raw;
        for (const char* origin : {"${ORIGIN}", "$ORIGIN"})
            for (auto at = dir.find(origin); at != std::string::npos; at = dir.find(origin))
                dir.replace(at, std::strlen(origin), so.parent_path().string());
        const auto said = fmt::format("'{}', named in its runpath as '{}'", so.string(), raw);
        if (dir.find('$') != std::string::npos)
            return fmt::format(
                "{}: a substitution radiald cannot judge ($LIB, $PLATFORM); link "
                "it with absolute paths or $ORIGIN",
                said);
        if (dir.empty() || dir.front() != '/')
            return fmt::format(
                "{}: a relative directory, which the dynamic linker takes from "
                "radiald's working directory; link it with absolute paths or "
                "$ORIGIN",
                said);
        // One that does not exist yet is made by whoever may write where it would be.
        fs::path existing = fs::path(dir).lexically_normal();
        std::error_code ec;
        while (!fs::exists(existing, ec) && existing != existing.root_path())
            existing = existing.parent_path();
        if (auto p = untrusted_directory(existing); !p.empty())
            return fmt::format("the library directory {}: {}", said, p);
        dirs.push_back(fs::path(dir).lexically_normal());
    }
    for (const auto& name : paths.needed) {
        // Named by path, its directory is judged here; found in a runpath directory, that
        // directory was judged above. Else the linker's own directories, root's, find it.
        fs::path found;
        bool judge_directory = false;
        std::error_code ec;
        if (name.find('/') != std::string::npos) {
            found = fs::path(name).is_absolute() ? fs::path(name) : so.parent_path() / name;
            judge_directory = true;
        } else {
            for (const auto& d : dirs)
                if (fs::exists(d / name, ec)) {
                    found = d / name;
                    break;
                }
        }
        if (found.empty()) continue;
        struct stat st {};
        if (::stat(found.c_str(), &st) == 0) {
            auto p = trust_problem(found.string(), st, "library");
            if (p.empty() && judge_directory) p = untrusted_directory(found.parent_path());
            if (!p.empty())
                return fmt::format("'{}', which '{}' needs: {}", found.string(), so.string(), p);
        }
        if (auto p = untrusted_search_path(found, seen, depth + 1); !p.empty()) return p;
    }
    return {};
}

} // namespace

std::vector<std::string> plugin_files(const std::vector<std::string>& dirs) {
    std::vector<std::string> out;
    for (const auto& dir : dirs) {
        std::error_code ec;
        if (!fs::is_directory(dir, ec)) continue;
        std::vector<std::string> files;
        for (const auto& e : fs::directory_iterator(dir, ec))
            if (e.path().extension() == ".so") files.push_back(e.path().string());
        std::sort(files.begin(), files.end());
        out.insert(out.end(), files.begin(), files.end());
    }
    return out;
}

LoadedPlugin load_plugin(const std::string& given) {
    std::error_code ec;
    const std::string named = fs::absolute(given, ec).lexically_normal().string();
    // Where it is named first: in a directory others may write, a link planted there would pick
    // which trusted file radiald loads (docs/design.md §5.9).
    if (auto p = untrusted_directory(fs::path(named).parent_path()); !p.empty())
        throw LoadError(fmt::format("loading plugin '{}': {}", named, p));
    struct stat link {};
    if (::lstat(named.c_str(), &link) != 0)
        throw LoadError(fmt::format("loading plugin '{}': {}; remove it from the plugin directory",
                                    named, std::strerror(errno)));
    if (S_ISLNK(link.st_mode) && link.st_uid != 0 && link.st_uid != ::geteuid())
        throw LoadError(fmt::format(
            "loading plugin '{}': the link is owned by uid {}, neither root nor radiald's user; "
            "remove it from the plugin directory",
            named, link.st_uid));
    // Judged, loaded and (under process isolation) opened again where it really is: a link in a
    // trusted directory may point into one anybody can write, where the file could be swapped
    // between the checks and the load (docs/design.md §5.9).
    const fs::path real = fs::canonical(named, ec);
    // A dangling link in a trusted directory is its owner's mistake (a removed package's, say):
    // the scan fails closed, as for any broken plugin, and says what to remove.
    if (ec && S_ISLNK(link.st_mode))
        throw LoadError(fmt::format(
            "loading plugin '{}': it is a link to '{}', which cannot be followed ({}); radiald "
            "loads no plugin while one in its plugin directory is broken: remove the link or "
            "restore what it points to",
            named, fs_util::link_target(named), ec.message()));
    if (ec)
        throw LoadError(fmt::format("loading plugin '{}': {}; remove it from the plugin directory",
                                    named, ec.message()));
    const std::string path = real.string();
    const std::string who = path == named
                                ? fmt::format("loading plugin '{}'", path)
                                : fmt::format("loading plugin '{}' (a link to '{}')", named, path);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        throw LoadError(fmt::format("loading plugin '{}': {}; remove it from the plugin directory",
                                    path, std::strerror(errno)));
    if (!S_ISREG(st.st_mode))
        throw LoadError(
            fmt::format("loading plugin '{}': not a regular file; remove it from the "
                        "plugin directory",
                        path));
    if (auto p = trust_problem(path, st, "file"); !p.empty())
        throw LoadError(fmt::format("{}: {}", who, p));
    // Every directory above it too: whoever may rename one of them may put another file at the
    // path between these checks and the load.
    if (auto p = untrusted_directory(real.parent_path()); !p.empty())
        throw LoadError(fmt::format("{}: {}", who, p));
    if (::access(path.c_str(), R_OK) != 0)
        throw LoadError(
            fmt::format("loading plugin '{}': cannot read it: {}", path, std::strerror(errno)));
    // What it makes the dynamic linker load runs as radiald's user as the plugin does.
    std::set<std::string> seen;
    if (auto p = untrusted_search_path(real, seen); !p.empty())
        throw LoadError(fmt::format("{}: {}", who, p));

    // The library's constructors and its entry run on this thread: what they do to its signal
    // mask or to any handler is undone (docs/design.md §5.8) and said.
    const SignalSnapshot signals;
    std::vector<std::string> put_back;
    struct Restore {
        const SignalSnapshot& s;
        std::vector<std::string>& out;
        ~Restore() { out = s.restore(); }
    };
    std::shared_ptr<boost::dll::shared_library> lib;
    const radial_runtime_descriptor* d = nullptr;
    {
        Restore restore{signals, put_back};
        try {
            lib = std::make_shared<boost::dll::shared_library>(
                path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
        } catch (const std::exception& e) {
            throw LoadError(
                fmt::format("loading plugin '{}': not a loadable shared object ({}); "
                            "remove it from the plugin directory",
                            path, e.what()));
        }
        if (!lib->has(RADIAL_RT_ENTRY_SYMBOL))
            throw LoadError(
                fmt::format("loading plugin '{}': no entry symbol '{}', so it is not a "
                            "radial runtime plugin; remove it from the plugin directory",
                            path, RADIAL_RT_ENTRY_SYMBOL));
        auto& entry = lib->get<const radial_runtime_descriptor*()>(RADIAL_RT_ENTRY_SYMBOL);
        d = entry();
    }
    std::string problem = host::descriptor_problem(d);
    if (!problem.empty()) {
        std::string who;
        if (d != nullptr && d->struct_size >= 8) {
            auto info = host::read_descriptor_info(*d);
            if (!info.id.empty()) who = fmt::format(" (runtime '{}' {})", info.id, info.version);
        }
        throw LoadError(fmt::format("loading plugin '{}'{}: {}", path, who, problem));
    }
    LoadedPlugin p;
    p.path = path;
    p.library = lib;
    p.descriptor = d;
    p.info = host::read_descriptor_info(*d);
    p.signals_put_back = std::move(put_back);
    return p;
}

std::vector<LoadedPlugin> load_plugins(const std::vector<std::string>& dirs) {
    std::vector<LoadedPlugin> out;
    std::map<std::string, std::string> by_id;
    for (const auto& f : plugin_files(dirs)) {
        LoadedPlugin p = load_plugin(f);
        auto [it, inserted] = by_id.emplace(p.info.id, p.path);
        if (!inserted)
            throw LoadError(
                fmt::format("plugins '{}' and '{}' both claim runtime id '{}'; "
                            "remove one of them",
                            it->second, p.path, p.info.id));
        out.push_back(std::move(p));
    }
    return out;
}

LoadedPlugin select_plugin(const std::vector<LoadedPlugin>& plugins, const std::string& id,
                           const std::vector<std::string>& dirs) {
    for (const auto& p : plugins)
        if (p.info.id == id) return p;
    std::vector<std::string> ids;
    for (const auto& p : plugins) ids.push_back("'" + p.info.id + "'");
    std::vector<std::string> quoted;
    for (const auto& d : dirs) quoted.push_back("'" + d + "'");
    throw LoadError(fmt::format(
        "no runtime plugin with id '{}' in {}; found {}; set run.containerRuntime to one of "
        "those or install the plugin (run.pluginDir names where to look)",
        id, fmt::join(quoted, ", "),
        ids.empty() ? std::string("none") : fmt::format("{}", fmt::join(ids, ", "))));
}

} // namespace radial::loader
