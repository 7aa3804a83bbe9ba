#include "docker_env.h"

#include <radial/plugin/runtime.hpp>

namespace radial::docker {

namespace {

// Grouped by who reads them; see client_sensitive_env's comment for the sources.
// clang-format off
constexpr std::string_view kSensitivePrefixes[] = {
    "LD_", "MALLOC_", "GLIBC_", "LC_", "RESOLV_", "NIS_",          // ld.so, glibc
    "GO",                                                           // Go runtime (and GOOGLE_)
    "DOCKER_", "BUILDKIT_", "BUILDX_", "OTEL_", "XDG_",             // the docker CLI
    "SSL_", "OPENSSL_", "KRB5", "SSH_",                             // TLS, ssh:// engines
    "AWS_", "AZURE_", "CLOUDSDK_", "PASSWORD_STORE_", "DBUS_"};     // credential helpers

constexpr std::string_view kSensitiveNames[] = {
    "PATH", "HOME", "SHELL", "USER", "LOGNAME", "TMPDIR",           // what and where it runs
    "TZ", "TZDIR", "ZONEINFO", "LANG", "LANGUAGE", "NLSPATH",       // glibc, Go time
    "LOCPATH", "GCONV_PATH", "GETCONF_DIR", "POSIXLY_CORRECT",      // glibc
    "HOSTALIASES", "LOCALDOMAIN", "RES_OPTIONS",                    // the resolver
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "FTP_PROXY",
    "REQUEST_METHOD",                                               // Go's proxy selection
    "SSLKEYLOGFILE", "DISPLAY", "GNUPGHOME", "KUBECONFIG", "NO_COLOR"};
// clang-format on

std::string upper(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    return out;
}

// Go's utf8.Valid, which docker's env-file reader applies: no overlong forms, no surrogates,
// nothing above U+10FFFF.
bool valid_utf8(std::string_view s) noexcept {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const auto* end = p + s.size();
    while (p < end) {
        unsigned char c = *p;
        if (c < 0x80) {
            ++p;
            continue;
        }
        std::size_t n;
        unsigned char lo = 0x80, hi = 0xBF; // allowed range of the second byte
        if (c >= 0xC2 && c <= 0xDF) {
            n = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 3;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 4;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else {
            return false;
        }
        if (static_cast<std::size_t>(end - p) < n) return false;
        if (p[1] < lo || p[1] > hi) return false;
        for (std::size_t i = 2; i < n; ++i)
            if (p[i] < 0x80 || p[i] > 0xBF) return false;
        p += n;
    }
    return true;
}

} // namespace

bool client_sensitive_env(std::string_view name) noexcept {
    std::string n;
    try {
        n = upper(name);
    } catch (...) {
        return true; // cannot tell (out of memory): keep the value away from the client
    }
    for (std::string_view prefix : kSensitivePrefixes)
        if (std::string_view(n).starts_with(prefix)) return true;
    for (std::string_view exact : kSensitiveNames)
        if (n == exact) return true;
    return false;
}

std::optional<std::string> env_file_problem(std::string_view name, std::string_view value) {
    if (value.find('\n') != std::string_view::npos) return "contains a newline";
    if (!value.empty() && value.back() == '\r') return "ends with a carriage return";
    if (!valid_utf8(value)) return "is not valid UTF-8";
    if (name.size() + 1 + value.size() > kEnvFileLineMax)
        return "is longer than " + std::to_string(kEnvFileLineMax - name.size() - 1) + " bytes";
    return std::nullopt;
}

std::string docker_env_file(const ContainerSpec& spec) {
    std::string file;
    for (const auto& e : spec.env) {
        if (!client_sensitive_env(e.name)) continue;
        if (env_file_problem(e.name, e.value) || e.name.find_first_of("=\n") != std::string::npos)
            throw radial::plugin::Error(RADIAL_E_INVALID, "env",
                                        "writing the env-file for box '" + spec.label +
                                            "': the value of '" + e.name +
                                            "' cannot be carried; report this bug");
        file += e.name + "=" + e.value + "\n";
    }
    return file;
}

EnvMap docker_client_env(const ContainerSpec& spec, const EnvMap& parent) {
    EnvMap env;
    for (std::string_view name : kClientPassthroughEnv)
        if (auto it = parent.find(std::string(name)); it != parent.end()) env.insert(*it);
    for (const auto& e : spec.env)
        if (!client_sensitive_env(e.name)) env[e.name] = e.value;
    return env;
}

} // namespace radial::docker
