#include "loader/elf_search_paths.h"

#include <elf.h>
#include <fcntl.h>
#include <radial/internal/unique_fd.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <optional>

namespace radial::loader {
namespace {

constexpr std::uint64_t kMaxOffset = std::uint64_t{1} << 30;
constexpr std::uint64_t kMaxTable = std::uint64_t{16} << 20;

// `size` bytes at `offset`, or nothing when the file does not hold them all.
bool read_at(int fd, std::uint64_t offset, void* out, std::uint64_t size) {
    if (offset > kMaxOffset || size > kMaxTable) return false;
    auto* p = static_cast<char*>(out);
    while (size > 0) {
        const ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
        if (n <= 0) return false;
        p += n;
        offset += static_cast<std::uint64_t>(n);
        size -= static_cast<std::uint64_t>(n);
    }
    return true;
}

} // namespace

ElfSearchPaths elf_search_paths(const std::string& path) {
    ElfSearchPaths out;
    internal::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return out;
    Elf64_Ehdr eh{};
    if (!read_at(fd.get(), 0, &eh, sizeof eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr))
        return out;
    std::vector<Elf64_Phdr> ph(eh.e_phnum);
    if (!read_at(fd.get(), eh.e_phoff, ph.data(), ph.size() * sizeof(Elf64_Phdr))) return out;
    std::vector<Elf64_Dyn> dyn;
    for (const auto& h : ph)
        if (h.p_type == PT_DYNAMIC) {
            dyn.resize(std::min<std::uint64_t>(h.p_filesz, kMaxTable) / sizeof(Elf64_Dyn));
            if (!read_at(fd.get(), h.p_offset, dyn.data(), dyn.size() * sizeof(Elf64_Dyn)))
                return out;
        }
    std::optional<std::uint64_t> strtab, strsz;
    std::vector<std::pair<std::int64_t, std::uint64_t>> strings; // tag, offset in the table
    for (const auto& d : dyn) {
        if (d.d_tag == DT_NULL) break;
        if (d.d_tag == DT_STRTAB) strtab = d.d_un.d_ptr;
        if (d.d_tag == DT_STRSZ) strsz = d.d_un.d_val;
        if (d.d_tag == DT_NEEDED || d.d_tag == DT_RUNPATH || d.d_tag == DT_RPATH)
            strings.emplace_back(d.d_tag, d.d_un.d_val);
    }
    if (!strtab || !strsz || strings.empty()) return out;
    // The table is named by its address once loaded: the segment holding it says where it is.
    std::optional<std::uint64_t> at;
    for (const auto& h : ph)
        if (h.p_type == PT_LOAD && *strtab >= h.p_vaddr && *strtab - h.p_vaddr < h.p_filesz)
            at = h.p_offset + (*strtab - h.p_vaddr);
    std::string table(static_cast<std::size_t>(std::min(*strsz, kMaxTable)), '\0');
    if (!at || !read_at(fd.get(), *at, table.data(), table.size())) return out;
    for (const auto& [tag, offset] : strings) {
        if (offset >= table.size()) continue;
        const std::string value = table.c_str() + offset;
        if (tag == DT_NEEDED) {
            out.needed.push_back(value);
            continue;
        }
        for (std::size_t from = 0;;) {
            const auto colon = value.find(':', from);
            out.run_paths.push_back(value.substr(from, colon - from));
            if (colon == std::string::npos) break;
            from = colon + 1;
        }
    }
    return out;
}

} // namespace radial::loader
