// plugins/docker/docker_env.h — how a box's environment reaches docker without any value on a
// command line, and without the docker client itself acting on a value meant for the box.
//
// Two ways, chosen by the variable's name (never by its value):
//   - `-e NAME` on the argv, the value in the docker client's environment, from which the CLI
//     copies it (docs/design.md §6.3, C-02). Only for names nothing in the client process
//     interprets.
//   - `--env-file /proc/self/fd/0`, the client's stdin being a sealed memfd holding NAME=value
//     lines, for client-sensitive names (client_sensitive_env): names the dynamic loader, glibc,
//     the Go runtime, the docker CLI or a program it starts (ssh, credential helpers) would act
//     on. There the client keeps radiald's own value, or none.
//
// Rationale: the client runs as radiald's user (often root) on the host. `LD_PRELOAD=/tmp/x.so`
// in its environment runs x.so in a dynamically linked client (Debian's /usr/bin/docker);
// HTTPS_PROXY, SSL_CERT_FILE, DOCKER_HOST or PATH redirect or replace what it talks to and runs.
// docker's env-file cannot carry every value (no newline, no trailing CR, UTF-8 only, lines up to
// 64 KiB), which is why ordinary names keep the client-environment route: a PEM key with newlines
// in GH_APP_KEY still reaches the box.
//
// Pure functions; nothing here reads the process environment. All are thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <radial/container_spec.hpp>
#include <string>
#include <string_view>

namespace radial::docker {

using EnvMap = std::map<std::string, std::string>;

// The environment variables of the parent process the docker client inherits, if set: what the
// CLI needs to find itself, its config and its engine. Nothing else of the parent's reaches it.
inline constexpr std::string_view kClientPassthroughEnv[] = {"PATH",
                                                             "HOME",
                                                             "DOCKER_HOST",
                                                             "DOCKER_CONTEXT",
                                                             "DOCKER_CONFIG",
                                                             "DOCKER_CERT_PATH",
                                                             "DOCKER_TLS_VERIFY",
                                                             "XDG_RUNTIME_DIR"};

// The --env-file argument: the client's own stdin, which `docker run` without -i never reads as
// input. Opening /proc/self/fd/0 reopens the memfd at offset 0.
inline constexpr std::string_view kEnvFilePath = "/proc/self/fd/0";

// The longest NAME=value line docker's env-file reader takes (a bufio.Scanner of 64 KiB, which
// must also hold the newline). Checked against docker 20.10 and 28.
inline constexpr std::size_t kEnvFileLineMax = 65535;

// True when the docker client process would interpret a variable called `name` (compared
// ignoring ASCII case, since Go reads both http_proxy and HTTP_PROXY and a false positive only
// routes a value through the env-file). The set:
//   prefixes LD_ MALLOC_ GLIBC_ LC_ RESOLV_ NIS_ (dynamic loader, glibc), GO (Go runtime:
//   GODEBUG, GOGC, GOMAXPROCS, GOTRACEBACK, GOMEMLIMIT, GOROOT; also GOOGLE_ for credential
//   helpers), DOCKER_ BUILDKIT_ BUILDX_ OTEL_ (the CLI and its telemetry), XDG_, SSL_ OPENSSL_
//   KRB5 SSH_ (TLS, and ssh:// engines), AWS_ AZURE_ CLOUDSDK_ PASSWORD_STORE_ DBUS_
//   (credential helpers the CLI runs to pull);
//   names PATH HOME SHELL USER LOGNAME TMPDIR TZ TZDIR ZONEINFO LANG LANGUAGE NLSPATH LOCPATH
//   GCONV_PATH GETCONF_DIR HOSTALIASES LOCALDOMAIN RES_OPTIONS POSIXLY_CORRECT HTTP_PROXY
//   HTTPS_PROXY NO_PROXY ALL_PROXY FTP_PROXY REQUEST_METHOD SSLKEYLOGFILE DISPLAY GNUPGHOME
//   KUBECONFIG NO_COLOR.
// Source: glibc's unsecvars.h, Go's runtime and net/http docs, docker CLI's environment.
bool client_sensitive_env(std::string_view name) noexcept;

// Why docker's env-file cannot carry `value` for `name` ("contains a newline", "ends with a
// carriage return", "is not valid UTF-8", "with its name is longer than 65535 bytes"), or
// nullopt when it can. Never quotes the value. Source: docker's opts/envfile.go (ScanLines drops a
// trailing CR, the reader refuses invalid UTF-8), checked against docker 20.10 and 28.
std::optional<std::string> env_file_problem(std::string_view name, std::string_view value);

// The env-file for `spec`: one NAME=value line per client-sensitive variable, in spec order, or
// "" when there is none. Expects a spec docker_run_argv accepted; throws
// radial::plugin::Error(RADIAL_E_INVALID) otherwise.
std::string docker_env_file(const ContainerSpec& spec);

// The environment of the docker client process for `spec`: the kClientPassthroughEnv variables
// found in `parent`, then every spec variable whose name is not client-sensitive (this is how
// `-e NAME` gets its value). A client-sensitive spec variable never appears: the client keeps the
// parent's value of it, or none. Source: docs/design.md §6.3 ("-e NAME and inheriting the value"),
// C-02.
EnvMap docker_client_env(const ContainerSpec& spec, const EnvMap& parent);

} // namespace radial::docker
