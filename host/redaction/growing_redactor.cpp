// host/redaction/growing_redactor.cpp — see growing_redactor.h.
#include "redaction/growing_redactor.h"

#include <stdexcept>
#include <utility>

namespace radial::redaction {

GrowingRedactor::GrowingRedactor(SecretSet secrets)
    : secrets_(std::move(secrets)), redactor_(secrets_) {}

Redactor GrowingRedactor::current() const {
    std::lock_guard lock(mutex_);
    return redactor_;
}

SecretSet GrowingRedactor::secrets() const {
    std::lock_guard lock(mutex_);
    return secrets_;
}

std::uint64_t GrowingRedactor::generation() const {
    std::lock_guard lock(mutex_);
    return generation_;
}

bool GrowingRedactor::grow(const std::vector<Secret>& more, std::vector<std::string>* refused) {
    std::lock_guard lock(mutex_);
    SecretSet next = secrets_;
    bool grew = false;
    for (const auto& s : more) {
        bool held = false;
        for (const auto& have : next.secrets())
            if (have.value == s.value) held = true;
        if (held) continue;
        try {
            next.add(s.name, s.value, s.chosen_by_box);
            grew = true;
        } catch (const std::invalid_argument&) {
            if (refused != nullptr) refused->push_back(s.name);
        }
    }
    if (!grew) return false;
    Redactor compiled(next); // before anything changes: a bad_alloc leaves the set as it was
    secrets_ = std::move(next);
    redactor_ = std::move(compiled);
    ++generation_;
    return true;
}

} // namespace radial::redaction
