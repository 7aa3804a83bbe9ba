// host/redaction/growing_redactor.h — a turn's compiled secrets when the set may grow while the
// turn runs (docs/design.md §8.7: the Codex tokens a harness refreshes in its box are secrets of
// the turn from the moment radiald sees them).
//
// Readers take the current Redactor (a cheap shared copy) for each use, so a secret learned
// mid-turn masks every later line, record and receipt; an output stream already running rebases
// onto the new one (StreamRedactor::rebase) without losing the bytes it holds back.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "redaction/secret_set.h"
#include "redaction/stream_redactor.h"

namespace radial::redaction {

class GrowingRedactor {
public:
    // Compiles `secrets` (as Redactor does). Throws std::bad_alloc only.
    explicit GrowingRedactor(SecretSet secrets);

    // The redactor over every secret added so far. [thread-safe]
    Redactor current() const;

    // A copy of the secrets added so far, in order. [thread-safe]
    SecretSet secrets() const;

    // How many times the set grew (0 at first): a stream compares it to rebase when it changed.
    // [thread-safe]
    std::uint64_t generation() const;

    // Adds each of `more` whose value the set does not hold yet, validated as SecretSet::add does;
    // one it refuses is left out, its name (never its value) appended to `refused` when given.
    // Compiles once for all of them. True when the set grew. [thread-safe]
    bool grow(const std::vector<Secret>& more, std::vector<std::string>* refused = nullptr);

private:
    mutable std::mutex mutex_;
    SecretSet secrets_;
    Redactor redactor_;
    std::uint64_t generation_ = 0;
};

} // namespace radial::redaction
