// plugins/sandbox/sbx_list.h — the parser of `sbx ls` output, the single place the CLI's listing
// leaks into radiald (docs/design.md §5.10).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace radial::sandbox {

// One sandbox as `sbx ls` listed it.
struct ListedSandbox {
    std::string name;   // never empty; no whitespace or control byte
    std::string status; // "running", "stopped", ...; empty when the listing does not say
    friend bool operator==(const ListedSandbox&, const ListedSandbox&) = default;
};

// The text form. Blank lines and sbx's daemon start-up lines ("Starting sandboxd daemon...",
// "Daemon started (PID: ...)", "Logs: ...") are skipped; the header row — the first line whose
// first column is NAME, SANDBOX or ID, in any case — is dropped together with everything before
// it; of every other line only the first whitespace-separated column is kept, so added columns and
// odd spacing change nothing. The header's column names are not documented, hence the small set.
// Never throws on any input. Pure; thread-safe. Source: docs/design.md §5.10.
std::vector<ListedSandbox> parse_sandbox_list_text(std::string_view output);

// The --json form, {"sandboxes":[{"name":...,"status":...},...]} (sbx-releases#201; `sandboxes`
// may be null), also a bare array of such objects. Some versions print daemon start-up lines on
// stdout first, so parsing starts at the first line that opens a JSON object or array and
// parses (text after the document is ignored). A document with an entry that is not an object or
// whose "name" is missing, not a string or empty is not of that shape (so a log line such as
// `["x"]` is passed over, and a changed format is an error, never an empty list); entries whose
// name holds whitespace or control bytes are skipped (never radial's). nullopt when no line starts
// a document of that shape, and also for an output that is empty or blank: only a document
// (`{"sandboxes":[]}`, `{"sandboxes":null}`, `[]`, or a line that is just `null`) is an empty
// list, so a silent sbx never passes for one without sandboxes. Never throws on any input. Pure;
// thread-safe. Source: docs/design.md §5.10.
std::optional<std::vector<ListedSandbox>> parse_sandbox_list_json(std::string_view output);

} // namespace radial::sandbox
