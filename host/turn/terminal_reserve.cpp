// host/turn/terminal_reserve.cpp — see terminal_reserve.h.
#include "turn/terminal_reserve.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "fs/durable_file.h"

namespace radial::turn {
namespace fs = std::filesystem;

namespace {

constexpr const char* kPendingDir = "pending";
constexpr const char* kSuffix = ".json";

bool write_at(int fd, std::string_view text, off_t offset) {
    while (!text.empty()) {
        ssize_t n = ::pwrite(fd, text.data(), text.size(), offset);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        text.remove_prefix(static_cast<std::size_t>(n));
        offset += n;
    }
    return true;
}

// Keeps the last `n` bytes of `s`.
void keep_last(std::string& s, std::size_t n) {
    if (s.size() > n) s.erase(0, s.size() - n);
}

std::string trim_blank(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\0')) s.pop_back();
    return s;
}

} // namespace

std::string pending_path(const std::string& state_dir, const std::string& turn_id) {
    return (fs::path(state_dir) / kPendingDir / (turn_id + kSuffix)).string();
}

TerminalReserve TerminalReserve::create(const std::string& state_dir, const std::string& turn_id) {
    std::string path = pending_path(state_dir, turn_id);
    auto fail = [&](const std::string& cause) {
        return std::runtime_error(
            fmt::format("reserving space for the terminal record in '{}': {}; free space on the "
                        "state directory's file system (run.stateDir)",
                        path, cause));
    };
    fs::path dir = fs::path(state_dir) / kPendingDir;
    const bool made = ::mkdir(dir.c_str(), 0700) == 0;
    if (!made && errno != EEXIST) throw fail(std::strerror(errno));
    // O_TRUNC: whatever a radiald that died left under this name is replaced by a blank reserve.
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) throw fail(std::strerror(errno));
    TerminalReserve reserve(path, fd);
    const std::string blank(kTerminalReserveBytes, '\n');
    // Written, not fallocate'd: every file system allocates written blocks, and tmpfs and ext4
    // then overwrite them in place.
    if (!write_at(fd, blank, 0) || ::fsync(fd) != 0) throw fail(std::strerror(errno));
    // The file's name too: the reserve may become the only copy of how its turn ended.
    try {
        if (made) fs_util::fsync_directory(state_dir);
        fs_util::fsync_directory(dir);
    } catch (const std::exception& e) {
        throw fail(e.what());
    }
    return reserve;
}

TerminalReserve::TerminalReserve(TerminalReserve&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::move(other.fd_)),
      kept_(std::exchange(other.kept_, true)),
      written_(other.written_) {}

TerminalReserve::~TerminalReserve() {
    fd_.reset();
    if (!kept_ && !path_.empty()) ::unlink(path_.c_str());
}

std::string TerminalReserve::keep(TerminalRecord rec) {
    if (!fd_) return fmt::format("the reserve '{}' is closed", path_);
    std::string json = rec.to_json();
    // Shorten the tails (their ends are what matters), then the error text, until it fits.
    while (json.size() + 1 > kTerminalReserveBytes &&
           (!rec.stdout_tail.empty() || !rec.stderr_tail.empty())) {
        keep_last(rec.stdout_tail, rec.stdout_tail.size() / 2);
        keep_last(rec.stderr_tail, rec.stderr_tail.size() / 2);
        json = rec.to_json();
    }
    if (json.size() + 1 > kTerminalReserveBytes && rec.error.size() > 1024) {
        rec.error.resize(1024);
        json = rec.to_json();
    }
    json += '\n';
    // A shorter record over a longer one: blank out the rest, which reading trims.
    const std::size_t length = json.size();
    if (length < written_) json.append(written_ - length, '\n');
    if (!write_at(fd_.get(), json, 0) || ::fdatasync(fd_.get()) != 0)
        return fmt::format("writing the terminal record to '{}': {}", path_, std::strerror(errno));
    written_ = std::max(written_, length);
    kept_ = true;
    return {};
}

void TerminalReserve::release() noexcept {
    fd_.reset();
    if (!path_.empty()) ::unlink(path_.c_str());
    kept_ = true; // nothing left for the destructor to do
}

std::optional<PendingTerminal> read_pending(const std::string& state_dir,
                                            const std::string& turn_id) {
    std::ifstream in(pending_path(state_dir, turn_id), std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    std::string json = trim_blank(text.str());
    if (json.empty()) return std::nullopt;
    auto j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
    // A record torn by a crash while it was written is not a record: the turn is reclaimed.
    if (!j.is_object() || !j.contains("status") || !j["status"].is_string()) return std::nullopt;
    return PendingTerminal{turn_id, j["status"].get<std::string>(), std::move(json)};
}

std::vector<PendingTerminal> list_pending(const std::string& state_dir) {
    std::vector<PendingTerminal> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(state_dir) / kPendingDir, ec)) {
        std::string name = e.path().filename().string();
        if (!name.ends_with(kSuffix)) continue;
        std::string id = name.substr(0, name.size() - std::strlen(kSuffix));
        if (auto p = read_pending(state_dir, id)) out.push_back(std::move(*p));
    }
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.turn_id < b.turn_id; });
    return out;
}

void remove_pending(const std::string& state_dir, const std::string& turn_id) noexcept {
    ::unlink(pending_path(state_dir, turn_id).c_str());
}

} // namespace radial::turn
