#include "session/secret_fingerprints.h"

#include <fmt/format.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <algorithm>
#include <stdexcept>

#include "redaction/secret_patterns.h"

namespace radial::session {
namespace {

constexpr std::uint64_t kPrime = (std::uint64_t{1} << 61) - 1;
constexpr std::uint64_t kTailFilterBits = std::uint64_t{1} << 16;

std::uint64_t mulmod(std::uint64_t a, std::uint64_t b) {
    const unsigned __int128 x = static_cast<unsigned __int128>(a) * b;
    std::uint64_t r = static_cast<std::uint64_t>(x & kPrime) + static_cast<std::uint64_t>(x >> 61);
    return r >= kPrime ? r - kPrime : r;
}

std::uint64_t addmod(std::uint64_t a, std::uint64_t b) {
    const std::uint64_t r = a + b;
    return r >= kPrime ? r - kPrime : r;
}

std::string raw_key(const std::string& hex) {
    if (hex.size() != 64 ||
        !std::all_of(hex.begin(), hex.end(), [](char c) { return std::isxdigit(c) != 0; }))
        throw std::invalid_argument("a fingerprint key is 64 hex digits");
    std::string raw;
    for (std::size_t i = 0; i < hex.size(); i += 2)
        raw += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    return raw;
}

std::string hmac_hex(const std::string& key, std::string_view bytes, std::size_t out_bytes) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
             reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), md, &n) == nullptr)
        throw std::runtime_error("computing an HMAC: OpenSSL refused");
    std::string hex;
    for (std::size_t i = 0; i < std::min<std::size_t>(n, out_bytes); ++i)
        hex += fmt::format("{:02x}", md[i]);
    return hex;
}

// The rolling hash's base: from the key, so that the hashes mean nothing without it.
std::uint64_t base_of(const std::string& key) {
    const std::string h = hmac_hex(key, "radial rolling base", 8);
    return std::stoull(h, nullptr, 16) % (kPrime - 2) + 2;
}

std::uint64_t rolling_of(std::string_view bytes, std::uint64_t base) {
    std::uint64_t h = 0;
    for (unsigned char c : bytes) h = addmod(mulmod(h, base), c);
    return h;
}

} // namespace

std::string new_fingerprint_key() {
    unsigned char raw[32];
    for (std::size_t got = 0; got < sizeof raw;) {
        const ssize_t n = ::getrandom(raw + got, sizeof raw - got, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw std::runtime_error("getrandom failed: no random bytes for a session key");
        }
        got += static_cast<std::size_t>(n);
    }
    std::string hex;
    for (unsigned char c : raw) hex += fmt::format("{:02x}", c);
    return hex;
}

void add_fingerprints(const redaction::SecretSet& secrets, const std::string& key,
                      std::vector<SecretFingerprint>& into) {
    const std::string raw = raw_key(key);
    const std::uint64_t base = base_of(raw);
    for (const auto& p : redaction::derive_patterns(secrets)) {
        SecretFingerprint fp{secrets.secrets()[p.secret].name,
                             static_cast<std::uint32_t>(p.bytes.size()), rolling_of(p.bytes, base),
                             hmac_hex(raw, p.bytes, 16), std::nullopt};
        if (p.bytes.size() >= kTailBytes)
            fp.tail =
                rolling_of(std::string_view(p.bytes).substr(p.bytes.size() - kTailBytes), base);
        const bool known = std::any_of(into.begin(), into.end(), [&](const SecretFingerprint& f) {
            return f.length == fp.length && f.mac == fp.mac;
        });
        if (!known) into.push_back(std::move(fp));
    }
}

std::string keyed_mac(const std::string& key, std::string_view bytes) {
    return hmac_hex(raw_key(key), bytes, 16);
}

nlohmann::json fingerprints_json(const std::vector<SecretFingerprint>& fps) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& f : fps) {
        nlohmann::json one = {
            {"secret", f.secret}, {"length", f.length}, {"rolling", f.rolling}, {"mac", f.mac}};
        if (f.tail) one["tail"] = *f.tail;
        out.push_back(std::move(one));
    }
    return out;
}

std::vector<SecretFingerprint> fingerprints_from_json(const nlohmann::json& j) {
    std::vector<SecretFingerprint> out;
    for (const auto& f : j) {
        SecretFingerprint fp{f.at("secret").get<std::string>(), f.at("length").get<std::uint32_t>(),
                             f.at("rolling").get<std::uint64_t>(), f.at("mac").get<std::string>(),
                             std::nullopt};
        // A tail is of the pattern's last kTailBytes bytes: a shorter pattern has none.
        if (f.contains("tail") && fp.length >= kTailBytes)
            fp.tail = f.at("tail").get<std::uint64_t>();
        out.push_back(std::move(fp));
    }
    return out;
}

