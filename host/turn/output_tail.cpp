#include "turn/output_tail.h"

#include <boost/beast/core/detail/base64.hpp>

#include "text/utf8.h"

namespace radial::turn {

void append_output_tail(std::string& tail, std::string_view bytes, std::size_t capacity) {
    bool cut = false;
    if (bytes.size() >= capacity) {
        cut = !tail.empty() || bytes.size() > capacity;
        tail.assign(bytes.substr(bytes.size() - capacity));
    } else {
        tail.append(bytes);
        if (tail.size() > capacity) {
            tail.erase(0, tail.size() - capacity);
            cut = true;
        }
    }
    if (!cut) return;
    // A UTF-8 character is at most four bytes: at most three continuation bytes of a character
    // whose lead byte was dropped. A longer run is not UTF-8 at all, and is kept as it is.
    std::size_t n = 0;
    while (n < tail.size() && text::is_utf8_continuation(tail[n])) ++n;
    if (n <= 3 && n < tail.size()) tail.erase(0, n);
}

std::string base64_encode(std::string_view bytes) {
    namespace b64 = boost::beast::detail::base64;
    std::string out(b64::encoded_size(bytes.size()), '\0');
    out.resize(b64::encode(out.data(), bytes.data(), bytes.size()));
    return out;
}

} // namespace radial::turn
