#include "log/log_redaction.h"

#include <map>
#include <mutex>

#include "log/logger.h"

namespace radial::log {
namespace {
std::mutex g_redactors_mutex;
std::map<std::uint64_t, redaction::Redactor> g_redactors;
std::uint64_t g_next_id = 1;

void unregister(std::uint64_t id) noexcept {
    if (id == 0) return;
    std::lock_guard lock(g_redactors_mutex);
    g_redactors.erase(id);
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
    return RedactionRegistration(id);
}

} // namespace radial::log
