// host/redaction/decoded_forms.h — the bytes radiald's own stores would write back as a secret's
// value (secret_patterns.h, Form::decoded; docs/design.md §10.2).
//
// The terminal record and the output log write a box's output that is not UTF-8 in base64, and
// its control bytes as JSON escapes; a box printing the bytes below would have the value itself
// stored, so the redactor masks them in the stream before anything encodes them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace radial::redaction {

// The decoded forms of `value`, none empty, in this order: the value with its C and JSON escapes
// read (\n \t \r \b \f \v \a \0 \\ \" \' \/ \xNN \uNNNN as UTF-8), when it has a
// backslash; and, when it is standard base64 text (letters, digits, + and /, then at most two
// '='), for each of the four places in a 4-character group it can start, the bytes whose base64
// has it inside. Duplicates are the caller's to drop. Pure; thread-safe.
std::vector<std::string> decoded_forms(std::string_view value);

} // namespace radial::redaction
