#include "redaction/cut_text.h"

namespace radial::redaction {

std::string redact_cut(const Redactor& redactor, std::string_view text, std::string_view mark) {
    std::string out;
    std::size_t from = 0;
    if (!mark.empty())
        for (auto at = text.find(mark); at != std::string_view::npos; at = text.find(mark, from)) {
            // Fed and never flushed: what it holds back could begin a secret, and is dropped.
            StreamRedactor before(redactor);
            before.feed(text.substr(from, at - from), out);
            out += mark;
            from = at + mark.size();
        }
    out += redactor.redact(text.substr(from));
    return out;
}

} // namespace radial::redaction
