#include "redaction/stream_redactor.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "redaction/secret_patterns.h"

// The search is a Wu–Manber multi-pattern scan (Wu & Manber, "A fast algorithm for multi-pattern
// searching", 1994), adapted to leftmost-longest matching and to streaming.
//
// Let m be the shortest pattern length and Q the q-gram size (3, or m if m < 3). A window is m
// bytes; for the q-gram ending the window, `shift_` says how far the window may move right
// without skipping a place where some pattern's first m bytes could end. On ordinary text almost
// every q-gram is absent from all patterns, so the scan moves m - Q + 1 bytes per table lookup:
// the no-match path reads a fraction of the bytes and runs faster than memory. A shift of 0
// means some pattern's m-prefix ends with this q-gram; only then are the patterns of that
// q-gram's bucket compared in full (longest first), at the window's start.
//
// Rationale for Wu–Manber over Aho–Corasick: AC must read every byte through its automaton, one
// dependent table load per byte from tables that outgrow the L1 cache at hundreds of patterns;
// WM looks at one q-gram per window and skips the rest, and four windows' lookups are issued
// together so their latencies overlap (see scan_q). Its weak spot, a short shortest pattern, is
// bounded by the 6-byte minimum; docs/redaction.md has the measured figures.
//
// Streaming: a position is decided once its bytes rule every pattern in or out; the first
// undecided position and everything after it is held. Decisions depend only on the bytes at and
// after the position, so the streamed output equals the whole-buffer output.

namespace radial::redaction {
namespace detail {

class Matcher {
public:
    explicit Matcher(const SecretSet& secrets);

    // Decides positions [pos, limit) of d[0, n), appending their output to `out`. Returns the
    // first undecided position (< limit: it and everything after it must be held), or the
    // position after the last decided byte (>= limit; > limit when a match crossed `limit`).
    // With at_end, bytes after n do not exist, so nothing is undecided.
    std::size_t scan(const unsigned char* d, std::size_t n, std::size_t pos, std::size_t limit,
                     bool at_end, std::string& out) const;

    std::size_t longest() const noexcept { return longest_; }
    std::size_t count() const noexcept { return patterns_.size(); }

private:
    struct Entry {
        std::string bytes;
        std::uint32_t secret;
    };
    enum class Verdict { none, match, undecided };
    struct Found {
        Verdict verdict;
        std::uint32_t entry;
    };

    template <unsigned Q>
    static std::uint32_t qgram_hash(const unsigned char* last) noexcept;

    template <unsigned Q>
    std::size_t scan_q(const unsigned char* d, std::size_t n, std::size_t pos, std::size_t limit,
                       bool at_end, std::string& out) const;

    Found verify(const unsigned char* d, std::size_t n, std::size_t p, bool at_end,
                 std::uint32_t hash) const;
    bool is_pattern_prefix(const unsigned char* d, std::size_t len) const;

    // 2^18 one-byte shifts (256 KiB, shared by every stream of a Redactor). Rationale: at 256
    // secrets there are ~20k (pattern, q-gram) entries; in 2^16 slots a quarter of all text
    // q-grams would hash onto one and stop the skip, in 2^18 under a tenth do (measured: 1.7
    // vs 4.1 GB/s); the bigger table costs nothing measurable at 16 secrets.
    static constexpr unsigned kTableBits = 18;
    static constexpr std::size_t kTableSize = std::size_t{1} << kTableBits;

