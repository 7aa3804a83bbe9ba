#include "turn/turn_secrets.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
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

std::optional<RequestError> secret_name_refusal(const std::string& name,
                                                const std::vector<std::string>& allowed) {
    for (const auto& p : allowed)
        if (::fnmatch(p.c_str(), name.c_str(), 0) == 0) return std::nullopt;
    std::string patterns;
    for (const auto& p : allowed) patterns += (patterns.empty() ? "'" : ", '") + p + "'";
    return RequestError(fmt::format(
        "secret '{}' matches none of run.secretNames ({}): a request may take only the "
        "variables of radiald's environment the operator lets it; name another, or have the "
        "operator add it to run.secretNames",
        name, patterns.empty() ? "none" : patterns));
}

TurnRequest with_secret_values(TurnRequest request, const EnvLookup& lookup, std::string_view fix,
                               const std::vector<std::string>& allowed) {
    for (const auto& name : request.secrets) {
        if (!is_env_name(name))
            throw RequestError(fmt::format(
                "secret '{}' must be a variable NAME matching [A-Za-z_][A-Za-z0-9_]*", name));
        if (auto refusal = secret_name_refusal(name, allowed)) throw *refusal;
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
    // The name of the secret `text` holds ("" when none): the redactor's marker says it.
    const auto held = [&](const std::string& text) -> std::string {
        const std::string masked = redactor.redact(text);
        if (masked == text) return {};
        constexpr std::string_view kMarker = "[REDACTED:";
        const auto at = masked.find(kMarker);
        if (at == std::string::npos) return "?";
        const auto from = at + kMarker.size();
        return masked.substr(from, masked.find(']', from) - from);
    };
    // A value the box's command needs goes as a secret variable; a name or a path holding one is
    // chosen again.
    const auto refuse = [](const std::string& what, const std::string& name, bool a_value) {
        throw RequestError(fmt::format(
            "{} holds the value of secret {}, and the runtime keeps that field where any reader "
            "of the box's configuration finds it (docs/design.md §6.3: a secret is never at "
            "rest); {}",
            what, name,
            !a_value ? std::string("choose one that does not hold it")
            // A managed credential is no variable of the box's: it reads it from its file.
            : name.starts_with("codexAuth.")
                ? std::string("the box reads it from $HOME/.codex/auth.json; leave it out of the "
                              "request")
                : fmt::format("refer to it inside the box as ${0} instead (sh -c '... "
                              "\"${0}\"'), the way a secret variable is given",
                              name)));
    };
    const auto check = [&](const std::string& text, const std::string& what, bool a_value) {
        if (const auto name = held(text); !name.empty()) refuse(what, name, a_value);
    };
    check(spec.image, "the image", false);
    for (std::size_t i = 0; i < spec.argv.size(); ++i)
        check(spec.argv[i], fmt::format("argv[{}] (a word of the command)", i), true);
    for (const auto& e : spec.env) {
        check(e.name, fmt::format("the name of {} variable", e.secret ? "a secret" : "a plain"),
              false);
        if (!e.secret)
            check(e.value,
                  fmt::format("plain variable '{}' (--env, or the turn file's \"env\")", e.name),
                  true);
    }
    check(spec.workdir, "the workdir", false);
    check(spec.user, "the box user", false);
    for (std::size_t i = 0; i < spec.mounts.size(); ++i) {
        const auto what =
            fmt::format("{} (a mount's path)", i == 0 ? std::string("the workspace or first mount")
                                                      : fmt::format("mount {}", i));
        check(spec.mounts[i].source, what, false);
        check(spec.mounts[i].target, what, false);
    }
    for (const auto& t : spec.tmpfs) check(t.target, "a tmpfs path", false);
    for (const auto& h : spec.extra_hosts) check(h, "an extra host", false);
    for (const auto& d : spec.egress) check(d, "an egress destination", false);
}

redaction::Redactor turn_secrets_redactor(const TurnRequest& request,
                                          const redaction::SecretSet& secrets) {
    // The turn's secret variables and its managed auth's tokens, as `secrets` holds them (the
    // same values and minimum); the operator's [redact] extras and other turns' secrets are for
    // masking only, and a common word among them must not refuse a turn.
    redaction::SecretSet own(secrets.min_length());
    for (const auto& s : secrets.secrets()) {
        const bool variable = std::any_of(
            request.env.begin(), request.env.end(),
            [&](const auto& e) { return e.secret && e.name == s.name && e.value == s.value; });
        if (variable || s.name.starts_with("codexAuth.")) own.add(s.name, s.value);
    }
    return redaction::Redactor(own);
}

} // namespace radial::turn
