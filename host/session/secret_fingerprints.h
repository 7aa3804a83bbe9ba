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
    // The rolling hash of the pattern's last kTailBytes bytes, for a pattern at least that long
    // (absent in records written before it was kept): candidates of every length found in one
    // pass over one window, whatever the number of lengths, each checked at once against
    // `rolling` (the whole pattern's hash, from the window's prefix hashes) before its MAC.
    std::optional<std::uint64_t> tail;
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

// The length of the window every fingerprint's tail is taken over.
inline constexpr std::uint32_t kTailBytes = 8;

// Finds any fingerprinted pattern in a stream of bytes, across chunk boundaries. Not
// thread-safe. Cost: per byte, three multiplications and a filter lookup for all fingerprints
// with a tail, plus, where the window's last bytes are a tail, one multiplication for each pattern
// ending in it (a tail may be public: "KEY-----"); two more per distinct length of those without
// one (shorter than kTailBytes, or older). An HMAC only where a pattern's whole hash matched.
class FingerprintMatcher {
public:
    FingerprintMatcher(std::vector<SecretFingerprint> fps, const std::string& key);
    // Forgets the stream so far (a new entry begins).
    void reset();
    // The name of the first secret whose pattern ends within `bytes`, or nullopt.
    std::optional<std::string> feed(std::string_view bytes);
    // Where the pattern feed() last reported begins: bytes since the last reset().
    std::uint64_t match_start() const noexcept { return match_start_; }
    bool empty() const noexcept { return fps_.empty(); }

private:
    struct Length {
        std::uint32_t length;
        std::uint64_t power; // base^length mod p
        std::uint64_t hash = 0;
        std::unordered_multimap<std::uint64_t, std::size_t> by_rolling; // -> index in fps_
    };
    // Whether the window's last bytes are fps_[index]'s pattern (its MAC).
    bool confirmed(std::size_t index) const;
    std::vector<SecretFingerprint> fps_;
    std::string key_; // raw bytes
    std::uint64_t base_ = 0;
    std::vector<Length> lengths_; // of the fingerprints without a tail
    std::unordered_multimap<std::uint64_t, std::size_t> by_tail_; // -> index in fps_
    std::vector<std::uint64_t> tail_bits_; // a filter before by_tail_: bit (tail mod 2^16) set
    std::vector<std::uint64_t> powers_;    // base^length mod p, per fingerprint
    std::uint64_t tail_power_ = 0;         // base^kTailBytes mod p
    std::uint64_t tail_hash_ = 0;
    // prefix_[i]: the hash of the stream before window_[i]; one more for the whole window.
    std::vector<std::uint64_t> prefix_;
    std::uint64_t match_start_ = 0;
    std::uint32_t longest_ = 0;
    std::string window_; // the stream's last bytes (at least the longest length)
    std::uint64_t seen_ = 0;
};

} // namespace radial::session
