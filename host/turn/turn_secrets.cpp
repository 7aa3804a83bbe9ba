#include "turn/turn_secrets.h"

#include <fmt/format.h>

#include <cstdlib>
#include <radial/names.hpp>
#include <set>

#include "session/instance_fingerprints.h"

namespace radial::turn {

std::optional<std::string> process_env(const std::string& name) {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
}

TurnRequest with_secret_values(TurnRequest request, const EnvLookup& lookup, std::string_view fix) {
    for (const auto& name : request.secrets) {
        if (!is_env_name(name))
            throw RequestError(fmt::format(
                "secret '{}' must be a variable NAME matching [A-Za-z_][A-Za-z0-9_]*", name));
        auto value = lookup(name);
        if (!value)
            throw RequestError(
                fmt::format("secret '{}' is not set in radiald's environment; {}", name, fix));
        request.env.push_back({name, std::move(*value), true});
    }
    return request;
}

redaction::SecretSet secrets_before_the_box(const TurnRequest& request,
                                            const config::RedactConfig& redact,
                                            const std::vector<std::string>& extra_names,
                                            bool skip_refused) {
    redaction::SecretSet secrets(redact.min_length);
    const auto add = [&](const std::string& name, const std::string& value) {
        try {
            secrets.add(name, value);
        } catch (const std::invalid_argument&) {
            if (!skip_refused) throw;
        }
    };
    for (const auto& e : request.env)
        if (e.secret) add(e.name, e.value);
    const auto from_environment = [&](const std::string& name) {
        if (const char* v = std::getenv(name.c_str()); v != nullptr && *v != '\0') add(name, v);
    };
    for (const auto& name : extra_names) from_environment(name);
    for (const auto& name : redact.env_names) from_environment(name);
    // A marker name may hold only [A-Za-z0-9_.-], so no brackets: "redact.values.0".
    for (std::size_t i = 0; i < redact.values.size(); ++i)
        add(fmt::format("redact.values.{}", i), redact.values[i]);
    return secrets;
}

void add_other_turns_secrets(redaction::SecretSet& secrets, const std::string& state_dir) {
    std::set<std::string> have;
    for (const auto& s : secrets.secrets()) have.insert(s.name);
    for (const auto& fp : session::load_instance_fingerprints(state_dir).fingerprints) {
        if (!have.insert(fp.secret).second || !is_env_name(fp.secret)) continue;
        const auto v = process_env(fp.secret);
        if (!v || !session::kept_in_store(fp.secret, *v)) continue;
        try {
            secrets.add(fp.secret, *v);
        } catch (const std::invalid_argument&) {
            // A value too short to mask safely: it could not be given to a turn either.
        }
    }
}

void refuse_secrets_at_rest(const ContainerSpec& spec, const redaction::Redactor& redactor) {
    const auto holds = [&](const std::string& text) { return redactor.redact(text) != text; };
    const auto refuse = [](const std::string& what) {
        throw RequestError(fmt::format(
            "{} holds the value of a secret, and the runtime keeps that field where any reader of "
            "the box's configuration finds it (docs/design.md §6.3: a secret is never at rest); "
            "pass the value as a secret variable (--secret NAME, or the turn file's \"secrets\") "
            "and refer to $NAME inside the box, e.g. sh -c '... \"$NAME\"'",
            what));
    };
    if (holds(spec.image)) refuse("the image");
    for (std::size_t i = 0; i < spec.argv.size(); ++i)
        if (holds(spec.argv[i])) refuse(fmt::format("argv[{}] (a word of the command)", i));
    for (const auto& e : spec.env) {
        if (holds(e.name))
            refuse(fmt::format("the name of {} variable", e.secret ? "a secret" : "a plain"));
        if (!e.secret && holds(e.value))
            refuse(fmt::format("plain variable '{}' (--env, or the turn file's \"env\")", e.name));
    }
    if (holds(spec.workdir)) refuse("the workdir");
    if (holds(spec.user)) refuse("the box user");
    for (const auto& m : spec.mounts)
        if (holds(m.source) || holds(m.target)) refuse("a mount's path");
    for (const auto& t : spec.tmpfs)
        if (holds(t.target)) refuse("a tmpfs path");
    for (const auto& h : spec.extra_hosts)
        if (holds(h)) refuse("an extra host");
    for (const auto& d : spec.egress)
        if (holds(d)) refuse("an egress destination");
}

} // namespace radial::turn
