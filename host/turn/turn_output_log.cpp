#include "turn/turn_output_log.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <radial/internal/names.h>
#include <radial/runtime_plugin.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <boost/beast/core/detail/base64.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <system_error>

#include "config/bounded_units.h"
#include "log/logger.h"
#include "text/utf8.h"
#include "turn/output_tail.h"
#include "turn/terminal_record.h"

namespace radial::turn {
namespace fs = std::filesystem;

namespace {

// How much output goes between two looks at the state file system's free space: one statvfs per
// MiB costs nothing against writing the MiB.
constexpr std::uint64_t kSpaceCheckBytes = 1u << 20;

// Invalid UTF-8 shows as U+FFFD rather than making the record unwritable (the bytes follow).
std::string dump(const nlohmann::ordered_json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void add_output_record(std::string& out, const std::string& time, bool is_stderr,
                       std::string_view bytes) {
    nlohmann::ordered_json j = {
        {"time", time}, {"stream", is_stderr ? "stderr" : "stdout"}, {"log", std::string(bytes)}};
    if (!text::is_valid_utf8(bytes)) j["base64"] = base64_encode(bytes);
    out += dump(j);
    out += '\n';
}

std::string event_record(const std::string& time, std::string_view event,
                         nlohmann::ordered_json more = nlohmann::ordered_json::object()) {
    nlohmann::ordered_json j = {{"time", time}, {"event", std::string(event)}};
    for (auto& [k, v] : more.items()) j[k] = v;
    return dump(j) + "\n";
}

std::optional<std::string> base64_decode(std::string_view text) {
    namespace b64 = boost::beast::detail::base64;
    // Beast's decoder stops at the padding and says how far it read: all but the padding, or
    // the text is not base64.
    while (!text.empty() && text.back() == '=') text.remove_suffix(1);
    std::string out(b64::decoded_size(text.size()) + 3, '\0');
    const auto [written, read] = b64::decode(out.data(), text.data(), text.size());
    if (read != text.size()) return std::nullopt;
    out.resize(written);
    return out;
}

} // namespace

std::string turn_log_dir(const std::string& state_dir) {
    return (fs::path(state_dir) / "logs").string();
}

std::string turn_log_path(const std::string& state_dir, std::string_view turn_id) {
    return (fs::path(turn_log_dir(state_dir)) / (std::string(turn_id) + ".log")).string();
}

std::unique_ptr<TurnOutputLog> TurnOutputLog::open(const std::string& state_dir,
                                                   const std::string& turn_id,
                                                   std::uint64_t max_bytes,
                                                   std::uint64_t min_free_bytes,
                                                   const time::Clock& clock) {
    const std::string dir = turn_log_dir(state_dir), path = turn_log_path(state_dir, turn_id);
    std::error_code ec;
    fs::create_directories(dir, ec);
    // Output may quote what the box read from the workspace: only the state directory's owner
    // reads it, as the journal.
    if (ec || ::chmod(dir.c_str(), 0700) != 0) {
        log::warn("turn",
                  "turn {}: keeping its output in '{}' failed: {}; `radiald logs` will not "
                  "show it",
                  turn_id, dir, ec ? ec.message() : std::strerror(errno));
        return nullptr;
    }
    const int fd = ::open(path.c_str(),
                          O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        log::warn("turn",
                  "turn {}: keeping its output in '{}' failed: {}; `radiald logs` will not "
                  "show it",
                  turn_id, path, std::strerror(errno));
        return nullptr;
    }
    // Held while this turn writes it (turn_log_being_written): `logs -f` tells a turn whose
    // radiald was killed by it. Taken again while a follower's probe (an exclusive lock, held
    // for an instant) has it: a log written without it looks abandoned to every later follower.
    for (int tries = 0; ::flock(fd, LOCK_SH | LOCK_NB) != 0 && tries < 1000; ++tries)
        if (errno != EINTR) ::usleep(1000);
    std::unique_ptr<TurnOutputLog> out(
        new TurnOutputLog(fd, path, turn_id, state_dir, max_bytes, min_free_bytes / 2, clock));
    if (max_bytes == 0) {
        std::lock_guard lock(out->mutex_);
        out->append(event_record(out->now_text(), "off",
                                 {{"reason", "run.turnLogMaxBytes is 0: no output is kept"}}));
        out->failed_ = true; // nothing more, no end record
        return nullptr;
    }
    return out;
}

TurnOutputLog::TurnOutputLog(int fd, std::string path, std::string turn_id, std::string state_dir,
                             std::uint64_t max_bytes, std::uint64_t floor_bytes,
                             const time::Clock& clock)
    : fd_(fd),
      path_(std::move(path)),
      turn_id_(std::move(turn_id)),
      state_dir_(std::move(state_dir)),
      max_bytes_(max_bytes),
      floor_bytes_(floor_bytes),
      clock_(clock) {}

std::optional<bool> turn_log_being_written(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return std::nullopt;
    const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    ::close(fd); // its lock, if taken, goes with it
    return !free;
}

std::string TurnOutputLog::now_text() const { return format_timestamp(clock_.wall()); }

TurnOutputLog::~TurnOutputLog() {
    std::lock_guard lock(mutex_);
    if (!failed_)
        append(event_record(now_text(), "end", {{"keptBytes", kept_}, {"droppedBytes", dropped_}}));
    ::close(fd_);
}

std::uint64_t TurnOutputLog::kept_bytes() const {
    std::lock_guard lock(mutex_);
    return kept_;
}

std::uint64_t TurnOutputLog::dropped_bytes() const {
    std::lock_guard lock(mutex_);
    return dropped_;
}

bool TurnOutputLog::append(const std::string& records) noexcept {
    std::size_t done = 0;
    while (done < records.size()) {
        const ssize_t n = ::write(fd_, records.data() + done, records.size() - done);
        if (n > 0) {
            done += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        const int why = n < 0 ? errno : ENOSPC; // write(2) returning 0 for a regular file: no room
        // A reader must not find half a record followed by nothing (or by the next one). Should
        // the cut fail too, the reader still skips the broken line (parse_log_line refuses it).
        const bool cut = ::ftruncate(fd_, static_cast<off_t>(size_)) == 0;
        failed_ = true;
        log::warn("turn",
                  "turn {}: writing its output log '{}' failed: {}; the log stops here{} (the "
                  "turn goes on, its terminal record keeps the output's tail)",
                  turn_id_, path_, std::strerror(why), cut ? "" : ", its last line incomplete");
        return false;
    }
    size_ += records.size();
    return true;
}

bool TurnOutputLog::below_floor(std::uint64_t more) noexcept {
    if (floor_bytes_ == 0) return false;
    since_space_check_ += more;
    if (since_space_check_ < kSpaceCheckBytes && size_ > 0) return false;
    since_space_check_ = 0;
    struct statvfs st {};
    if (::statvfs(state_dir_.c_str(), &st) != 0) return false;
    const std::uint64_t free_bytes = static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
    return free_bytes < floor_bytes_ + kSpaceCheckBytes;
}

void TurnOutputLog::write(std::uint32_t stream, std::string_view bytes) noexcept {
    if (bytes.empty()) return;
    std::lock_guard lock(mutex_);
    try {
        if (failed_ || truncated_) {
            dropped_ += bytes.size();
            return;
        }
        const std::string time = now_text();
        std::string reason;
        std::string_view keep = bytes;
        if (below_floor(bytes.size())) {
            keep = {};
            reason = fmt::format(
                "the state file system is near half of run.minFreeBytes ({}), kept for the "
                "outcomes of running turns; the rest of the output is not kept here",
                config::size_text(floor_bytes_ * 2));
        } else if (bytes.size() > max_bytes_ - kept_) {
            // The head is what is kept: the causal first lines. Cut on a character boundary.
            keep = text::utf8_prefix(bytes, max_bytes_ - kept_);
            reason = fmt::format(
                "run.turnLogMaxBytes ({}) reached; the rest of the output is not kept here",
                config::size_text(max_bytes_));
        }
        // One record per chunk, not per line: a box printing short lines would otherwise pay
        // several times its output in framing, and the turn the time to write it. The reader
        // splits.
        std::string records;
        if (!keep.empty()) add_output_record(records, time, stream == RADIAL_STREAM_STDERR, keep);
        if (!reason.empty()) records += event_record(time, "truncated", {{"reason", reason}});
        if (!append(records)) {
            dropped_ += bytes.size();
            return;
        }
        kept_ += keep.size();
        dropped_ += bytes.size() - keep.size();
        truncated_ = !reason.empty();
    } catch (const std::exception& e) {
        // std::bad_alloc building a record: the turn goes on without its log.
        failed_ = true;
        log::warn("turn", "turn {}: writing its output log failed: {}", turn_id_, e.what());
    }
}

std::optional<std::int64_t> parse_rfc3339_ms(std::string_view s) {
    auto digits = [&](std::size_t at, std::size_t n) -> std::optional<int> {
        if (at + n > s.size()) return std::nullopt;
        int v = 0;
        for (std::size_t i = at; i < at + n; ++i) {
            if (s[i] < '0' || s[i] > '9') return std::nullopt;
            v = v * 10 + (s[i] - '0');
        }
        return v;
    };
    if (s.size() < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
        s[13] != ':' || s[16] != ':')
        return std::nullopt;
    const auto y = digits(0, 4), mo = digits(5, 2), d = digits(8, 2), h = digits(11, 2),
               mi = digits(14, 2), sec = digits(17, 2);
    if (!y || !mo || !d || !h || !mi || !sec || *mo < 1 || *mo > 12 || *d < 1 || *d > 31 ||
        *h > 23 || *mi > 59 || *sec > 60)
        return std::nullopt;
    std::size_t i = 19;
    std::int64_t ms = 0;
    if (i < s.size() && s[i] == '.') {
        std::size_t n = 0;
        for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++n)
            if (n < 3) ms = ms * 10 + (s[i] - '0');
        if (n == 0) return std::nullopt;
        for (; n < 3; ++n) ms *= 10;
    }
    std::int64_t offset_min = 0;
    if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) {
        ++i;
    } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
        const auto oh = digits(i + 1, 2), om = digits(i + 4, 2);
        if (!oh || !om || i + 3 >= s.size() || s[i + 3] != ':' || *oh > 23 || *om > 59)
            return std::nullopt;
        offset_min = (s[i] == '-' ? -1 : 1) * (*oh * 60 + *om);
        i += 6;
    } else {
        return std::nullopt;
    }
    if (i != s.size()) return std::nullopt;
    std::tm tm{};
    tm.tm_year = *y - 1900;
    tm.tm_mon = *mo - 1;
    tm.tm_mday = *d;
    tm.tm_hour = *h;
    tm.tm_min = *mi;
    tm.tm_sec = *sec;
    const std::time_t secs = ::timegm(&tm);
    return (static_cast<std::int64_t>(secs) - offset_min * 60) * 1000 + ms;
}

