#include "support/temp_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <radial/plugin/runtime.hpp>
#include <string>
#include <system_error>

namespace radial::plugin_support {

namespace {

std::filesystem::path temp_root() {
    std::error_code ec;
    auto root = std::filesystem::temp_directory_path(ec);
    return ec ? std::filesystem::path("/tmp") : root;
}

} // namespace

TempDir::TempDir(std::string_view prefix) {
    std::string tmpl = (temp_root() / (std::string(prefix) + "XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr)
        throw radial::plugin::Error(RADIAL_E_INTERNAL, "creating a private directory '" + tmpl +
                                                           "': " + std::strerror(errno) +
                                                           "; check TMPDIR and its free space");
    path_ = tmpl;
}

TempDir::TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }

TempDir::~TempDir() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

} // namespace radial::plugin_support
