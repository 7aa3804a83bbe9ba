// host/loader/plugin_loader.h — finds runtime plugins (*.so) in the plugin directories, loads
// them with Boost.DLL and checks their descriptors (docs/design.md §5, ABI negotiation).
//
// Boost.DLL 1.74 specifics we rely on: the throwing shared_library constructor is the only one
// that keeps dlerror()'s text; get<>() takes a *function* type; a shared_library is never copied
// (a copy re-opens by path) — it is held in a shared_ptr; and we never unload while running.
// import/import_alias are not used (renamed in 1.76).
#pragma once

#include <radial/runtime_plugin.h>

#include <memory>
#include <radial/host/runtime_client.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace radial::loader {

// A plugin that cannot be used. what() is one line naming the file and what to do.
class LoadError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A loaded plugin library and its validated descriptor. `library` keeps the code mapped; the
// descriptor pointer is valid while any copy of it lives.
struct LoadedPlugin {
    std::string path; // absolute and canonical: where the file really is
    std::shared_ptr<const void> library;
    const radial_runtime_descriptor* descriptor = nullptr;
    host::DescriptorInfo info;
    // What loading it changed of the loading thread's signal mask and of the process's signal
    // handlers, put back since ("SIGTERM blocked", "SIGUSR1's handler"; SignalSnapshot).
    std::vector<std::string> signals_put_back;
};

// Every entry named *.so in `dirs`, whatever its type (a directory or a dangling link named x.so
// is reported by load_plugin, not skipped), in name order per directory. A directory that does
// not exist contributes nothing.
std::vector<std::string> plugin_files(const std::vector<std::string>& dirs);

// Loads one file, where it really is: a link is followed first, and LoadedPlugin::path is the
// canonical path. Throws LoadError: the directory it is named in (or one above it) not trusted, or
// a link owned by someone other than root or radiald's user (whoever may put a link there picks
// the file); a link that leads nowhere (named as such); not a regular file or unreadable, not
// trusted (the file or any directory above it writable by group or others — a root-owned sticky
// directory excepted — or owned by someone other than root or radiald's user: anyone who can
// replace the runtime runs code as radiald), not a loadable shared object
// (with dlerror's text), no entry symbol, a NULL or unusable descriptor (ABI major mismatch or
// newer minor, naming both versions). Thread-safety: call from one thread (dlopen at startup).
LoadedPlugin load_plugin(const std::string& path);

// Loads every *.so in `dirs` (in name order). A broken plugin fails the whole scan — radiald fails
// closed rather than guessing — and so do two plugins claiming one id. A directory that does not
// exist contributes nothing. Throws LoadError.
std::vector<LoadedPlugin> load_plugins(const std::vector<std::string>& dirs);

// The plugin whose id is `id`. Throws LoadError listing the ids that were found.
LoadedPlugin select_plugin(const std::vector<LoadedPlugin>& plugins, const std::string& id,
                           const std::vector<std::string>& dirs);

} // namespace radial::loader
