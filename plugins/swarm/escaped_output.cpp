#include "escaped_output.h"

namespace radial::swarm {

void EscapedOutputDecoder::feed(std::string_view in, std::string& out) {
    const char* p = in.data();
    const char* const end = p + in.size();
    while (p < end) {
        const char c = *p;
        if (c == '\n') { // a piece end, radial-init's or the log's: never the command's byte
            ++p;
            continue;
        }
        if (held_size_ == 0) {
            if (c == '%') {
                held_[0] = '%';
                held_size_ = 1;
                ++p;
                continue;
            }
            // A plain run is copied whole: most of a log is neither '%' nor '\n'.
            const char* run = p;
            while (p < end && *p != '%' && *p != '\n') ++p;
            out.append(run, static_cast<std::size_t>(p - run));
            continue;
        }
        if (held_size_ == 1) {
            if (c == '2' || c == '0') {
                held_[1] = c;
                held_size_ = 2;
                ++p;
                continue;
            }
            out.push_back('%'); // not radial-init's: kept as it was; `c` is read again as plain
            held_size_ = 0;
            continue;
        }
        if ((held_[1] == '2' && c == '5') || (held_[1] == '0' && c == 'A')) {
            out.push_back(held_[1] == '2' ? '%' : '\n');
            held_size_ = 0;
            ++p;
            continue;
        }
        out.append(held_, 2); // "%2" or "%0" not followed by its end: kept, `c` read again
        held_size_ = 0;
    }
}

void EscapedOutputDecoder::finish(std::string& out) {
    out.append(held_, held_size_);
    held_size_ = 0;
}

} // namespace radial::swarm
