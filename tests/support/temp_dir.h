// tests/support/temp_dir.h — a private temporary directory removed with everything in it when
// the owner goes out of scope. Short paths under /tmp (the 108-byte sun_path limit).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace radial::test {

class TempDir {
public:
    explicit TempDir(const std::string& prefix = "radial") {
        std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
        if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
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
    std::string path_;
};

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

} // namespace radial::test