std::optional<LogEntry> parse_log_line(std::string_view line) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("time") || !j["time"].is_string()) return std::nullopt;
    LogEntry e;
    e.time = j["time"].get<std::string>();
    const auto ms = parse_rfc3339_ms(e.time);
    if (!ms) return std::nullopt;
    e.time_ms = *ms;
    auto text = [&](const char* key) {
        return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
    };
    if (j.contains("stream")) {
        const std::string stream = text("stream");
        if ((stream != "stdout" && stream != "stderr") || !j.contains("log")) return std::nullopt;
        e.is_stderr = stream == "stderr";
        if (j.contains("base64")) {
            auto bytes = base64_decode(text("base64"));
            if (!bytes) return std::nullopt;
            e.bytes = std::move(*bytes);
        } else {
            e.bytes = text("log");
        }
        return e;
    }
    const std::string event = text("event");
    e.reason = text("reason");
    if (event == "truncated") {
        e.kind = LogEntry::Kind::truncated;
    } else if (event == "off") {
        e.kind = LogEntry::Kind::off;
    } else if (event == "end") {
        e.kind = LogEntry::Kind::end;
        if (j.contains("droppedBytes") && j["droppedBytes"].is_number_unsigned())
            e.dropped_bytes = j["droppedBytes"].get<std::uint64_t>();
    } else {
        return std::nullopt;
    }
    return e;
}

