// host/redaction/secret_patterns.h — the byte patterns a secret takes when it leaks into output:
// the raw value and the encodings logs commonly apply to it (docs/design.md §10).
//
// Rationale: a token rarely leaks only as itself. A CLI prints it inside a base64 blob (an HTTP
// Basic header, a docker auth config), a URL (`?token=`), or a JSON document. Each pattern below
// maps back to its secret, so the redactor can write the secret's name in the marker.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "redaction/secret_set.h"

namespace radial::redaction {

enum class Encoding {
    raw,       // the value itself
    base64,    // standard alphabet (+/), the stable inner part for one alignment
    base64url, // URL-safe alphabet (-_), the stable inner part for one alignment
    url,       // percent-encoding of every byte outside A-Z a-z 0-9 - . _ ~ (or ' ' as '+')
    json,      // the value as it appears inside a JSON string literal
    markup,    // HTML/XML character references: & < > " ' named, or every character as &#N; /
               // &#xN; (lower- and upper-case hex)
    braces,    // \u{…} escapes (Rust's escape_unicode, JavaScript's ES2015 escapes): every
               // character outside printable ASCII, or every character
    hex,       // every byte as two hex digits, all lower-case or all upper-case (xxd -p,
               // hexdump, a digest tool's encoding of raw bytes)
};

// The forms in which tools re-print a value before any encoding: a value stored with a trailing
// newline is printed without it, a quoted one without its quotes, and shells and languages quote
// or escape a string when they echo or trace it (docs/redaction.md, "Derived forms").
enum class Form {
    exact,    // the value as registered
    trimmed,  // without surrounding whitespace, or only without trailing line endings
    unquoted, // without one pair of surrounding quotes (" ' `), and a "…" body unescaped
    requoted, // as shells quote it when they trace or echo it: '\'' for ' (bash, zsh, mksh
              // set -x), '"'"' (busybox ash set -x, Python's shlex.quote), backslashes (printf
              // %q), the body of "…" (\ " $ ` escaped), the body of $'…' (bash, mksh, zsh)
    escaped,  // as languages escape it: \n \t \\ with \" (C, Go) or \' (Python), other
              // control bytes as \xNN, or as \u{N} (Rust's Debug)
    line,     // one line of a multi-line value (a PEM key printed line by line), at least
              // kMinLineForm bytes without its line ending
    decoded,  // the bytes radiald's own records and logs would write as the value: its C and
              // JSON escapes read (a value holding a literal \n), and, for base64 text, the
              // bytes whose base64 has it inside, at each of the four offsets (raw only)
    cased,    // the value with every ASCII letter lower-cased, and upper-cased: a host name the
              // box asks the egress broker for is recorded folded (raw only)
    shown,    // the value, and each cased form, with every byte outside printable ASCII as '?':
              // the egress broker quotes what a box sent that way in a receipt (raw only)
};

// The shortest line of a multi-line value that is a form of its own (Form::line): 16 bytes carry
// at least 96 bits of a base64 body, enough to identify a key; shorter lines (a PEM body's last
// "AB==") would redact ordinary text. PEM armor ("-----BEGIN …-----") is public and never a form.
inline constexpr std::size_t kMinLineForm = 16;

// One pattern: the exact bytes to find, which secret (index into SecretSet::secrets()) they
// reveal, and how they were derived (the form first, then the encoding of that form).
struct Pattern {
    std::string bytes;
    std::size_t secret = 0;
    Encoding encoding = Encoding::raw;
    Form form = Form::exact;
};

// The distinct forms of `value` (Form), the value itself first. Forms may be shorter than the
// value (trimmed, unquoted); callers drop those below their minimum length. [thread-safe]
std::vector<std::pair<std::string, Form>> derive_forms(const std::string& value);

// Every pattern of every secret in `secrets`, without duplicates: when two derivations give the
// same bytes, the first one kept wins (secrets in order; for each, the exact form's raw bytes
// first). Each form of each value (derive_forms) gives:
//  - raw;
//  - base64 and base64url: for each alignment a in {0, 1, 2} (the value starting a bytes into
//    a 3-byte group of the encoded data), the characters of the encoding that depend only on
//    the value's bits — the part that is the same whatever bytes surround the value. Padding is
//    never part of a pattern;
//  - url: every byte outside the unreserved set as %XX, with upper-case and with lower-case hex;
//    and, if the value has a space, the form-encoding variant with '+' for space;
//  - json: '"' and '\\' escaped, \b \f \n \r \t, other control bytes as \u00xx, with variants
//    for '/' as "\/", non-ASCII as \uXXXX (surrogate pairs above U+FFFF; lower and upper-case
//    hex; only when the value is valid UTF-8), and Go's HTML-safe escaping of < > & and
//    U+2028/U+2029;
//  - markup: & < > " as &amp; &lt; &gt; &quot; and ' as &#x27; &#39; or &apos;; every
//    character as &#N; and as &#xN; (lower- and upper-case hex; only for valid UTF-8);
//  - braces: every character outside printable ASCII as \u{n}, and every character as \u{n}
//    (only for valid UTF-8);
//  - hex: every byte as two lower-case hex digits, and as two upper-case ones.
// Patterns shorter than secrets.min_length() are dropped: a trimmed or unquoted form may be, and
// would then redact ordinary text. Throws std::bad_alloc only.
// [thread-safe]
std::vector<Pattern> derive_patterns(const SecretSet& secrets);

} // namespace radial::redaction
