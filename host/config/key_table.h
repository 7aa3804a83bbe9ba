// host/config/key_table.h — reading a TOML table through a table of the keys it may hold: each key
// has one reader, and the message for a key without one is made from the same table, so what a
// file may say and what radiald reads cannot drift apart (docs/design.md §7.1).
#pragma once

#include <toml++/toml.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace radial::config {

// One key a table may hold. `read` gets the key's full name ("run.stopGrace") and its value, and
// throws to refuse the value.
struct KeyReader {
    std::string_view name;
    std::function<void(const std::string& key, const toml::node& value)> read;
};

// How a table refuses a key none of its readers takes.
struct UnknownKeys {
    // The table as an operator writes it, for the list of keys: "[run.egress]", "a turn file".
    std::string_view table;
    // Where to read about the keys, instead of listing them all (for a table of many keys); empty
    // lists them.
    std::string_view reference;
};

// "unknown key; did you mean 'stopGrace'? …": the nearest known name when `name` looks like a typo
// of it, then either `unknown.reference` or every key of `readers` in their order.
std::string unknown_key_problem(std::string_view name, const std::vector<KeyReader>& readers,
                                const UnknownKeys& unknown);

// Reads every key of `table`, in the table's order (toml++ keeps a table's keys sorted), by the
// reader of its name; the full name is
// `prefix` + "." + the key (the key alone for an empty prefix). A key with no reader goes to
// `other`, which returns whether it took it (null: none does); one it did not take is refused:
// `refuse(key, value, problem)` is called and must throw. Throws what a reader throws.
void read_keys(
    const toml::table& table, std::string_view prefix, const std::vector<KeyReader>& readers,
    const UnknownKeys& unknown,
    const std::function<void(const std::string& key, const toml::node& value,
                             const std::string& problem)>& refuse,
    const std::function<bool(const std::string& name, const toml::node& value)>& other = nullptr);

} // namespace radial::config
