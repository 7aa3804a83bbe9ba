#include "redaction/json_redaction.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "text/exact_json.h"

namespace radial::redaction {

namespace {

using ordered_json = nlohmann::ordered_json;

// As posted: a redacted record keeps a posted "-0" too (text/exact_json.h).
std::string dump(const ordered_json& j) { return text::dump_exact(j); }

// Redacts every value and key of `j` in place; true when anything changed.
bool redact_values(const Redactor& r, ordered_json& j) {
    bool changed = false;
    if (j.is_object()) {
        ordered_json out = ordered_json::object();
        for (auto& [key, value] : j.items()) {
            std::string k = r.redact(key);
            changed = changed || k != key;
            ordered_json v = std::move(value);
            changed = redact_values(r, v) || changed;
            out[k] = std::move(v);
        }
        if (changed) j = std::move(out);
    } else if (j.is_array()) {
        for (auto& v : j) changed = redact_values(r, v) || changed;
    } else if (j.is_string()) {
        const auto& s = j.get_ref<const std::string&>();
        std::string red = r.redact(s);
        if (red != s) {
            j = std::move(red);
            changed = true;
        }
    } else {
        // A number, boolean or null: its text may hold a secret made of digits.
        std::string text = dump(j);
        std::string red = r.redact(text);
        if (red != text) {
            j = std::move(red);
            changed = true;
        }
    }
    return changed;
}

} // namespace

std::string redact_json(const Redactor& redactor, std::string_view text) {
    std::string plain = redactor.redact(text);
    ordered_json doc = ordered_json::parse(text.begin(), text.end(), nullptr, false);
    if (doc.is_discarded()) return plain;
    const bool changed = redact_values(redactor, doc);
    if (!changed && plain == text) return std::string(text);
    std::string out = changed ? dump(doc) : plain;
    // A secret across tokens survives value-wise redaction, or breaks the document as text: store
    // the text redaction as one string, which masks it and still parses.
    if (std::string again = redactor.redact(out); again != out || !changed) return dump(again);
    return out;
}

} // namespace radial::redaction
