// host/redaction/json_redaction.h — redacting a JSON document so that it stays JSON
// (docs/design.md §10.2).
//
// Redacting JSON as text may rewrite digits inside a number ({"n": 91234567} with the secret
// "123456" would become {"n": 9[REDACTED:...]7}), and a stored record that no longer parses is
// lost to every reader. So a record is redacted value by value: strings and object keys are
// redacted as text, and a number, true, false or null whose text contains a secret becomes a
// string holding its redacted text.
#pragma once

#include <string>
#include <string_view>

#include "redaction/stream_redactor.h"

namespace radial::redaction {

// `text` redacted by `redactor`, valid JSON whenever `text` is:
//   - nothing secret in it (as text, or in a decoded string value): `text` unchanged, byte for
//   byte;
//   - a secret inside values: the document re-serialised compactly (key order kept) with each
//     affected value redacted (a number, boolean or null becomes a string);
//   - a secret only across tokens (say, spanning a key and its value): the text-redacted document
//     as one JSON string, since it can no longer be parsed as what it was.
// Text that is not JSON is redacted as text (Redactor::redact). Never leaves a secret the text
// redaction would have masked. Throws std::bad_alloc only. [thread-safe]
std::string redact_json(const Redactor& redactor, std::string_view text);

} // namespace radial::redaction
