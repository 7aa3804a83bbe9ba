// host/socket/turn_token.cpp — see turn_token.h.
#include "socket/turn_token.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include <array>
#include <cstdint>
#include <string>

#include "socket/socket_error.h"

namespace radial::socket {

std::string mint_turn_token() {
    std::array<unsigned char, kTurnTokenBytes> raw{};
    std::size_t filled = 0;
    while (filled < raw.size()) {
        const ssize_t n = ::getrandom(raw.data() + filled, raw.size() - filled, 0);
        if (n < 0) {
            if (errno == EINTR) continue; // a signal arrived before any byte was copied
            const int err = errno;
            ::explicit_bzero(raw.data(), raw.size());
            throw SocketError(std::string("minting a turn token: getrandom(2) failed: ") +
                              ::strerror(err) +
                              "; radiald needs a kernel with getrandom (Linux 3.17 or newer)");
        }
        // Requests above 256 bytes may be short; ours are not, but the loop costs nothing.
        filled += static_cast<std::size_t>(n);
    }
    static constexpr char kHex[] = "0123456789abcdef";
    std::string token(raw.size() * 2, '\0');
    for (std::size_t i = 0; i < raw.size(); ++i) {
        token[2 * i] = kHex[raw[i] >> 4];
        token[2 * i + 1] = kHex[raw[i] & 0x0f];
    }
    // The token lives on in `token`, but no stray copy of its entropy stays on the stack.
    ::explicit_bzero(raw.data(), raw.size());
    return token;
}

bool token_equals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    // Accumulate differences with no data-dependent branch; volatile keeps the compiler from
    // turning the loop into an early-exit memcmp.
    volatile unsigned char diff = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        diff = diff | static_cast<unsigned char>(static_cast<unsigned char>(a[i]) ^
                                                 static_cast<unsigned char>(b[i]));
    return diff == 0;
}

} // namespace radial::socket
