// host/redaction/stream_redactor.h — masks a turn's secrets in its output, however the output is
// chunked (docs/design.md §10).
//
// Every byte of every occurrence of every pattern of every secret (the value and its encodings,
// see secret_patterns.h) is masked: occurrences that overlap make one region, replaced by one
// "[REDACTED:<NAME>]" naming the secret of the longest pattern at the region's first byte.
// Scanning left to right, the first position where any pattern starts opens a region, which
// every occurrence starting inside it extends; so an occurrence of one secret that begins before
// another's and ends inside it cannot leave the rest of the other in clear. Occurrences that only
// touch (one ends where the next begins) get a marker each. A streamed result is byte-for-byte the
// result of redacting the whole output at once, whatever the chunk boundaries.
//
// Two types:
//  - Redactor: the compiled patterns. Immutable, cheap to copy (shared), [thread-safe]. Used
//    directly for whole buffers (log lines, error messages).
//  - StreamRedactor: one per output stream (stdout, stderr). Holds back the few bytes that may
//    still turn out to start a secret. Not thread-safe; never share one between streams, or
//    interleaving would join bytes that were never adjacent.
//
// Hold-back rule: after feed(), the bytes held are exactly the suffix that begins at the first
// position which could still start a match — so at most (longest pattern - 1) bytes, and none
// at all when the output's tail cannot begin any pattern (a prompt is shown, not delayed).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "redaction/secret_set.h"

namespace radial::redaction {

namespace detail {
class Matcher;
} // namespace detail

class StreamRedactor;

// The compiled form of a SecretSet: its patterns, their markers and the search tables. Copies
// share the same immutable tables.
class Redactor {
public:
    // Compiles every pattern of `secrets` (derive_patterns). The redactor keeps its own copies;
    // `secrets` may be destroyed afterwards. An empty set gives a redactor that copies input
    // through. Cost: O(total pattern bytes) plus a 256 KiB table. Throws std::bad_alloc only.
    explicit Redactor(const SecretSet& secrets);

    // Whole-buffer redaction of `input` (bytes, any content), e.g. one log line or an error
    // message. Equivalent to feeding it to a fresh StreamRedactor and flushing. [thread-safe]
    std::string redact(std::string_view input) const;

    // As above, appending to `out` instead of returning a new string. [thread-safe]
    void redact(std::string_view input, std::string& out) const;

    // A fresh stream state sharing this redactor's compiled patterns. [thread-safe]
    StreamRedactor stream() const;

    // Length in bytes of the longest pattern (0 for an empty set). A stream holds back at most
    // one byte less than this.
    std::size_t longest_pattern() const noexcept;

    // Number of distinct patterns compiled (values plus their encodings).
    std::size_t pattern_count() const noexcept;

    // The set this redactor was compiled from (its own copy). [thread-safe]
    const SecretSet& secrets() const noexcept { return *secrets_; }

private:
    friend class StreamRedactor;
    std::shared_ptr<const detail::Matcher> matcher_;
    std::shared_ptr<const SecretSet> secrets_;
};

// Redaction state of one output stream. Not thread-safe: one object per stream, used by one
// thread at a time. Movable, not copyable (a copy would duplicate held bytes); a moved-from
// stream may only be assigned to or destroyed.
class StreamRedactor {
public:
    // A stream over `secrets` (compiles them; prefer Redactor::stream() to share one
    // compilation between stdout and stderr). Throws std::bad_alloc only.
    explicit StreamRedactor(const SecretSet& secrets);

    // A stream over an already compiled redactor.
    explicit StreamRedactor(const Redactor& redactor);

    StreamRedactor(StreamRedactor&&) noexcept = default;
    StreamRedactor& operator=(StreamRedactor&&) noexcept = default;
    StreamRedactor(const StreamRedactor&) = delete;
    StreamRedactor& operator=(const StreamRedactor&) = delete;
    ~StreamRedactor() = default;

    // Consumes the next `chunk` of the stream (bytes, any size including 0, any content) and
    // appends to `out` every byte that can no longer be part of a secret, with secrets replaced
    // by markers. Bytes that may still start a secret are held until a later feed() or flush()
    // decides them; see the hold-back rule above. Throws std::bad_alloc only; on a throw the
    // stream must be discarded.
    void feed(std::string_view chunk, std::string& out);

    // Ends the stream: appends the held bytes to `out` (redacting any whole secret among them;
    // a secret's prefix left at the end is not a secret and is emitted as is). Afterwards the
    // object is a fresh stream again.
    void flush(std::string& out);

    // Goes on over `redactor` (one whose secrets include this stream's, grown since: see
    // growing_redactor.h): the bytes held back (and a masked region still open) are kept and
    // decided by it, with the rest of the stream. Bytes already emitted stay as they were. [not
    // thread-safe, as feed()]
    void rebase(const Redactor& redactor) { matcher_ = redactor.matcher_; }

    // Bytes currently held back; always <= max_buffered_bytes(). [docs/design.md §10: bounded
    // memory]
    std::size_t buffered_bytes() const noexcept { return held_.size(); }

    // The bound on buffered_bytes(): longest pattern - 1 (0 for an empty set).
    std::size_t max_buffered_bytes() const noexcept;

private:
    std::shared_ptr<const detail::Matcher> matcher_;
    std::string held_; // the undecided tail of the stream, < longest pattern bytes
    // The end, counted from held_'s first byte, of a masked region whose marker is out (a match
    // whose end may still grow by an occurrence overlapping it), or 0.
    std::size_t open_ = 0;
};

} // namespace radial::redaction
