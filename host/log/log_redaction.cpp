#include "log/log_redaction.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "log/logger.h"

namespace radial::log {
namespace {
std::mutex g_redactors_mutex;
std::map<std::uint64_t, redaction::Redactor> g_redactors;
std::uint64_t g_next_id = 1;
// One redactor over every registered set, so that each line is masked across the live turns at
// once (every byte of every occurrence): one after another, a turn whose secret is part of another
// turn's would mask that part first and leave the rest of the other's in clear. A value the union
// refuses (inside another secret's marker) is left out of it and masked after it, alone, in
// g_left_out: the union is built from the secrets a box cannot choose first and the Codex tokens
// last (a box rotates those in), so a box's value is what is left out, never another turn's
// secret, which the union has masked whole before a left-out value is looked for. Unset only when
// the union could not be built at all (out of memory); then each redactor applies in turn.
// Guarded by g_redactors_mutex.
std::optional<redaction::Redactor> g_combined;
std::vector<redaction::Redactor> g_left_out;

// Rebuilds g_combined and g_left_out from g_redactors. Called with g_redactors_mutex held.
void combine() noexcept {
    g_combined.reset();
    g_left_out.clear();
    if (g_redactors.size() < 2) return;
    try {
        std::size_t min_length = redaction::SecretSet::kDefaultMinLength;
        for (const auto& [id, r] : g_redactors)
            min_length = std::min(min_length, r.secrets().min_length());
        redaction::SecretSet all(min_length);
        std::set<std::pair<std::string, std::string>> added;
        std::vector<redaction::Secret> left_out;
        for (const bool chosen_by_a_box : {false, true})
            for (const auto& [id, r] : g_redactors)
                for (const auto& s : r.secrets().secrets()) {
                    if (s.name.starts_with("codexAuth.") != chosen_by_a_box) continue;
                    if (!added.emplace(s.name, s.value).second) continue;
                    try {
                        all.add(s.name, s.value, s.chosen_by_box);
                    } catch (const std::invalid_argument&) {
                        left_out.push_back(s);
                    }
                }
        g_combined.emplace(all);
        for (const auto& s : left_out)
            g_left_out.emplace_back(redaction::SecretSet({s}, min_length));
    } catch (const std::exception&) {
        g_combined.reset();
        g_left_out.clear();
    }
}

void unregister(std::uint64_t id) noexcept {
    if (id == 0) return;
    std::lock_guard lock(g_redactors_mutex);
    g_redactors.erase(id);
    combine();
}
} // namespace

RedactionRegistration& RedactionRegistration::operator=(RedactionRegistration&& o) noexcept {
    if (this != &o) {
        unregister(id_);
        id_ = o.id_;
        o.id_ = 0;
    }
    return *this;
}

RedactionRegistration::~RedactionRegistration() { unregister(id_); }

std::string redact_registered(std::string_view text) {
    std::lock_guard lock(g_redactors_mutex);
    if (g_combined) {
        std::string out = g_combined->redact(text);
        for (const auto& r : g_left_out) out = r.redact(out);
        return out;
    }
    std::string out(text);
    for (const auto& [id, r] : g_redactors) out = r.redact(out);
    return out;
}

void install_log_redaction() {
    set_filter([](std::string_view line) { return redact_registered(line); });
}

RedactionRegistration redact_log_lines(redaction::Redactor redactor) {
    std::lock_guard lock(g_redactors_mutex);
    std::uint64_t id = g_next_id++;
    g_redactors.emplace(id, std::move(redactor));
    combine();
    return RedactionRegistration(id);
}

} // namespace radial::log
