#include "redaction/stream_redactor.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "redaction/secret_patterns.h"

// The search is a Wu–Manber multi-pattern scan (Wu & Manber, "A fast algorithm for multi-pattern
// searching", 1994), adapted to longest-first matching, overlapping occurrences and streaming.
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
//
// Overlaps: every byte of every occurrence is masked. A match opens a region (its marker goes out
// at once) that every occurrence starting inside it extends, so an occurrence that begins before
// a secret and ends inside it cannot leave the secret's rest in clear (docs/design.md §10.3). A
// region still open where the bytes run out is carried to the next scan (`open`), and its
// positions are decided one by one like any other: the hold-back stays under the longest pattern.

namespace radial::redaction {
namespace detail {

class Matcher {
public:
    explicit Matcher(const SecretSet& secrets);

    // Decides positions [pos, limit) of d[0, n), appending their output to `out`. `open` is the
    // end (an offset into d) of a masked region whose marker is already out, or 0: its bytes are
    // swallowed and every occurrence starting inside extends it; updated on return. Returns the
    // first undecided position (< limit: it and everything after it must be held; `open` may lie
    // beyond it), or `limit` when every position below it is decided (`open` > limit: the
    // region goes on). With at_end, bytes after n do not exist, so nothing is undecided.
    std::size_t scan(const unsigned char* d, std::size_t n, std::size_t pos, std::size_t limit,
                     bool at_end, std::string& out, std::size_t& open) const;

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
                       bool at_end, std::string& out, std::size_t& open) const;
    // The first position in [from, limit) where a pattern matches (the longest there) or the
    // outcome is undecided; {none, limit} when there is none.
    struct Next {
        Verdict verdict;
        std::size_t at;
        std::uint32_t entry;
    };
    template <unsigned Q>
    Next find_next(const unsigned char* d, std::size_t n, std::size_t from, std::size_t limit,
                   bool at_end) const;
    // Whether a pattern matches at p (the longest), none does, or bytes after n decide it.
    template <unsigned Q>
    Found match_at(const unsigned char* d, std::size_t n, std::size_t p, bool at_end) const;

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
Matcher::Next Matcher::find_next(const unsigned char* d, std::size_t n, std::size_t from,
                                 std::size_t limit, bool at_end) const {
    const std::uint8_t* shift = shift_.data();
    const std::size_t m = min_len_;
    std::size_t i = from + m - 1; // last byte of the window starting at i + 1 - m
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
        if (f.verdict != Verdict::none) return {f.verdict, p, f.entry};
        ++i;
    }
    // Starts whose window runs past the data: undecided exactly when the known bytes are a
    // prefix of some pattern (they are shorter than m, so none can be a whole pattern).
    if (!at_end)
        for (std::size_t q = std::max(from, n + 1 > m ? n + 1 - m : 0); q < limit; ++q)
            if (is_pattern_prefix(d + q, n - q)) return {Verdict::undecided, q, 0};
    return {Verdict::none, limit, 0};
}

template <unsigned Q>
Matcher::Found Matcher::match_at(const unsigned char* d, std::size_t n, std::size_t p,
                                 bool at_end) const {
    const std::size_t m = min_len_;
    if (p + m - 1 >= n)
        return {!at_end && is_pattern_prefix(d + p, n - p) ? Verdict::undecided : Verdict::none, 0};
    const std::uint32_t h = qgram_hash<Q>(d + p + m - 1);
    if (shift_[h] != 0) return {Verdict::none, 0};
    return verify(d, n, p, at_end, h);
}

template <unsigned Q>
std::size_t Matcher::scan_q(const unsigned char* d, std::size_t n, std::size_t pos,
                            std::size_t limit, bool at_end, std::string& out,
                            std::size_t& open) const {
    std::size_t x = pos;
    for (;;) {
        // Inside a region whose marker is out: its bytes are swallowed, and an occurrence that
        // starts in it and ends past it extends it.
        while (open > x) {
            // An occurrence starting at or before open - longest ends inside the region: only
            // the last longest - 1 positions can extend it (a box's output dense with secrets
            // must not cost a lookup per byte).
            if (open > longest_) x = std::max(x, open - longest_ + 1);
            if (x >= open) break;
            if (x >= limit) return limit;
            const Found f = match_at<Q>(d, n, x, at_end);
            if (f.verdict == Verdict::undecided) return x;
            if (f.verdict == Verdict::match)
                open = std::max(open, x + patterns_[f.entry].bytes.size());
            ++x;
        }
        open = 0;
        const Next next = find_next<Q>(d, n, x, limit, at_end);
        out.append(reinterpret_cast<const char*>(d + x), next.at - x);
        if (next.verdict != Verdict::match) return next.at;
        const Entry& e = patterns_[next.entry];
        out += markers_[e.secret];
        open = next.at + e.bytes.size();
        x = next.at + 1;
    }
}

std::size_t Matcher::scan(const unsigned char* d, std::size_t n, std::size_t pos, std::size_t limit,
                          bool at_end, std::string& out, std::size_t& open) const {
    if (patterns_.empty()) {
        out.append(reinterpret_cast<const char*>(d + pos), limit - pos);
        open = 0;
        return limit;
    }
    switch (q_) {
        case 1: return scan_q<1>(d, n, pos, limit, at_end, out, open);
        case 2: return scan_q<2>(d, n, pos, limit, at_end, out, open);
        default: return scan_q<3>(d, n, pos, limit, at_end, out, open);
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
    std::size_t open = 0;
    matcher_->scan(bytes_of(input), input.size(), 0, input.size(), /*at_end=*/true, out, open);
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
    // After a scan that decided up to `q`, the held bytes start there, and an open region's end
    // is counted from them.
    const auto keep_open_from = [this](std::size_t q) { open_ = open_ > q ? open_ - q : 0; };
    if (held_.empty()) {
        const std::size_t q =
            mt.scan(bytes_of(chunk), chunk.size(), 0, chunk.size(), false, out, open_);
        held_.assign(chunk.substr(q));
        keep_open_from(q);
        return;
    }
    const std::size_t l = mt.longest();
    if (chunk.size() <= l) {
        // Small chunk: the held bytes and the chunk are all there is; decide what can be.
        held_.append(chunk);
        const std::size_t q =
            mt.scan(bytes_of(held_), held_.size(), 0, held_.size(), false, out, open_);
        held_.erase(0, q);
        keep_open_from(q);
        return;
    }
    // Large chunk: decide the held positions on a junction of the held bytes and the chunk's
    // first `l` bytes — enough to settle any pattern starting in the held part — then scan the
    // chunk in place rather than copying it behind the held bytes.
    const std::size_t h = held_.size();
    held_.append(chunk.substr(0, l));
    const std::size_t q = mt.scan(bytes_of(held_), held_.size(), 0, h, false, out, open_);
    // q == h: every held position had all the bytes it could need; a region still open goes on
    // into the chunk.
    held_.clear();
    keep_open_from(h);
    const std::size_t r =
        mt.scan(bytes_of(chunk), chunk.size(), q - h, chunk.size(), false, out, open_);
    held_.assign(chunk.substr(r));
    keep_open_from(r);
}

void StreamRedactor::flush(std::string& out) {
    matcher_->scan(bytes_of(held_), held_.size(), 0, held_.size(), /*at_end=*/true, out, open_);
    held_.clear();
    open_ = 0;
}

} // namespace radial::redaction
