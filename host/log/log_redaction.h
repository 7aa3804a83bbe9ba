// host/log/log_redaction.h — masks the secrets of every live turn in every log line (docs/design.md
// §10.2).
//
// A turn registers its compiled redactor for as long as it runs; the logger's filter masks each
// line with one redactor over every registered set before it is written, so an error message that
// echoes a secret (a docker invocation dumping its environment, say) is masked like the turn's
// output.
#pragma once

#include <cstdint>

#include "redaction/stream_redactor.h"

namespace radial::log {

// Keeps one redactor registered while it lives. Move-only.
class RedactionRegistration {
public:
    RedactionRegistration() = default;
    explicit RedactionRegistration(std::uint64_t id) : id_(id) {}
    RedactionRegistration(RedactionRegistration&& o) noexcept : id_(o.id_) { o.id_ = 0; }
    RedactionRegistration& operator=(RedactionRegistration&& o) noexcept;
    RedactionRegistration(const RedactionRegistration&) = delete;
    RedactionRegistration& operator=(const RedactionRegistration&) = delete;
    ~RedactionRegistration();

private:
    std::uint64_t id_ = 0;
};

// Installs the redacting filter into the logger (idempotent). Call once at startup, before any
// other thread logs.
void install_log_redaction();

// Masks `redactor`'s secrets in every log line until the registration is destroyed. [thread-safe]
[[nodiscard]] RedactionRegistration redact_log_lines(redaction::Redactor redactor);

// Applies every registered redactor to `text` (for messages stored elsewhere, e.g. a terminal
// record's error). [thread-safe]
std::string redact_registered(std::string_view text);

} // namespace radial::log
