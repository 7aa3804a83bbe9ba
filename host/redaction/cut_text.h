// host/redaction/cut_text.h — redacting text that was cut short before it could be redacted: an
// egress receipt quotes at most so many bytes of what the box sent (docs/design.md §9.7), so a
// secret that straddled the cut left only its start there, which no pattern matches.
#pragma once

#include <string>
#include <string_view>

#include "redaction/stream_redactor.h"

namespace radial::redaction {

// `text` redacted by `redactor`, and before each `mark` (where the text was cut) the bytes that
// could still begin a secret left out, so the start of a secret the cut ended is not shown
// either. A `mark` the text had of its own costs at most the few bytes before it. Throws
// std::bad_alloc only. [thread-safe]
std::string redact_cut(const Redactor& redactor, std::string_view text,
                       std::string_view mark = "...");

} // namespace radial::redaction
