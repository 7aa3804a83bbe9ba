#include "cli/unknown_flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <vector>

#include "text/nearest_word.h"

namespace radial::cli {
namespace {

// The options of `app` itself: CLI11 takes a flag of `radiald` (say `--verbose`) only before the
// subcommand.
std::vector<const CLI::Option*> options_of(const CLI::App* app) {
    std::vector<const CLI::Option*> out;
    for (const auto* o : app->get_options()) out.push_back(o);
    return out;
}

const CLI::Option* find_long(const std::vector<const CLI::Option*>& opts, std::string_view name) {
    for (const auto* o : opts)
        for (const auto& l : o->get_lnames())
            if (l == name) return o;
    return nullptr;
}

const CLI::Option* find_short(const std::vector<const CLI::Option*>& opts, char name) {
    for (const auto* o : opts)
        for (const auto& s : o->get_snames())
            if (s.size() == 1 && s[0] == name) return o;
    return nullptr;
}

// `turn` and `check` themselves, not `config check`.
bool is_box_command(const CLI::App* app) {
    return app->get_parent() != nullptr && app->get_parent()->get_parent() == nullptr &&
           (app->get_name() == "turn" || app->get_name() == "check");
}

std::string command_path(const CLI::App* app) {
    std::vector<std::string> names;
    for (; app != nullptr; app = app->get_parent())
        names.push_back(app->get_parent() == nullptr ? "radiald" : app->get_name());
    std::reverse(names.begin(), names.end());
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : " ") + n;
    return out;
}

UnknownWord unknown(const CLI::App* app, const std::string& what, const std::string& word,
                    const std::vector<std::string>& candidates) {
    UnknownWord u;
    u.command = command_path(app);
    u.in_box_command = is_box_command(app);
    std::string hint;
    if (auto near = text::nearest_word(word, candidates))
        hint = fmt::format("; did you mean {}?", *near);
    u.message = fmt::format("{}: unknown {} '{}'{} (see '{} --help')", u.command, what, word, hint,
                            u.command);
    return u;
}

bool takes_value(const CLI::Option* o) { return o->get_expected_min() > 0; }

// `word` names a flag of a command above `app`: it must come before `app`'s name.
std::optional<UnknownWord> misplaced(const CLI::App* app, const std::string& word, bool is_long) {
    const std::string name = word.substr(is_long ? 2 : 1);
    for (const CLI::App* up = app->get_parent(); up != nullptr; up = up->get_parent()) {
        const auto opts = options_of(up);
        if ((is_long && find_long(opts, name) == nullptr) ||
            (!is_long && (name.empty() || find_short(opts, name[0]) == nullptr)))
            continue;
        UnknownWord u;
        u.command = command_path(app);
        u.in_box_command = is_box_command(app);
        u.message = fmt::format("{}: '{}' is a flag of '{}', not of '{}'; write it before '{}'",
                                u.command, word, command_path(up), u.command, app->get_name());
        return u;
    }
    return std::nullopt;
}

} // namespace

std::optional<UnknownWord> check_unknown_flags(const CLI::App& app, int argc,
                                               const char* const* argv) {
    const CLI::App* current = &app;
    for (int i = 1; i < argc; ++i) {
        const std::string word = argv[i];
        if (word == "--") return std::nullopt; // the rest is the box's command
        const auto opts = options_of(current);
        if (word.size() > 2 && word.starts_with("--")) {
            const std::string name = word.substr(2, word.find('=') - 2);
            const CLI::Option* o = find_long(opts, name);
            if (o == nullptr) {
                if (auto m = misplaced(current, "--" + name, true)) return m;
                std::vector<std::string> longs;
                for (const auto* c : opts)
                    for (const auto& l : c->get_lnames()) longs.push_back("--" + l);
                return unknown(current, "flag", "--" + name, longs);
            }
            if (takes_value(o) && word.find('=') == std::string::npos) ++i;
            continue;
        }
        if (word.size() > 1 && word[0] == '-') {
            const CLI::Option* o = find_short(opts, word[1]);
            if (o == nullptr) {
                if (auto m = misplaced(current, word.substr(0, 2), false)) return m;
                std::vector<std::string> shorts;
                for (const auto* c : opts)
                    for (const auto& s : c->get_snames()) shorts.push_back("-" + s);
                return unknown(current, "flag", word.substr(0, 2), shorts);
            }
            if (takes_value(o) && word.size() == 2) ++i;
            continue;
        }
        // A word that is no flag: a subcommand of the current command, else a positional
        // argument — or, for a command that takes none, a mistyped subcommand.
        const auto subs =
            current->get_subcommands([](const CLI::App* s) { return !s->get_disabled(); });
        auto sub = std::find_if(subs.begin(), subs.end(),
                                [&](const CLI::App* s) { return s->get_name() == word; });
        if (sub != subs.end()) {
            current = *sub;
            continue;
        }
        const bool takes_positionals = std::any_of(opts.begin(), opts.end(), [&](const auto* o) {
            return o->get_positional() && !o->nonpositional();
        });
        if (!subs.empty() && !takes_positionals) {
            std::vector<std::string> names;
            for (const auto* s : subs) names.push_back(s->get_name());
            return unknown(current, "command", word, names);
        }
    }
    return std::nullopt;
}

} // namespace radial::cli
