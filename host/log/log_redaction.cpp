#include "log/log_redaction.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "log/logger.h"

namespace radial::log {
namespace {
std::mutex g_redactors_mutex;
std::map<std::uint64_t, redaction::Redactor> g_redactors;
std::uint64_t g_next_id = 1;
// One redactor over every registered set, so that each line is masked across the live turns at
// once (every byte of every occurrence): one after another, a turn whose secret is part of another
// turn's would mask that part first and leave the rest of the other's in clear. Unset when the
// union is refused (a value inside another's marker); then each redactor applies in turn. Guarded
// by g_redactors_mutex.
std::optional<redaction::Redactor> g_combined;

// Rebuilds g_combined from g_redactors. Called with g_redactors_mutex held.
void combine() noexcept {
    g_combined.reset();
    if (g_redactors.size() < 2) return;
    try {
        std::size_t min_length = redaction::SecretSet::kDefaultMinLength;
        for (const auto& [id, r] : g_redactors)
            min_length = std::min(min_length, r.secrets().min_length());
        redaction::SecretSet all(min_length);
        std::set<std::pair<std::string, std::string>> added;
        for (const auto& [id, r] : g_redactors)
            for (const auto& s : r.secrets().secrets())
                if (added.emplace(s.name, s.value).second) all.add(s.name, s.value);
        g_combined.emplace(all);
    } catch (const std::exception&) {
        g_combined.reset();
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
    if (g_combined) return g_combined->redact(text);
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
