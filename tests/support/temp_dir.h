// tests/support/temp_dir.h — a private temporary directory removed with everything in it when
// the owner goes out of scope (a radial::internal::TempDir, the one temp-dir owner,
// docs/design.md §14.6). Short paths under /tmp (the 108-byte sun_path limit).
#pragma once

#include <radial/internal/temp_dir.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace radial::test {

class TempDir {
public:
    // Throws internal::TempDirError naming the path when mkdtemp fails.
    explicit TempDir(const std::string& prefix = "radial")
        : dir_("/tmp", prefix + "-"), path_(dir_.path().string()) {}
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const noexcept { return path_; }
    std::string operator/(const std::string& name) const { return path_ + "/" + name; }

    // Writes `content` to `name` inside the directory and returns the file's path.
    std::string write(const std::string& name, const std::string& content) const {
        std::string p = *this / name;
        std::ofstream(p, std::ios::binary | std::ios::trunc) << content;
        return p;
    }

private:
    internal::TempDir dir_;
    std::string path_;
};

// Ends a death test's child with `code`, its temporary directory `dir` removed first: under
// death_test_style "threadsafe" the child runs the test again, making a directory of its own, and
// std::_Exit runs no destructor (docs/design.md §16: a test leaves no files).
[[noreturn]] inline void exit_removing(const std::string& dir, int code) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::_Exit(code);
}

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

} // namespace radial::test
