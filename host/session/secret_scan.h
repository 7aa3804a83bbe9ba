// host/session/secret_scan.h — looks for a turn's secrets in what its session's box changed
// (docs/design.md §13.12: a snapshot never holds a secret): every path, file, link target and
// attribute value the runtime gives (radial_change_sink), matched with the turn's redactor, so
// each secret is found in every encoding the redactor knows, across any chunking.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redaction/stream_redactor.h"
#include "session/secret_fingerprints.h"

namespace radial::session {

// Where a secret was found: the secret's name (never its value) and the entry's path in the box.
struct SecretFound {
    std::string secret; // its name
    // Where: the entry's path with the turn's own values masked, or, when another turn's value is
    // in the path, the deepest directory above it (never a part of that value).
    std::string path;
};

// One walk over one box's changes. Not thread-safe (the runtime gives one call at a time).
class SecretScan {
public:
    // Looks for the secrets of `redactor` (this turn's values) and of each of `earlier` (the
    // fingerprints of what the session's earlier turns and the state directory's other turns
    // were given), which must outlive this.
    explicit SecretScan(const redaction::Redactor& redactor,
                        std::vector<FingerprintMatcher*> earlier = {});

    // The next entry, by its path in the box. False once a secret was found (stop the walk).
    bool entry(std::string_view path);
    // The next bytes of the current entry. False once a secret was found.
    bool data(std::string_view bytes);
    // Ends the walk; the first secret found, if any.
    const std::optional<SecretFound>& finish();

    // Entries and bytes seen, for the log.
    std::size_t entries() const noexcept { return entries_; }
    std::size_t bytes() const noexcept { return bytes_; }

private:
    void end_entry();
    // Compares what the redactor let through with the bytes fed; a difference is a match.
    void check(const std::string& out);

    redaction::Redactor redactor_;
    std::vector<FingerprintMatcher*> earlier_;
    redaction::StreamRedactor stream_;
    std::string path_;
    std::string unconfirmed_; // bytes fed whose output is not yet compared
    std::optional<SecretFound> found_;
    std::size_t entries_ = 0, bytes_ = 0;
};

} // namespace radial::session
