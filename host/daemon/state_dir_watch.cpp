#include "daemon/state_dir_watch.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace radial::daemon {

StateDirWatch::StateDirWatch(std::vector<std::string> paths) {
    for (auto& path : paths) {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0)
            throw std::system_error(errno, std::generic_category(), "looking at '" + path + "'");
        watched_.push_back({std::move(path), st.st_dev, st.st_ino});
    }
}

std::optional<std::string> StateDirWatch::lost() const {
    for (const auto& w : watched_) {
        struct stat st {};
        if (::stat(w.path.c_str(), &st) != 0) {
            if (errno == ENOENT || errno == ENOTDIR)
                return fmt::format("'{}' was removed while radiald ran", w.path);
            continue; // not known (EACCES, EIO): no reason to stop serving
        }
        if (st.st_dev != w.dev || st.st_ino != w.ino)
            return fmt::format(
                "'{}' is another file than the one radiald opened (the state "
                "directory was replaced while radiald ran)",
                w.path);
    }
    return std::nullopt;
}

} // namespace radial::daemon
