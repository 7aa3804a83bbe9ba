// plugins/support/temp_dir.h — a private per-run temporary directory, removed on scope exit.
#pragma once

#include <filesystem>
#include <string_view>

namespace radial::plugin_support {

// A directory created with mode 0700 (mkdtemp) under $TMPDIR (or /tmp), removed with everything
// in it when the owner goes out of scope. Move-only. Not thread-safe.
class TempDir {
public:
    // Creates "<tmp>/<prefix>XXXXXX". Throws radial::plugin::Error(RADIAL_E_INTERNAL) naming the
    // path when the directory cannot be created.
    explicit TempDir(std::string_view prefix);
    TempDir(TempDir&& other) noexcept;
    TempDir& operator=(TempDir&&) = delete;
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    // Removes the directory tree; errors are ignored (nothing useful can be done with them).
    ~TempDir();

    const std::filesystem::path& path() const noexcept { return path_; }

private:
    std::filesystem::path path_;
};

} // namespace radial::plugin_support
