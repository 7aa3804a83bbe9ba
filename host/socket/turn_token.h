// host/socket/turn_token.h — the per-turn bearer token that authenticates the turn socket
// (docs/design.md §9.4, docs/design.md §9: "the sidecar socket remains the only write path").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace radial::socket {

// Bytes of OS randomness in a token; the token is twice as many lowercase hex characters.
// Rationale: 256 bits — docs/design.md §9 asks for at least 128; the extra costs nothing.
inline constexpr std::size_t kTurnTokenBytes = 32;

// Mints a fresh token: kTurnTokenBytes bytes from getrandom(2) (the kernel CSPRNG, blocking
// only until the pool is first initialised at boot), hex-encoded as 64 characters [0-9a-f].
// Interrupted and short reads are retried. Throws SocketError if getrandom fails otherwise
// (e.g. ENOSYS on a pre-3.17 kernel). The raw bytes are wiped before returning.
// [thread-safe]
std::string mint_turn_token();

// True when `a` and `b` are byte-for-byte equal. For equal lengths the time taken does not depend
// on the contents (every byte is compared, no early exit), so a client cannot learn a token byte
// by byte from response timing. Different lengths return false at once: the length of a token is
// not secret (always 2 * kTurnTokenBytes). [thread-safe]
bool token_equals(std::string_view a, std::string_view b) noexcept;

} // namespace radial::socket
