#include "config/instance_id.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <radial/internal/names.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "config/state_dir_trust.h"
#include "fs/durable_file.h"
#include "text/utf8.h"

namespace radial::config {
namespace fs = std::filesystem;

namespace {

std::string generate_id() {
    constexpr std::string_view kAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
    unsigned char bytes[12];
    std::ifstream urandom("/dev/urandom", std::ios::binary);
    urandom.read(reinterpret_cast<char*>(bytes), sizeof(bytes));
    if (!urandom) throw ConfigError("generating an instance id: reading /dev/urandom failed");
    std::string id;
    // The modulo bias (256 % 36) is irrelevant here: the id needs to be unique, not uniform.
    for (unsigned char b : bytes) id.push_back(kAlphabet[b % kAlphabet.size()]);
    return id;
}

// The id kept in `file`; nullopt when there is no such file. Any other failure to read it throws:
// a caller that reports the id must not report "none" because it may not look.
std::optional<std::string> read_id(const fs::path& file) {
    // open(2) first, for its errno: an ifstream only says that it failed.
    int err = 0;
    if (int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0)
        ::close(fd);
    else
        err = errno;
    std::ifstream in(file);
    if (!in) {
        if (err == ENOENT) return std::nullopt;
        throw ConfigError(
            fmt::format("reading the instance id '{}': {}; run this as a user who may "
                        "read the state directory",
                        file.string(), std::strerror(err)));
    }
    std::string text((std::istreambuf_iterator<char>(in)), {});
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
        text.pop_back();
    if (!internal::is_instance_id(text))
        throw ConfigError(fmt::format(
            "reading the instance id '{}': '{}' is not an instance id ([a-z0-9]{{1,32}}); set "
            "run.instanceId, or delete the file to have a new id generated once no box of the old "
            "one remains",
            file.string(), text::utf8_prefix(text, 64)));
    return text;
}

} // namespace

std::string persisted_instance_id(const std::string& state_dir) {
    fs::path dir(state_dir), file = dir / kInstanceIdFile;
    std::error_code ec;
    if (fs::create_directories(dir, ec)) ::chmod(dir.c_str(), 0700);
    if (ec)
        throw ConfigError(fmt::format("creating the state directory '{}' (run.stateDir): {}",
                                      state_dir, ec.message()));
    check_state_dir_trust(state_dir); // before anything in it is read or written
    if (auto id = read_id(file)) return *id;
    // Published without replacing anything, so a concurrent first start cannot leave two ids,
    // nor a reader half of one: whoever loses the race reads the winner's.
    try {
        fs_util::publish_file(dir, file, generate_id() + "\n", 0644);
    } catch (const fs_util::FsError& e) {
        throw ConfigError(fmt::format("writing the instance id '{}': {}", file.string(), e.what()));
    }
    if (auto id = read_id(file)) return *id;
    throw ConfigError(
        fmt::format("reading the instance id '{}': the file vanished after it was "
                    "written; check what else manages the state directory",
                    file.string()));
}

std::optional<std::string> read_persisted_instance_id(const std::string& state_dir) {
    return read_id(fs::path(state_dir) / kInstanceIdFile);
}

void settle_instance_id(HostConfig& cfg) {
    if (cfg.instance_id.empty()) cfg.instance_id = persisted_instance_id(cfg.state_dir);
}

} // namespace radial::config
