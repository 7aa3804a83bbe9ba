// plugins/swarm/escaped_output.h — undoes radial-init's --escape-output (plugins/box-init/): a
// task's log, read back through the engine, as the bytes its command wrote (docs/design.md §13.11).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace radial::swarm {

// One stream's decoder, fed the log's bytes in arbitrary pieces: '\n' (radial-init's piece ends,
// and the ones a log driver adds back) are dropped, "%25" and "%0A" become '%' and '\n', and
// anything else is kept as it is, a '%' not starting one of those two included (only a writer
// other than radial-init puts one there). Not thread-safe; one per stream.
class EscapedOutputDecoder {
public:
    // Appends to `out` the bytes `in` stands for; an escape cut at the end of `in` is held for the
    // next call.
    void feed(std::string_view in, std::string& out);
    // Appends what a cut escape still held, as it was read, and forgets it.
    void finish(std::string& out);

private:
    char held_[2] = {0, 0};
    std::size_t held_size_ = 0; // bytes of an escape ("%", "%2", "%0") held
};

} // namespace radial::swarm
