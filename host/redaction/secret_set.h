// host/redaction/secret_set.h — the secrets of one turn (model key, forge token, per-turn token),
// each with the name that appears in its redaction marker (docs/design.md §10).
//
// A SecretSet is validated as it is built, so a redactor never runs with a secret that would
// make it useless or harmful: a 1-byte "secret" would redact every "a" in the output, and a value
// that occurs inside a marker would be printed by the very act of redacting.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace radial::redaction {

// One secret. `name` is public (it is printed in markers and errors); `value` never is.
struct Secret {
    std::string name;
    std::string value;
    // A value a box chose (a Codex token it rotated in, docs/design.md §8.7): its patterns are the
    // value's own forms and encodings, never the bytes its base64 decodes to, which a box could
    // pick to make radiald mask any text of its choice, other turns' log lines included.
    bool chosen_by_box = false;
};

// The marker that replaces an occurrence of secret `name`: "[REDACTED:<name>]". [thread-safe]
std::string marker_for(std::string_view name);

// An ordered list of validated secrets. Order matters only when two secrets produce the same
// byte pattern (duplicate values): the first one's name is used in the marker.
//
// Thread-safety: const member functions may be called concurrently; add() may not run while
// any other member function runs.
class SecretSet {
public:
    // Values shorter than this many bytes are refused (docs/design.md §10: a short secret would
    // redact ordinary text, so refusing is safer than "working").
    static constexpr std::size_t kDefaultMinLength = 6;

    // An empty set whose values must be at least `min_length` bytes.
    // Throws std::invalid_argument if min_length is 0 (an empty pattern matches everywhere).
    explicit SecretSet(std::size_t min_length = kDefaultMinLength);

    // A set holding `secrets`, each validated as by add(), in order.
    // Throws std::invalid_argument as add() does, naming the first offending secret.
    SecretSet(std::vector<Secret> secrets, std::size_t min_length = kDefaultMinLength);
    SecretSet(std::initializer_list<Secret> secrets, std::size_t min_length = kDefaultMinLength);

    // Appends a secret after validating it. Refusals throw std::invalid_argument whose what()
    // names the secret by NAME and never contains its value:
    //  - the name is empty, or has a byte other than A-Z a-z 0-9 '_' '.' '-' (it is printed in
    //    markers and logs, so it must be plain);
    //  - the value is shorter than min_length() bytes;
    //  - the value occurs inside the marker of this or an earlier secret, or an earlier value
    //    occurs inside this secret's marker (every redaction would then print the value).
    // Duplicate values and duplicate names are accepted. On a throw the set is unchanged.
    void add(std::string name, std::string value, bool chosen_by_box = false);

    // The secrets, in the order they were added. [thread-safe]
    const std::vector<Secret>& secrets() const noexcept { return secrets_; }

    std::size_t size() const noexcept { return secrets_.size(); }
    bool empty() const noexcept { return secrets_.empty(); }

    // Minimum value length in bytes this set enforces.
    std::size_t min_length() const noexcept { return min_length_; }

private:
    std::size_t min_length_;
    std::vector<Secret> secrets_;
};

} // namespace radial::redaction
