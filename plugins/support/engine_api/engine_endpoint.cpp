#include "engine_api/engine_endpoint.h"

#include <openssl/evp.h>
#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace radial::engine_api {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kDefaultSocket = "unix:///var/run/docker.sock";

std::string env_or_empty(const char* name) {
    const char* v = ::getenv(name);
    return v != nullptr ? std::string(v) : std::string();
}

std::string config_dir(const EngineEnvironment& env) {
    if (!env.docker_config.empty()) return env.docker_config;
    return (fs::path(env.home) / ".docker").string();
}

bool file_exists(const fs::path& p) {
    std::error_code ec;
    return fs::exists(p, ec);
}

// A JSON file, or nullopt when there is none. Throws std::invalid_argument naming it when it
// cannot be read or parsed.
std::optional<nlohmann::json> read_json(const fs::path& file, const std::string& what_for) {
    if (!file_exists(file)) return std::nullopt;
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) throw std::invalid_argument("cannot read '" + file.string() + "' (" + what_for + ")");
    auto j = nlohmann::json::parse(text.str(), nullptr, false);
    if (j.is_discarded() || !j.is_object())
        throw std::invalid_argument("'" + file.string() + "' (" + what_for +
                                    ") is not a JSON object; fix or remove it");
    return j;
}

// Parses `text` from `source`, naming the source in the message.
EngineAddress parse_from(const std::string& text, const std::string& source) {
    try {
        return parse_engine_address(text);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(source + ": " + e.what());
    }
}

// The material in `dir`, as the docker CLI takes it: a missing ca.pem means the system's CAs (the
// caller refuses that for $DOCKER_TLS_VERIFY); a client certificate only with both cert.pem and
// key.pem (a lone one is an error: it is meant).
EngineTls material_in(const fs::path& dir, std::string origin) {
    EngineTls t;
    t.origin = std::move(origin);
    if (file_exists(dir / "ca.pem")) t.ca_file = (dir / "ca.pem").string();
    bool cert = file_exists(dir / "cert.pem"), key = file_exists(dir / "key.pem");
    if (cert != key)
        throw std::invalid_argument("'" + (dir / (cert ? "cert.pem" : "key.pem")).string() + "' (" +
                                    t.origin + ") has no " + (cert ? "key.pem" : "cert.pem") +
                                    " beside it; put the client certificate and its key there "
                                    "together, or neither");
    if (cert) {
        t.cert_file = (dir / "cert.pem").string();
        t.key_file = (dir / "key.pem").string();
    }
    return t;
}

// The address of an explicit host (setting or $DOCKER_HOST), with TLS from $DOCKER_TLS_VERIFY.
EngineAddress explicit_host(const std::string& text, const std::string& source,
                            const EngineEnvironment& env) {
    EngineAddress a = parse_from(text, source);
    if (!a.unix_socket && !env.docker_tls_verify.empty()) {
        fs::path dir = env.docker_cert_path.empty() ? fs::path(config_dir(env))
                                                    : fs::path(env.docker_cert_path);
        std::string origin =
            env.docker_cert_path.empty()
                ? "$DOCKER_TLS_VERIFY is set; no $DOCKER_CERT_PATH, so " + dir.string()
                : "$DOCKER_CERT_PATH " + dir.string();
        a.tls = material_in(dir, origin);
        // As with the docker CLI, verifying needs the CA: never the system's CAs instead.
        if (a.tls->ca_file.empty())
            throw std::invalid_argument(
                source + " '" + text +
                "' is a TLS engine ($DOCKER_TLS_VERIFY is set), but there "
                "is no " +
                (dir / "ca.pem").string() +
                "; put the CA certificate that signed the "
                "engine's certificate there, or point $DOCKER_CERT_PATH at the directory "
                "holding ca.pem, cert.pem and key.pem");
    }
    return a;
}

} // namespace

std::string EngineEnvironment::config_directory() const {
    if (!docker_config.empty()) return docker_config;
    return home.empty() ? std::string() : config_dir(*this);
}

