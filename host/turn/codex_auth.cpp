// host/turn/codex_auth.cpp — see codex_auth.h.
#include "turn/codex_auth.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <radial/internal/unique_fd.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "fs/read_to_end.h"
#include "log/logger.h"

namespace radial::turn {
namespace fs = std::filesystem;

namespace {

// A Codex auth file is a few KiB; anything near this is not one.
constexpr std::size_t kMaxAuthBytes = 1 << 20;

// The file the operator's path names, links resolved: a link to the real file stays a link.
std::string resolved(const std::string& path) {
    std::unique_ptr<char, decltype(&std::free)> real(::realpath(path.c_str(), nullptr), &std::free);
    return real ? std::string(real.get()) : path;
}

// Holds flock(how) on the directory of `file` for its lifetime.
class DirLock {
public:
    DirLock(const std::string& file, int how)
        : fd_(::open(fs::path(file).parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
        if (!fd_) {
            error_ = std::strerror(errno);
            return;
        }
        while (::flock(fd_.get(), how) != 0)
            if (errno != EINTR) {
                error_ = std::strerror(errno);
                return;
            }
    }
    const std::string& error() const noexcept { return error_; }

private:
    internal::UniqueFd fd_;
    std::string error_;
};

bool write_all(int fd, std::string_view s) {
    while (!s.empty()) {
        const ssize_t n = ::write(fd, s.data(), s.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        s.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

} // namespace

std::optional<std::string> read_box_codex_auth(const std::string& dir, uid_t box_uid,
                                               std::string& why) {
    internal::UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    internal::UniqueFd fd(dfd ? ::openat(dfd.get(), "auth.json",
                                         O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
                              : -1);
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0) {
        why = errno == ELOOP ? "it is a symlink" : std::strerror(errno);
        return std::nullopt;
    }
    if (!S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != box_uid) {
        why = fmt::format(
            "it is not a regular file of the box user's with one name (mode {:o}, "
            "uid {}, {} links)",
            st.st_mode, st.st_uid, st.st_nlink);
        return std::nullopt;
    }
    std::string text;
    if (!fs_util::read_to_end(fd.get(), text, kMaxAuthBytes)) {
        why = fmt::format("it could not be read, or is over {} bytes", kMaxAuthBytes);
        return std::nullopt;
    }
    return text;
}

namespace {

// Replaces `dest` with `text`: a temporary file beside it, given dest's owner and mode, fsynced,
// renamed over it, the directory fsynced. Empty on success, else why.
std::string replace_keeping_owner(const std::string& dest, std::string_view text) {
    struct stat st {};
    if (::stat(dest.c_str(), &st) != 0) return std::strerror(errno);
    std::string tmp = (fs::path(dest).parent_path() / ".auth.json.radial-XXXXXX").string();
    internal::UniqueFd fd(::mkostemp(tmp.data(), O_CLOEXEC));
    if (!fd) return fmt::format("creating a temporary file beside it: {}", std::strerror(errno));
    const bool ok = ::fchown(fd.get(), st.st_uid, st.st_gid) == 0 &&
                    ::fchmod(fd.get(), st.st_mode & 07777) == 0 && write_all(fd.get(), text) &&
                    ::fsync(fd.get()) == 0;
    const int err = errno;
    fd.reset();
    if (!ok || ::rename(tmp.c_str(), dest.c_str()) != 0) {
        const int why = ok ? errno : err;
        ::unlink(tmp.c_str());
        return fmt::format("writing '{}': {}", tmp, std::strerror(why));
    }
    internal::UniqueFd dir(
        ::open(fs::path(dest).parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir || ::fsync(dir.get()) != 0)
        return fmt::format("syncing its directory: {}", std::strerror(errno));
    return {};
}

// The operator's file, read by a caller that holds the lock. Empty with `error` set on failure.
std::optional<std::string> read_operator_file(const std::string& path, const std::string& file,
                                              std::string& error) {
    internal::UniqueFd fd(::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    std::string text;
    if (!fd || !fs_util::read_to_end(fd.get(), text, kMaxAuthBytes)) {
        error = fmt::format(
            "run.codexAuth: reading the Codex credentials file '{}' failed: {}; check "
            "run.codexAuthFile",
            path, fd ? "it is over 1 MiB or a read failed" : std::strerror(errno));
        return std::nullopt;
    }
    return text;
}

} // namespace

std::optional<std::string> read_codex_auth(const std::string& path, std::string& error) {
    const std::string file = resolved(path);
    DirLock lock(file, LOCK_SH);
    if (!lock.error().empty()) {
        error = fmt::format(
            "run.codexAuth: locking the directory of '{}' failed: {}; check "
            "run.codexAuthFile",
            path, lock.error());
        return std::nullopt;
    }
    auto text = read_operator_file(path, file, error);
    // A key twice: a JSON reader keeps one of them, so the other would be handed to the box
    // unmasked (docs/design.md §8.7).
    if (text && has_duplicate_keys(*text)) {
        error = fmt::format(
            "run.codexAuth: '{}' has a key twice in one object; keep one (log in "
            "again with the harness, or edit the file)",
            path);
        return std::nullopt;
    }
    return text;
}

bool has_duplicate_keys(std::string_view text) {
    std::vector<std::set<std::string>> seen;
    bool duplicate = false;
    using Event = nlohmann::json::parse_event_t;
    const auto watch = [&](int, Event event, nlohmann::json& parsed) {
        if (event == Event::object_start)
            seen.emplace_back();
        else if (event == Event::object_end && !seen.empty())
            seen.pop_back();
        else if (event == Event::key && !seen.empty() &&
                 !seen.back().insert(parsed.get<std::string>()).second)
            duplicate = true;
        return true;
    };
    const auto parsed = nlohmann::json::parse(text, watch, false);
    (void)parsed; // only the keys are looked at
    return duplicate;
}

bool valid_codex_auth(std::string_view text) {
    const auto j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object()) return false;
    const auto tokens = j.find("tokens");
    const auto key = j.find("OPENAI_API_KEY");
    return (tokens != j.end() && tokens->is_object()) || (key != j.end() && key->is_string());
}

namespace {

// "2026-12-06T00:00:00Z", "2026-12-06T00:00:00.123456789+01:00": what Codex writes, and nothing
// that can carry more than a time.
bool rfc3339_time(const std::string& s) {
    static const std::regex time(
        R"(\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2}))");
    return std::regex_match(s, time);
}

bool token_shaped(const std::string& s) {
    if (s.size() < kRotatedTokenMinLength || s.size() > 16384) return false;
    return std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("._~+/=-", c) != nullptr;
    });
}

// Whether a string in `j`, keys included, holds one of `forbidden`.
bool holds_any(const nlohmann::json& j, const std::vector<std::string>& forbidden) {
    const auto in = [&](const std::string& s) {
        return std::any_of(forbidden.begin(), forbidden.end(), [&](const std::string& f) {
            return !f.empty() && s.find(f) != std::string::npos;
        });
    };
    if (j.is_string()) return in(j.get<std::string>());
    if (j.is_object())
        for (const auto& [key, value] : j.items())
            if (in(key) || holds_any(value, forbidden)) return true;
    if (j.is_array())
        for (const auto& value : j)
            if (holds_any(value, forbidden)) return true;
    return false;
}

} // namespace

std::string codex_rotation_problem(std::string_view given, std::string_view box,
                                   const std::vector<std::string>& forbidden) {
    if (box.size() > std::max<std::size_t>(64 << 10, 2 * given.size()))
        return fmt::format("it is {} bytes, more than a rotation of the {} given", box.size(),
                           given.size());
    // A key twice: the check below would read one value and the file carry both (a secret of the
    // turn's beside the token, into every later box).
    if (has_duplicate_keys(box)) return "it has a key twice in one object";
    const auto was = nlohmann::json::parse(given, nullptr, false);
    const auto now = nlohmann::json::parse(box, nullptr, false);
    if (!was.is_object() || !now.is_object())
        return "the file given was not a JSON object, so no rotation of it is known";
    // Key by key: the same keys and types; a value may change only where `may_change` says.
    using MayChange = bool (*)(const std::string& key, const nlohmann::json& value);
    const auto compare = [](const nlohmann::json& a, const nlohmann::json& b, MayChange may_change,
                            const std::string& where) -> std::string {
        const auto named = [&](const std::string& key) {
            return where.empty() ? key : where + "." + key;
        };
        for (const auto& [key, value] : b.items())
            // A first refresh writes the time of it where the file had none.
            if (!a.contains(key) && !(where.empty() && key == "last_refresh" && value.is_string()))
                return fmt::format("it adds a key of its own{}",
                                   where.empty() ? "" : " to " + where);
        for (const auto& [key, value] : a.items()) {
            const auto it = b.find(key);
            if (it == b.end()) return fmt::format("it drops the key '{}'", named(key));
            if (it->type() != value.type())
                return fmt::format("the key '{}' changed its type", named(key));
            if (!may_change(key, value) && *it != value)
                return fmt::format("the value of '{}' changed", named(key));
        }
        return {};
    };
    const auto top = [](const std::string& key, const nlohmann::json& value) {
        return (key == "last_refresh" && value.is_string()) ||
               (key == "tokens" && value.is_object());
    };
    const auto token = [](const std::string& key, const nlohmann::json& value) {
        return key != "account_id" && value.is_string();
    };
    if (auto why = compare(was, now, top, ""); !why.empty()) return why;
    // What the box changed: the rest is the operator's own (an API key that is also a secret of
    // the turn's, say) and goes back as it came.
    nlohmann::json changed = nlohmann::json::array();
    if (was.contains("tokens") && was["tokens"].is_object()) {
        if (auto why = compare(was["tokens"], now["tokens"], token, "tokens"); !why.empty())
            return why;
        for (const auto& [key, value] : now["tokens"].items())
            if (value != was["tokens"].at(key)) {
                if (!token_shaped(value.get<std::string>()))
                    return fmt::format("the new 'tokens.{}' is not {} to 16384 token characters",
                                       key, kRotatedTokenMinLength);
                changed.push_back(value);
            }
    }
    if (const auto it = now.find("last_refresh");
        it != now.end() && (!was.contains("last_refresh") || *it != was["last_refresh"])) {
        if (!rfc3339_time(it->get<std::string>()))
            return "its 'last_refresh' is not an RFC 3339 time";
        changed.push_back(*it);
    }
    // Carried to every later turn, a secret of this one would outlive it there.
    if (holds_any(changed, forbidden)) return "it holds a secret of the turn's (not its tokens)";
    return {};
}

CodexWriteBackResult write_back_codex_auth(const std::string& box_codex_dir, uid_t box_uid,
                                           const std::string& path, std::string_view given,
                                           const std::vector<std::string>& forbidden) {
    std::string why;
    const auto box = read_box_codex_auth(box_codex_dir, box_uid, why);
    if (!box) return {CodexWriteBack::invalid, "the box's auth.json was not taken: " + why};
    if (*box == given) return {CodexWriteBack::unchanged, {}};
    if (!valid_codex_auth(*box))
        return {CodexWriteBack::invalid,
                "the box's auth.json is not a Codex auth file (a JSON object with \"tokens\" or "
                "\"OPENAI_API_KEY\")"};
    if (auto why = codex_rotation_problem(given, *box, forbidden); !why.empty())
        return {CodexWriteBack::invalid,
                "the box's auth.json is not a rotation of the tokens it was given (" + why + ")"};
    const std::string file = resolved(path);
    DirLock lock(file, LOCK_EX);
    if (!lock.error().empty())
        return {CodexWriteBack::failed, "locking its directory: " + lock.error()};
    std::string now_error;
    const auto now = read_operator_file(path, file, now_error);
    if (!now) return {CodexWriteBack::failed, now_error};
    if (*now != given)
        return {CodexWriteBack::conflict,
                "the file changed while the turn ran (another turn's rotation, or the "
                "operator's login), and is kept"};
    // What was judged, written again: never the box's bytes as they were.
    const std::string judged = nlohmann::ordered_json::parse(*box).dump(2) + "\n";
    if (std::string failed = replace_keeping_owner(file, judged); !failed.empty())
        return {CodexWriteBack::failed, failed};
    return {CodexWriteBack::written, {}};
}

void log_codex_write_back(const std::string& turn_id, const CodexWriteBackResult& r) {
    switch (r.outcome) {
        case CodexWriteBack::unchanged: return;
        case CodexWriteBack::written:
            log::info("turn",
                      "turn {}: run.codexAuth: the credentials the box rotated were written back "
                      "to the operator's file",
                      turn_id);
            return;
        case CodexWriteBack::invalid:
        case CodexWriteBack::conflict:
        case CodexWriteBack::failed:
            log::warn("turn",
                      "turn {}: run.codexAuth: the operator's credentials file was not updated: "
                      "{}",
                      turn_id, r.detail);
            return;
    }
}

} // namespace radial::turn
