#include "redaction/secret_set.h"

#include <stdexcept>
#include <utility>

#include "redaction/secret_patterns.h"

namespace radial::redaction {
namespace {

bool is_name_byte(unsigned char c) noexcept {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
}

// A refused name is quoted in the error; escape what is not plain so the message stays one
// readable line whatever the caller passed.
std::string printable(std::string_view name) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string s;
    for (unsigned char c : name) {
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
            s += static_cast<char>(c);
        } else {
            s += "\\x";
            s += kHex[c >> 4];
            s += kHex[c & 0xf];
        }
    }
    return s;
}

[[noreturn]] void refuse(std::string_view name, std::string_view why) {
    throw std::invalid_argument("registering secret '" + printable(name) +
                                "': " + std::string(why));
}

} // namespace

std::string marker_for(std::string_view name) {
    std::string m;
    m.reserve(name.size() + 11);
    m += "[REDACTED:";
    m += name;
    m += ']';
    return m;
}

SecretSet::SecretSet(std::size_t min_length) : min_length_(min_length) {
    if (min_length == 0)
        throw std::invalid_argument(
            "creating a secret set: minimum secret length is 0; an empty secret would match "
            "everywhere, use at least 1 (default 6)");
}

SecretSet::SecretSet(std::vector<Secret> secrets, std::size_t min_length) : SecretSet(min_length) {
    secrets_.reserve(secrets.size());
    for (auto& s : secrets) add(std::move(s.name), std::move(s.value), s.chosen_by_box);
}

SecretSet::SecretSet(std::initializer_list<Secret> secrets, std::size_t min_length)
    : SecretSet(std::vector<Secret>(secrets), min_length) {}

void SecretSet::add(std::string name, std::string value, bool chosen_by_box) {
    if (name.empty())
        refuse(name,
               "the name is empty; give every secret a name, it is printed in its "
               "marker '[REDACTED:<NAME>]'");
    for (unsigned char c : name)
        if (!is_name_byte(c))
            refuse(name,
                   "the name has a byte other than A-Z a-z 0-9 '_' '.' '-'; rename it, "
                   "it is printed in markers and logs");
    if (value.size() < min_length_)
        refuse(name, "the value is shorter than the minimum of " + std::to_string(min_length_) +
                         " bytes; a short secret would redact ordinary text, register the "
                         "whole secret rather than a fragment");

    // A value inside a marker would be printed by every redaction of that marker; so would any
    // form of it that is redacted too (derive_forms: trimmed, unquoted, re-quoted, and cased: a
    // marker holding the value upper-cased gives it away but for its case). Markers are built
    // from names only, so the messages can name both secrets without showing a value. What it
    // returns says how the value occurs ("" when it does not).
    const auto inside = [&](const std::string& marker, const std::string& v) -> std::string {
        std::string how;
        for (const auto& [form, f] : derive_forms(v))
            if (form.size() >= min_length_ && marker.find(form) != std::string::npos) {
                if (f != Form::cased) return "the value";
                how = "the value, upper- or lower-cased,";
            }
        return how;
    };
    const std::string own_marker = marker_for(name);
    if (const auto how = inside(own_marker, value); !how.empty())
        refuse(name, how + " occurs inside its own marker '" + own_marker +
                         "', so every redaction would print it; rename the secret");
    for (const auto& s : secrets_) {
        const std::string other_marker = marker_for(s.name);
        if (const auto how = inside(other_marker, value); !how.empty())
            refuse(name, how + " occurs inside the marker '" + other_marker + "' of secret '" +
                             s.name + "', so every redaction would print it; rename '" + s.name +
                             "'");
        if (const auto how = inside(own_marker, s.value); !how.empty())
            refuse(name, "the value of secret '" + s.name + "'" +
                             (how == "the value" ? std::string() : ", upper- or lower-cased,") +
                             " occurs inside this secret's marker '" + own_marker +
                             "', so every redaction would print it; rename '" + printable(name) +
                             "'");
    }
    secrets_.push_back(Secret{std::move(name), std::move(value), chosen_by_box});
}

} // namespace radial::redaction
