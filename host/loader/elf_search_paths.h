// host/loader/elf_search_paths.h — where the dynamic linker will look for a shared object's
// dependencies, read from the file before it is loaded (docs/design.md §5.9): its DT_RUNPATH and
// DT_RPATH directories and the DT_NEEDED entries given as paths. A plugin file radiald trusts may
// still name a directory anybody can write, whose library the load would run as radiald's user.
#pragma once

#include <string>
#include <vector>

namespace radial::loader {

struct ElfSearchPaths {
    std::vector<std::string> run_paths; // DT_RUNPATH and DT_RPATH entries, split at ':', as written
    std::vector<std::string> needed;    // every DT_NEEDED entry, as written
};

// Reads them from the 64-bit ELF file at `path` through its program headers (PT_DYNAMIC, the
// string table found through PT_LOAD), as the dynamic linker does; a file that is no such ELF, or
// one whose tables lie outside it, yields nothing (the load itself then refuses it). Reads at most
// the file's first 1 GiB. Throws nothing but std::bad_alloc. [thread-safe]
ElfSearchPaths elf_search_paths(const std::string& path);

} // namespace radial::loader