TurnLogReader::TurnLogReader(std::string path) : path_(std::move(path)) {}

TurnLogReader::~TurnLogReader() {
    if (fd_ >= 0) ::close(fd_);
}

bool TurnLogReader::read_new(std::vector<LogEntry>& out, std::size_t max_bytes) {
    caught_up_ = false;
    if (fd_ < 0) {
        fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd_ < 0) {
            if (errno == ENOENT) return false;
            throw std::system_error(errno, std::generic_category(),
                                    fmt::format("opening '{}'", path_));
        }
    }
    char buf[64 * 1024];
    for (std::size_t read_bytes = 0; read_bytes < max_bytes;) {
        const ssize_t n = ::read(fd_, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            throw std::system_error(errno, std::generic_category(),
                                    fmt::format("reading '{}'", path_));
        if (n == 0) {
            // Cut short under the reader (logrotate's copytruncate, a `truncate`): the writer
            // appends at the new end (O_APPEND), which a reader past it would never reach, and
            // `logs -f` ended at the turn's end without a word of what it missed.
            struct stat st {};
            const off_t at = ::lseek(fd_, 0, SEEK_CUR);
            if (at > 0 && ::fstat(fd_, &st) == 0 && st.st_size < at) {
                ::lseek(fd_, 0, SEEK_SET);
                pending_.clear();
                LogEntry cut;
                cut.kind = LogEntry::Kind::truncated;
                cut.time_ms = std::numeric_limits<std::int64_t>::max(); // past any --since
                cut.reason = fmt::format(
                    "its log '{}' was cut from {} to {} byte(s) by something other than radiald "
                    "(a log rotation's copytruncate?); what it held before is gone, what follows "
                    "was written since",
                    path_, at, st.st_size);
                out.push_back(std::move(cut));
                continue;
            }
            caught_up_ = true;
            break;
        }
        read_bytes += static_cast<std::size_t>(n);
        pending_.append(buf, static_cast<std::size_t>(n));
        std::size_t start = 0;
        for (std::size_t nl; (nl = pending_.find('\n', start)) != std::string::npos;
             start = nl + 1) {
            auto e = parse_log_line(std::string_view(pending_).substr(start, nl - start));
            if (!e) continue;
            if (e->kind != LogEntry::Kind::output) {
                out.push_back(std::move(*e));
                continue;
            }
            // A record is a chunk of output: one entry per line of it, each with its time.
            const std::string bytes = std::move(e->bytes);
            for (std::size_t pos = 0; pos < bytes.size();) {
                const auto eol = bytes.find('\n', pos);
                const std::size_t end = eol == std::string::npos ? bytes.size() : eol + 1;
                LogEntry line = *e;
                line.bytes = bytes.substr(pos, end - pos);
                out.push_back(std::move(line));
                pos = end;
            }
        }
        pending_.erase(0, start);
    }
    return true;
}

