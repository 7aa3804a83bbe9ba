// radial/internal/temp_dir.h — the one owner of a temporary directory in the tree
// (docs/design.md §14.6), shared by radiald, the runtime plugins, the conformance harness and the
// tests (§2.3). Callers that need more (a lock, helpers to write files) wrap it.
#pragma once

#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace radial::internal {

// A temporary directory, or a file or directory in one, could not be made (docs/design.md §14.2):
// what internal::TempDir and the conformance harness's wrapper throw. A std::system_error, so
// code() is the errno; what() is "<step> '<path>': <strerror>" (§14.3) and the caller adds what to
// check.
class TempDirError : public std::system_error {
public:
    TempDirError(int err, const std::string& what)
        : std::system_error(err, std::generic_category(), what) {}
};

// A directory created with mode 0700 by mkdtemp(3), removed with everything in it when its owner
// goes out of scope. Move-only. Not thread-safe.
class TempDir {
public:
    // Creates "<root>/<prefix>XXXXXX". Throws TempDirError (the errno of mkdtemp) whose what()
    // names the path it tried.
    TempDir(const std::filesystem::path& root, std::string_view prefix) {
        std::string tmpl = (root / (std::string(prefix) + "XXXXXX")).string();
        if (::mkdtemp(tmpl.data()) == nullptr)
            throw TempDirError(errno, "creating a temporary directory '" + tmpl + "'");
        path_ = std::move(tmpl);
    }
    TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}
    TempDir& operator=(TempDir&&) = delete;
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    // Removes the tree. Errors are not reported: a destructor has no one to tell, and what is left
    // is under a temporary directory.
    ~TempDir() {
        if (path_.empty()) return;
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }

    const std::filesystem::path& path() const noexcept { return path_; }

    // $TMPDIR when it is set and not empty, else /tmp.
    static std::filesystem::path default_root() {
        const char* tmp = std::getenv("TMPDIR");
        return tmp != nullptr && *tmp != '\0' ? std::filesystem::path(tmp)
                                              : std::filesystem::path("/tmp");
    }

private:
    std::filesystem::path path_;
};

} // namespace radial::internal