FingerprintMatcher::FingerprintMatcher(std::vector<SecretFingerprint> fps, const std::string& key)
    : fps_(std::move(fps)), key_(raw_key(key)), base_(base_of(key_)) {
    tail_power_ = 1;
    for (std::uint32_t k = 0; k < kTailBytes; ++k) tail_power_ = mulmod(tail_power_, base_);
    powers_.assign(fps_.size(), 0);
    for (std::size_t i = 0; i < fps_.size(); ++i) {
        const auto len = fps_[i].length;
        if (len == 0) continue;
        longest_ = std::max(longest_, len);
        if (fps_[i].tail) {
            powers_[i] = 1;
            for (std::uint32_t k = 0; k < len; ++k) powers_[i] = mulmod(powers_[i], base_);
            by_tail_.emplace(*fps_[i].tail, i);
            if (tail_bits_.empty()) tail_bits_.assign(kTailFilterBits / 64, 0);
            const auto bit = *fps_[i].tail % kTailFilterBits;
            tail_bits_[bit / 64] |= std::uint64_t{1} << (bit % 64);
            continue;
        }
        auto it = std::find_if(lengths_.begin(), lengths_.end(),
                               [&](const Length& l) { return l.length == len; });
        if (it == lengths_.end()) {
            std::uint64_t power = 1;
            for (std::uint32_t k = 0; k < len; ++k) power = mulmod(power, base_);
            lengths_.push_back({len, power, 0, {}});
            it = std::prev(lengths_.end());
        }
        it->by_rolling.emplace(fps_[i].rolling, i);
    }
}

void FingerprintMatcher::reset() {
    for (auto& l : lengths_) l.hash = 0;
    tail_hash_ = 0;
    prefix_.clear();
    window_.clear();
    seen_ = 0;
    match_start_ = 0;
}

bool FingerprintMatcher::confirmed(std::size_t index) const {
    const auto& fp = fps_[index];
    const std::string_view candidate(window_.data() + window_.size() - fp.length, fp.length);
    return hmac_hex(key_, candidate, 16) == fp.mac;
}

std::optional<std::string> FingerprintMatcher::feed(std::string_view bytes) {
    if (longest_ == 0) return std::nullopt;
    for (unsigned char c : bytes) {
        window_.push_back(static_cast<char>(c));
        ++seen_;
        if (!by_tail_.empty()) {
            if (prefix_.empty()) prefix_.push_back(0);
            prefix_.push_back(addmod(mulmod(prefix_.back(), base_), c));
            tail_hash_ = addmod(mulmod(tail_hash_, base_), c);
            if (seen_ > kTailBytes) {
                const auto out =
                    static_cast<unsigned char>(window_[window_.size() - 1 - kTailBytes]);
                tail_hash_ = addmod(tail_hash_, kPrime - mulmod(out, tail_power_));
            }
            const auto bit = tail_hash_ % kTailFilterBits;
            if (seen_ >= kTailBytes && (tail_bits_[bit / 64] >> (bit % 64) & 1) != 0) {
                auto [first, last] = by_tail_.equal_range(tail_hash_);
                for (auto it = first; it != last; ++it) {
                    const auto& fp = fps_[it->second];
                    if (fp.length > window_.size()) continue;
                    const auto whole = addmod(
                        prefix_[window_.size()],
                        kPrime - mulmod(prefix_[window_.size() - fp.length], powers_[it->second]));
                    if (whole == fp.rolling && confirmed(it->second)) {
                        match_start_ = seen_ - fp.length;
                        return fp.secret;
                    }
                }
            }
        }
        for (auto& l : lengths_) {
            l.hash = addmod(mulmod(l.hash, base_), c);
            if (seen_ > l.length) {
                const auto out = static_cast<unsigned char>(window_[window_.size() - 1 - l.length]);
                l.hash = addmod(l.hash, kPrime - mulmod(out, l.power));
            }
            if (seen_ < l.length) continue;
            auto [first, last] = l.by_rolling.equal_range(l.hash);
            for (auto it = first; it != last; ++it)
                if (confirmed(it->second)) {
                    match_start_ = seen_ - l.length;
                    return fps_[it->second].secret;
                }
        }
        // Keep the window bounded: the last `longest` bytes (and one more, for the byte leaving),
        // and their prefix hashes.
        if (window_.size() > 4 * (std::size_t{longest_} + 1) + 4096) {
            const std::size_t drop = window_.size() - (std::size_t{longest_} + 1);
            window_.erase(0, drop);
            if (!prefix_.empty()) prefix_.erase(prefix_.begin(), prefix_.begin() + drop);
        }
    }
    return std::nullopt;
}

} // namespace radial::session