std::uint64_t prune_turn_logs(const std::string& state_dir,
                              const std::vector<std::string>& pruned_turns,
                              std::uint64_t max_total_bytes,
                              const std::function<bool(const std::string& turn_id)>& running) {
    std::uint64_t removed = 0;
    std::error_code ec;
    for (const auto& id : pruned_turns)
        if (internal::is_turn_id(id) && fs::remove(turn_log_path(state_dir, id), ec)) ++removed;
    if (max_total_bytes == 0) return removed;
    struct File {
        std::string turn_id, path;
        std::uint64_t size;
        fs::file_time_type mtime;
    };
    std::vector<File> files;
    std::uint64_t total = 0;
    const std::string dir = turn_log_dir(state_dir);
    // Listed before `running` is asked: a turn that starts after the listing is not in it.
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const auto& p = it->path();
        if (p.extension() != ".log" || !internal::is_turn_id(p.stem().string())) continue;
        std::error_code e1, e2;
        const auto size = it->file_size(e1);
        const auto mtime = it->last_write_time(e2);
        if (e1 || e2 || !it->is_regular_file(e1)) continue;
        files.push_back({p.stem().string(), p.string(), size, mtime});
        total += size;
    }
    if (ec && ec != std::errc::no_such_file_or_directory) {
        log::warn("turn", "listing the turn logs in '{}' failed: {}", dir, ec.message());
        return removed;
    }
    if (total <= max_total_bytes) return removed;
    std::sort(files.begin(), files.end(),
              [](const File& a, const File& b) { return a.mtime < b.mtime; });
    for (const auto& f : files) {
        if (total <= max_total_bytes) break;
        if (running && running(f.turn_id)) continue;
        if (!fs::remove(f.path, ec) && ec) {
            log::warn("turn", "removing the turn log '{}' failed: {}", f.path, ec.message());
            break;
        }
        total -= f.size;
        ++removed;
    }
    return removed;
}

} // namespace radial::turn