EngineEnvironment EngineEnvironment::of_process() {
    EngineEnvironment e;
    e.docker_host = env_or_empty("DOCKER_HOST");
    e.docker_context = env_or_empty("DOCKER_CONTEXT");
    e.docker_config = env_or_empty("DOCKER_CONFIG");
    e.docker_tls_verify = env_or_empty("DOCKER_TLS_VERIFY");
    e.docker_cert_path = env_or_empty("DOCKER_CERT_PATH");
    e.home = env_or_empty("HOME");
    if (e.home.empty()) {
        long size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
        std::vector<char> buf(size > 0 ? static_cast<std::size_t>(size) : 16384);
        passwd pw{};
        passwd* found = nullptr;
        if (::getpwuid_r(::getuid(), &pw, buf.data(), buf.size(), &found) == 0 && found &&
            found->pw_dir)
            e.home = found->pw_dir;
    }
    return e;
}

std::string context_directory_name(std::string_view name) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(name.data(), name.size(), digest, &len, EVP_sha256(), nullptr) != 1)
        throw std::invalid_argument("docker context '" + std::string(name) +
                                    "': OpenSSL's SHA-256 of its name failed, so its directory "
                                    "under contexts/ cannot be found");
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (unsigned i = 0; i < len; ++i) {
        out.push_back(hex[digest[i] >> 4]);
        out.push_back(hex[digest[i] & 15]);
    }
    return out;
}

ResolvedEngine resolve_engine(std::string_view configured, std::string_view setting,
                              const EngineEnvironment& env) {
    if (!configured.empty()) {
        try {
            return {explicit_host(std::string(configured), std::string(setting), env),
                    std::string(setting)};
        } catch (const std::invalid_argument& e) {
            // Whoever reports a setting's error names its key (the host: "<file>:<line>:
            // run.docker.host: …"); a second "run.docker.host: " would only repeat it.
            const std::string message = e.what(), own = std::string(setting) + ": ";
            if (message.rfind(own, 0) != 0) throw;
            throw std::invalid_argument(message.substr(own.size()));
        }
    }
    if (!env.docker_host.empty())
        return {explicit_host(env.docker_host, "$DOCKER_HOST", env), "$DOCKER_HOST"};

    // The docker context, as the docker CLI picks it: $DOCKER_CONTEXT, else config.json's
    // currentContext (docs/design.md §13.10).
    const fs::path dir = config_dir(env);
    std::string name = env.docker_context, chosen_by = "$DOCKER_CONTEXT";
    if (name.empty()) {
        const fs::path config = dir / "config.json";
        if (auto j = read_json(config, "the docker CLI's configuration")) {
            auto it = j->find("currentContext");
            if (it != j->end() && it->is_string()) name = it->get<std::string>();
            chosen_by = "currentContext in " + config.string();
        }
    }
    if (name.empty() || name == "default")
        return {parse_engine_address(kDefaultSocket), "the default socket"};

    const std::string source = "docker context '" + name + "' (" + chosen_by + ")";
    const std::string hash = context_directory_name(name);
    const fs::path meta_file = dir / "contexts" / "meta" / hash / "meta.json";
    auto meta = read_json(meta_file, source);
    if (!meta)
        throw std::invalid_argument(source + " does not exist: there is no " + meta_file.string() +
                                    "; `docker context ls` lists the contexts, `docker context "
                                    "use default` goes back to the default engine");
    nlohmann::json endpoint = nlohmann::json::object();
    if (auto e = meta->find("Endpoints"); e != meta->end() && e->is_object())
        if (auto d = e->find("docker"); d != e->end() && d->is_object()) endpoint = *d;
    std::string host = endpoint.value("Host", std::string());
    bool skip_verify = endpoint.value("SkipTLSVerify", false);
    if (host.empty())
        throw std::invalid_argument(source + " names no engine (" + meta_file.string() +
                                    " has no Endpoints.docker.Host); recreate it with `docker "
                                    "context create <name> --docker host=...`");
    EngineAddress a = parse_from(host, source + ", " + meta_file.string());
    if (!a.unix_socket) {
        const fs::path tls_dir = dir / "contexts" / "tls" / hash / "docker";
        EngineTls t = material_in(tls_dir, source + ", " + tls_dir.string());
        // A context without TLS material speaks plain tcp, as with the docker CLI.
        if (!t.ca_file.empty() || !t.cert_file.empty() || skip_verify) {
            t.skip_verify = skip_verify;
            a.tls = std::move(t);
        }
    }
    return {std::move(a), source};
}

} // namespace radial::engine_api