    std::vector<std::string> markers_;                            // by secret index
    std::vector<Entry> patterns_;                                 // sorted by bytes
    std::vector<std::pair<std::uint32_t, std::uint32_t>> bucket_; // (q-gram hash, entry)
    std::vector<std::uint8_t> shift_;                             // kTableSize entries
    std::size_t min_len_ = 0;                                     // m
    std::size_t max_shift_ = 1;                                   // the table's default shift
    std::size_t longest_ = 0;
    unsigned q_ = 0;
};

template <unsigned Q>
std::uint32_t Matcher::qgram_hash(const unsigned char* last) noexcept {
    if constexpr (Q == 1) {
        return last[0];
    } else if constexpr (Q == 2) {
        return std::uint32_t(last[-1]) | (std::uint32_t(last[0]) << 8);
    } else {
        const std::uint32_t v = std::uint32_t(last[-2]) | (std::uint32_t(last[-1]) << 8) |
                                (std::uint32_t(last[0]) << 16);
        return (v * 0x9E3779B1u) >> (32 - kTableBits); // Fibonacci hashing, 24 bits to 18
    }
}

Matcher::Matcher(const SecretSet& secrets) {
    for (const auto& s : secrets.secrets()) markers_.push_back(marker_for(s.name));
    for (auto& p : derive_patterns(secrets))
        patterns_.push_back(Entry{std::move(p.bytes), static_cast<std::uint32_t>(p.secret)});
    if (patterns_.empty()) return;
    std::sort(patterns_.begin(), patterns_.end(),
              [](const Entry& a, const Entry& b) { return a.bytes < b.bytes; });

    min_len_ = patterns_.front().bytes.size();
    for (const auto& e : patterns_) {
        min_len_ = std::min(min_len_, e.bytes.size());
        longest_ = std::max(longest_, e.bytes.size());
    }
    q_ = static_cast<unsigned>(std::min<std::size_t>(min_len_, 3));

    const std::size_t m = min_len_;
    const auto hash_at = [this](const unsigned char* last) {
        switch (q_) {
            case 1: return qgram_hash<1>(last);
            case 2: return qgram_hash<2>(last);
            default: return qgram_hash<3>(last);
        }
    };
    // A smaller shift is always safe, so capping at 255 only costs speed for m > 257.
    const std::size_t max_shift = std::min<std::size_t>(m - q_ + 1, 255);
    shift_.assign(kTableSize, static_cast<std::uint8_t>(max_shift));
    max_shift_ = max_shift;
    for (std::uint32_t idx = 0; idx < patterns_.size(); ++idx) {
        const auto* b = reinterpret_cast<const unsigned char*>(patterns_[idx].bytes.data());
        for (std::size_t j = q_ - 1; j < m; ++j) {
            auto& s = shift_[hash_at(b + j)];
            s = static_cast<std::uint8_t>(std::min<std::size_t>(s, m - 1 - j));
        }
        bucket_.emplace_back(hash_at(b + m - 1), idx);
    }
    // Within a bucket, longest pattern first: verify() can stop at the first full match.
    std::sort(bucket_.begin(), bucket_.end(), [this](const auto& a, const auto& b) {
        if (a.first != b.first) return a.first < b.first;
        return patterns_[a.second].bytes.size() > patterns_[b.second].bytes.size();
    });
}

Matcher::Found Matcher::verify(const unsigned char* d, std::size_t n, std::size_t p, bool at_end,
                               std::uint32_t hash) const {
    const std::size_t avail = n - p;
    auto it = std::lower_bound(bucket_.begin(), bucket_.end(), hash,
                               [](const auto& e, std::uint32_t h) { return e.first < h; });
    for (; it != bucket_.end() && it->first == hash; ++it) {
        const std::string& pat = patterns_[it->second].bytes;
        if (pat.size() > avail) {
            // Longer than what is known: if what is known agrees, the outcome at p depends on
            // bytes not yet seen, and this pattern is longer than any full match here.
            if (!at_end && std::memcmp(d + p, pat.data(), avail) == 0)
                return {Verdict::undecided, 0};
        } else if (std::memcmp(d + p, pat.data(), pat.size()) == 0) {
            return {Verdict::match, it->second};
        }
    }
    return {Verdict::none, 0};
}

bool Matcher::is_pattern_prefix(const unsigned char* d, std::size_t len) const {
    const std::string_view s(reinterpret_cast<const char*>(d), len);
    // Patterns sharing a prefix are contiguous in sorted order, starting at lower_bound.
    auto it = std::lower_bound(patterns_.begin(), patterns_.end(), s,
                               [](const Entry& e, std::string_view v) { return e.bytes < v; });
    return it != patterns_.end() && std::string_view(it->bytes).starts_with(s);
}

template <unsigned Q>
std::size_t Matcher::scan_q(const unsigned char* d, std::size_t n, std::size_t pos,
                            std::size_t limit, bool at_end, std::string& out) const {
    const std::uint8_t* shift = shift_.data();
    const std::size_t m = min_len_;
    std::size_t lit = pos;       // start of the bytes decided as plain but not yet appended
    std::size_t i = pos + m - 1; // last byte of the window starting at i + 1 - m
    // Windows start below `limit` and end inside the data.
    const std::size_t end = std::min(n, limit + m - 1);
    const std::size_t full = max_shift_;
    while (i < end) {
        // The hot path. One window's lookup is a chain of dependent loads (bytes, then table,
        // then the next position), ~15 cycles; on ordinary text nearly every shift is the
        // maximum, so look up the next four windows as if it were — their loads run in
        // parallel — and take all four at once when it was.
        while (i + 3 * full < end && shift[qgram_hash<Q>(d + i)] == full &&
               shift[qgram_hash<Q>(d + i + full)] == full &&
               shift[qgram_hash<Q>(d + i + 2 * full)] == full &&
               shift[qgram_hash<Q>(d + i + 3 * full)] == full)
            i += 4 * full;
        if (i >= end) break;
        const std::uint32_t h = qgram_hash<Q>(d + i);
        const std::uint8_t s = shift[h];
        if (s != 0) {
            i += s;
            continue;
        }
        const std::size_t p = i + 1 - m;
        const Found f = verify(d, n, p, at_end, h);
        if (f.verdict == Verdict::none) {
            ++i;
            continue;
        }
        out.append(reinterpret_cast<const char*>(d + lit), p - lit);
        if (f.verdict == Verdict::undecided) return p;
        const Entry& e = patterns_[f.entry];
        out += markers_[e.secret];
        lit = p + e.bytes.size();
        i = lit + m - 1;
    }
    // Starts whose window runs past the data: undecided exactly when the known bytes are a
    // prefix of some pattern (they are shorter than m, so none can be a whole pattern).
    if (!at_end) {
        std::size_t q = std::max(lit, n + 1 > m ? n + 1 - m : 0);
        for (; q < limit; ++q) {
            if (is_pattern_prefix(d + q, n - q)) {
                out.append(reinterpret_cast<const char*>(d + lit), q - lit);
                return q;
            }
        }
    }
    if (lit >= limit) return lit;
    out.append(reinterpret_cast<const char*>(d + lit), limit - lit);
    return limit;
}

std::size_t Matcher::scan(const unsigned char* d, std::size_t n, std::size_t pos, std::size_t limit,
                          bool at_end, std::string& out) const {
    if (patterns_.empty()) {
        out.append(reinterpret_cast<const char*>(d + pos), limit - pos);
        return limit;
    }
    switch (q_) {
        case 1: return scan_q<1>(d, n, pos, limit, at_end, out);
        case 2: return scan_q<2>(d, n, pos, limit, at_end, out);
        default: return scan_q<3>(d, n, pos, limit, at_end, out);
    }
}

} // namespace detail

namespace {
const unsigned char* bytes_of(std::string_view s) noexcept {
    return reinterpret_cast<const unsigned char*>(s.data());
}
} // namespace

Redactor::Redactor(const SecretSet& secrets)
    : matcher_(std::make_shared<const detail::Matcher>(secrets)),
      secrets_(std::make_shared<const SecretSet>(secrets)) {}

std::string Redactor::redact(std::string_view input) const {
    std::string out;
    redact(input, out);
    return out;
}

void Redactor::redact(std::string_view input, std::string& out) const {
    out.reserve(out.size() + input.size());
    matcher_->scan(bytes_of(input), input.size(), 0, input.size(), /*at_end=*/true, out);
}

StreamRedactor Redactor::stream() const { return StreamRedactor(*this); }

std::size_t Redactor::longest_pattern() const noexcept { return matcher_->longest(); }

std::size_t Redactor::pattern_count() const noexcept { return matcher_->count(); }

StreamRedactor::StreamRedactor(const SecretSet& secrets) : StreamRedactor(Redactor(secrets)) {}

StreamRedactor::StreamRedactor(const Redactor& redactor) : matcher_(redactor.matcher_) {}

std::size_t StreamRedactor::max_buffered_bytes() const noexcept {
    const std::size_t l = matcher_->longest();
    return l == 0 ? 0 : l - 1;
}

void StreamRedactor::feed(std::string_view chunk, std::string& out) {
    const detail::Matcher& mt = *matcher_;
    if (held_.empty()) {
        const std::size_t q = mt.scan(bytes_of(chunk), chunk.size(), 0, chunk.size(), false, out);
        held_.assign(chunk.substr(q));
        return;
    }
    const std::size_t l = mt.longest();
    if (chunk.size() <= l) {
        // Small chunk: the held bytes and the chunk are all there is; decide what can be.
        held_.append(chunk);
        const std::size_t q = mt.scan(bytes_of(held_), held_.size(), 0, held_.size(), false, out);
        held_.erase(0, q);
        return;
    }
    // Large chunk: decide the held positions on a junction of the held bytes and the chunk's
    // first `l` bytes — enough to settle any pattern starting in the held part — then scan the
    // chunk in place rather than copying it behind the held bytes.
    const std::size_t h = held_.size();
    held_.append(chunk.substr(0, l));
    const std::size_t q = mt.scan(bytes_of(held_), held_.size(), 0, h, false, out);
    // q >= h: every held position had all the bytes it could need.
    held_.clear();
    const std::size_t r = mt.scan(bytes_of(chunk), chunk.size(), q - h, chunk.size(), false, out);
    held_.assign(chunk.substr(r));
}

void StreamRedactor::flush(std::string& out) {
    matcher_->scan(bytes_of(held_), held_.size(), 0, held_.size(), /*at_end=*/true, out);
    held_.clear();
}

} // namespace radial::redaction
