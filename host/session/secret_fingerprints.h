// host/session/secret_fingerprints.h — what a session remembers of the secrets its turns were
// given, so that a later turn moving one into the box's file system is caught (docs/design.md
// §13.12): for every pattern of every secret (its value and the encodings the redactor knows),
// keyed fingerprints — never the value — and a matcher that finds those patterns in a stream.
//
// A fingerprint is a Rabin-Karp hash of the pattern under a base derived from the session's key
// (to find candidates in one pass) and the first 16 bytes of HMAC-SHA-256(key, pattern) (to
// confirm one). The key is the session's own, random, kept in its root-only record: without it a
// fingerprint says nothing about the value.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "redaction/secret_set.h"

namespace radial::session {

struct SecretFingerprint {
    std::string secret;       // the secret's name (public)
    std::uint32_t length = 0; // the pattern's length in bytes
    std::uint64_t rolling = 0;
    std::string mac; // 32 hex digits
    // The rolling hash of the pattern's first kHeadBytes bytes, for a pattern at least that long
    // (absent in records written before it was kept): candidates of every length found in one
    // pass over one window, whatever the number of lengths.
    std::optional<std::uint64_t> head;
    friend bool operator==(const SecretFingerprint&, const SecretFingerprint&) = default;
};

// A fresh random key: 64 hex digits. Throws std::runtime_error when the kernel gives no random
// bytes.
std::string new_fingerprint_key();

// Adds to `into` the fingerprints of every pattern of `secrets` (derive_patterns) under `key`,
// skipping those already there. Throws std::invalid_argument for a key that is not 64 hex digits.
void add_fingerprints(const redaction::SecretSet& secrets, const std::string& key,
                      std::vector<SecretFingerprint>& into);

// The first 16 bytes of HMAC-SHA-256(key, bytes), as 32 hex digits: a name for `bytes` that says
// nothing about them without the key. Throws std::invalid_argument as add_fingerprints does.
std::string keyed_mac(const std::string& key, std::string_view bytes);

nlohmann::json fingerprints_json(const std::vector<SecretFingerprint>& fps);
std::vector<SecretFingerprint> fingerprints_from_json(const nlohmann::json& j);

// The length of the window every fingerprint's head is taken over.
inline constexpr std::uint32_t kHeadBytes = 8;

// Finds any fingerprinted pattern in a stream of bytes, across chunk boundaries. Not
// thread-safe. Cost: per byte, two multiplications and a lookup for every fingerprint with a
// head, plus two per distinct length of those without one (shorter than kHeadBytes, or older).
// A candidate is confirmed by its MAC once its whole length has arrived.
class FingerprintMatcher {
public:
    FingerprintMatcher(std::vector<SecretFingerprint> fps, const std::string& key);
    // Forgets the stream so far (a new entry begins).
    void reset();
    // The name of the first secret whose pattern ends within `bytes`, or nullopt.
    std::optional<std::string> feed(std::string_view bytes);
    bool empty() const noexcept { return fps_.empty(); }

private:
    struct Length {
        std::uint32_t length;
        std::uint64_t power; // base^length mod p
        std::uint64_t hash = 0;
        std::unordered_multimap<std::uint64_t, std::size_t> by_rolling; // -> index in fps_
    };
    // A pattern whose head was seen, confirmed once the stream reaches `end` bytes.
    struct Pending {
        std::uint64_t end;
        std::size_t index; // in fps_
    };
    // Whether the window's last bytes are fps_[index]'s pattern (its MAC).
    bool confirmed(std::size_t index) const;
    std::vector<SecretFingerprint> fps_;
    std::string key_; // raw bytes
    std::uint64_t base_ = 0;
    std::vector<Length> lengths_; // of the fingerprints without a head
    std::unordered_multimap<std::uint64_t, std::size_t> by_head_; // -> index in fps_
    std::vector<std::uint64_t> head_bits_; // a filter before by_head_: bit (head mod 2^16) set
    std::uint64_t head_power_ = 0;         // base^kHeadBytes mod p
    std::uint64_t head_hash_ = 0;
    std::vector<Pending> pending_;
    std::uint32_t longest_ = 0;
    std::string window_; // the stream's last bytes (at least the longest length)
    std::uint64_t seen_ = 0;
};

} // namespace radial::session
