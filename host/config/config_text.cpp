#include "config/config_text.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <radial/internal/file_trust.h>
#include <radial/internal/unique_fd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "config/host_config.h"
#include "fs/file_kind.h"
#include "fs/read_to_end.h"

namespace radial::config {

std::optional<PathProblem> config_path_problem(const std::string& path) {
    constexpr const char* kNameTheFile = "name the config file itself";
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
        if (S_ISREG(st.st_mode)) return std::nullopt;
        if (S_ISDIR(st.st_mode)) return PathProblem{"it is a directory, not a file", kNameTheFile};
        return PathProblem{
            fmt::format("it is {}, not a regular file", fs_util::file_kind(st.st_mode)),
            kNameTheFile};
    }
    const int err = errno;
    struct stat link {};
    if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode))
        return PathProblem{
            fmt::format("it is a link to '{}', which {}", fs_util::link_target(path),
                        err == ENOENT ? std::string("leads nowhere")
                                      : fmt::format("cannot be followed ({})", std::strerror(err))),
            "restore what it leads to, or remove the link"};
    if (err == ENOENT) return PathProblem{"no such file", "pass an existing file with --config"};
    return PathProblem{std::strerror(err),
                       "run radiald as a user who may read it, or change the directories' modes"};
}

std::string read_config_text(const std::string& path) {
    const auto refuse = [&](const std::string& why, const std::string& fix) {
        return ConfigError(fmt::format("reading config '{}': {}; {}", path, why, fix));
    };
    if (const auto problem = config_path_problem(path)) throw refuse(problem->why, problem->fix);
    // O_NONBLOCK: a fifo put at the name since the look above must not hang radiald.
    internal::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0)
        throw refuse(fmt::format("cannot read it: {}", std::strerror(errno)),
                     "run radiald as a user who may read it, or change its mode");
    if (!S_ISREG(st.st_mode))
        throw refuse(fmt::format("it is {}, not a regular file", fs_util::file_kind(st.st_mode)),
                     "name the config file itself");
    // The config names the programs radiald runs and the plugin directories it loads from: who
    // may change it, or a directory above it, runs code as radiald. Judged as a plugin is, and
    // the file read is the file judged (docs/design.md §5.9, §15.1).
    constexpr std::string_view kHarm = "change what radiald runs";
    std::string untrusted = internal::untrusted_file(path, kHarm);
    if (untrusted.empty()) untrusted = internal::trust_problem(path, st, "file", kHarm);
    if (!untrusted.empty())
        throw ConfigError(fmt::format("reading config '{}': {}", path, untrusted));
    std::string text;
    if (!fs_util::read_to_end(fd.get(), text))
        throw refuse(fmt::format("cannot read it: {}", std::strerror(errno)),
                     "check the file system it is on");
    return text;
}

std::string toml_problem(std::string_view description) {
    constexpr std::string_view prefix = "Error while parsing ";
    std::string_view what, rest = description;
    if (rest.starts_with(prefix)) {
        rest.remove_prefix(prefix.size());
        if (const auto colon = rest.find(": "); colon != std::string_view::npos) {
            what = rest.substr(0, colon);
            rest.remove_prefix(colon + 2);
        }
    }
    // "cannot redefine existing table 'run'", "... existing string 'x'", "... existing string
    // 'x' as table": the quoted name is the table's or the key's, as written.
    constexpr std::string_view redefine = "cannot redefine existing ";
    if (rest.starts_with(redefine)) {
        // The name is quoted as written, and may hold a quote itself: the last quote closes it.
        const auto open = rest.find('\'');
        const auto close = open == std::string_view::npos ? open : rest.rfind('\'');
        if (close != std::string_view::npos) {
            const std::string_view type = rest.substr(redefine.size(), open - redefine.size() - 1);
            const std::string_view name = rest.substr(open + 1, close - open - 1);
            const std::string_view after = rest.substr(close + 1);
            if (type == "table" && after.empty())
                return fmt::format(
                    "the table [{0}] appears twice; keep one [{0}] and put all its "
                    "keys in it",
                    name);
            if (after.empty()) return fmt::format("the key '{}' is set twice; keep one", name);
            // after: " as table", " as array-of-tables", " as dotted key-value pair"
            const std::string_view as = after.starts_with(" as ") ? after.substr(4) : after;
            return fmt::format(
                "'{}' is already a {}, so it cannot also be a{} {}; rename one of "
                "them",
                name, type, as.starts_with("a") ? "n" : "", as);
        }
    }
    if (what.empty()) return fmt::format("not valid TOML: {}", rest);
    return fmt::format("not valid TOML ({}): {}", what, rest);
}

} // namespace radial::config
