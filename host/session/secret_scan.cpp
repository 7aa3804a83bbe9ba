#include "session/secret_scan.h"

namespace radial::session {
namespace {

// The name in the marker that begins at or before `at` in `out` ("[REDACTED:<name>]").
std::string marker_name(const std::string& out, std::size_t at) {
    static constexpr std::string_view kOpen = "[REDACTED:";
    auto start = out.rfind(kOpen, at);
    if (start == std::string::npos) start = out.find(kOpen, at);
    if (start == std::string::npos) return "?";
    start += kOpen.size();
    const auto end = out.find(']', start);
    return out.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

} // namespace

SecretScan::SecretScan(const redaction::Redactor& redactor,
                       std::vector<FingerprintMatcher*> earlier)
    : redactor_(redactor), earlier_(std::move(earlier)), stream_(redactor.stream()) {
    std::erase_if(earlier_, [](const FingerprintMatcher* m) { return m == nullptr || m->empty(); });
}

bool SecretScan::entry(std::string_view path) {
    end_entry();
    if (found_) return false;
    ++entries_;
    path_.assign(path);
    const std::string out = redactor_.redact(path);
    std::optional<std::string> own;
    if (out != path) own = marker_name(out, 0);
    // Another turn's value in the path as it would be shown (this turn's own masked), which the
    // redactor cannot mask: the deepest directory above the first byte of the first one found is
    // named — not the entry's parent, whose name may be the value (a directory of an earlier
    // turn) or hold part of it (a value with a '/').
    std::optional<std::pair<std::string, std::size_t>> theirs;
    for (auto* earlier : earlier_) {
        earlier->reset();
        if (auto name = earlier->feed(out)) {
            const auto start = static_cast<std::size_t>(earlier->match_start());
            if (!theirs || start < theirs->second) theirs.emplace(std::move(*name), start);
        }
        earlier->reset();
    }
    if (theirs) {
        const auto start = theirs->second;
        const auto slash = start == 0 ? std::string::npos : out.rfind('/', start - 1);
        found_ = SecretFound{
            own ? *own : theirs->first,
            (slash == std::string::npos || slash == 0 ? std::string("/") : out.substr(0, slash)) +
                " (an entry whose name holds it)"};
    } else if (own) {
        found_ = SecretFound{*own, out + " (its name)"};
    }
    return !found_;
}

bool SecretScan::data(std::string_view bytes) {
    if (found_) return false;
    bytes_ += bytes.size();
    unconfirmed_.append(bytes);
    std::string out;
    stream_.feed(bytes, out);
    check(out);
    for (auto* earlier : earlier_) {
        if (found_) break;
        if (auto name = earlier->feed(bytes)) found_ = SecretFound{*name, path_};
    }
    return !found_;
}

void SecretScan::check(const std::string& out) {
    const std::size_t n = std::min(out.size(), unconfirmed_.size());
    std::size_t i = 0;
    while (i < n && out[i] == unconfirmed_[i]) ++i;
    if (i < out.size()) {
        found_ = SecretFound{marker_name(out, i), path_};
        return;
    }
    unconfirmed_.erase(0, out.size());
}

void SecretScan::end_entry() {
    if (found_ || path_.empty()) return;
    std::string out;
    stream_.flush(out);
    check(out);
    unconfirmed_.clear();
}

const std::optional<SecretFound>& SecretScan::finish() {
    end_entry();
    path_.clear();
    return found_;
}

} // namespace radial::session
