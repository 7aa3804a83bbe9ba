#include "sbx_list.h"

#include <radial/internal/names.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace radial::sandbox {

namespace {

bool space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view trim(std::string_view s) {
    while (!s.empty() && space(s.front())) s.remove_prefix(1);
    while (!s.empty() && space(s.back())) s.remove_suffix(1);
    return s;
}

// sbx prints these on stdout when `ls` starts its daemon (sbx-releases#201).
bool startup_noise(std::string_view line) {
    return line.starts_with("Starting sandboxd") || line.starts_with("Daemon started") ||
           line.starts_with("Logs:");
}

bool plain_name(std::string_view name) {
    return !name.empty() && !internal::has_space_or_control(name);
}

bool header_word(std::string_view word) {
    std::string lower;
    for (char c : word) lower += (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c;
    return lower == "name" || lower == "sandbox" || lower == "id";
}

template <class F>
void for_each_line(std::string_view text, F&& f) {
    while (!text.empty()) {
        std::size_t end = text.find('\n');
        f(text.substr(0, end));
        text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    }
}

// Appends the sandboxes of one parsed document; false when it has the wrong shape. An entry that
// is no object or names no sandbox is a shape this parser does not know (a log line such as
// `["x"]`, or a later sbx that renamed the field), not an entry to skip: read as an empty list it
// would tell a removal that its sandbox is gone and reconciliation that there is nothing to do.
bool collect(const nlohmann::json& doc, std::vector<ListedSandbox>& out) {
    const nlohmann::json* items = &doc;
    if (doc.is_object()) {
        auto it = doc.find("sandboxes");
        if (it == doc.end()) return false;
        if (it->is_null()) return true;
        items = &*it;
    }
    if (!items->is_array()) return false;
    std::vector<ListedSandbox> found;
    for (const auto& item : *items) {
        if (!item.is_object()) return false;
        auto name = item.find("name");
        if (name == item.end() || !name->is_string()) return false;
        const auto& n = name->get_ref<const std::string&>();
        if (n.empty()) return false;
        if (!plain_name(n)) continue; // never one of radial's names
        ListedSandbox s{n, {}};
        auto status = item.find("status");
        if (status != item.end() && status->is_string()) s.status = status->get<std::string>();
        found.push_back(std::move(s));
    }
    out.insert(out.end(), found.begin(), found.end());
    return true;
}

} // namespace

std::vector<ListedSandbox> parse_sandbox_list_text(std::string_view output) {
    std::vector<ListedSandbox> rows;
    bool header_seen = false;
    for_each_line(output, [&](std::string_view raw) {
        std::string_view line = trim(raw);
        if (line.empty() || startup_noise(line)) return;
        std::size_t end = 0;
        while (end < line.size() && !space(line[end])) ++end;
        std::string_view first = line.substr(0, end);
        if (!header_seen && header_word(first)) {
            header_seen = true;
            rows.clear(); // whatever came before the header was not a row
            return;
        }
        if (plain_name(first)) rows.push_back({std::string(first), {}});
    });
    return rows;
}

std::optional<std::vector<ListedSandbox>> parse_sandbox_list_json(std::string_view output) {
    // Only a document says that there are no sandboxes: an output that is empty or blank is no
    // listing (a failed removal would take its sandbox for gone, docs/design.md §8.3).
    std::size_t at = 0;
    while (at < output.size()) {
        std::size_t end = output.find('\n', at);
        if (end == std::string_view::npos) end = output.size();
        std::string_view line = trim(output.substr(at, end - at));
        if (line == "null") return std::vector<ListedSandbox>{}; // a nil list, as Go prints it
        if (!line.empty() && (line.front() == '{' || line.front() == '[')) {
            std::size_t start = at + (output.substr(at).find(line.front()));
            // Streamed parsing reads one document and leaves whatever follows it alone.
            std::istringstream in(std::string(output.substr(start)));
            try {
                nlohmann::json doc;
                in >> doc;
                std::vector<ListedSandbox> out;
                if (collect(doc, out)) return out;
            } catch (const nlohmann::json::exception&) {
                // not the document: a log line that happens to start with '{' or '['
            }
        }
        at = end + 1;
    }
    return std::nullopt;
}

} // namespace radial::sandbox
