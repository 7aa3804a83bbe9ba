// tests/host/redaction/reference_redactor.h — the obviously-correct redaction the fast one is
// checked against (docs/design.md §10): whole buffer, at each position the longest pattern that
// matches there opens a region that every occurrence starting inside it extends, replaced by that
// pattern's marker; else copy one byte. O(bytes × patterns × pattern length); tests and fuzzing
// only.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

#include "redaction/secret_patterns.h"
#include "redaction/secret_set.h"

namespace radial::redaction::test {

inline std::string reference_redact(const SecretSet& secrets, std::string_view input) {
    const auto patterns = derive_patterns(secrets);
    std::string out;
    std::size_t i = 0;
    while (i < input.size()) {
        const Pattern* best = nullptr;
        for (const auto& p : patterns)
            if (p.bytes[0] == input[i] && input.substr(i).starts_with(p.bytes) &&
                (best == nullptr || p.bytes.size() > best->bytes.size()))
                best = &p;
        if (best != nullptr) {
            out += marker_for(secrets.secrets()[best->secret].name);
            std::size_t end = i + best->bytes.size();
            for (std::size_t j = i + 1; j < end; ++j)
                for (const auto& p : patterns)
                    if (input.substr(j).starts_with(p.bytes))
                        end = std::max(end, j + p.bytes.size());
            i = end;
        } else {
            out += input[i++];
        }
    }
    return out;
}

} // namespace radial::redaction::test
