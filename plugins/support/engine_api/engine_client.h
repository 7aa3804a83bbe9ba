// plugins/support/engine_api/engine_client.h — a small Docker Engine API client: HTTP/1.1 over the
// engine's unix socket or tcp:// (plain or TLS), API version negotiation, one deadline on every
// call, JSON bodies, and streamed responses (logs, attach; see stream_frames.h for their framing).
// Which engine, and with which TLS material: engine_endpoint.h.
//
// Boost.Beast stays inside engine_client.cpp, so that including this header costs a plugin's
// other translation units nothing but nlohmann/json.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace radial::engine_api {

using Clock = std::chrono::steady_clock;

// The TLS material of a tcp:// engine (docs/design.md §13.10). Paths of PEM files.
struct EngineTls {
    std::string ca_file;      // the CA the engine's certificate must chain to; empty: the system's
    std::string cert_file;    // the client certificate sent to the engine; empty: none
    std::string key_file;     // its private key; empty exactly when cert_file is
    bool skip_verify = false; // a context's SkipTLSVerify: the engine's certificate is not checked
    std::string origin;       // where the material came from, for messages ("$DOCKER_CERT_PATH")
};

// Where the engine listens: "unix:///var/run/docker.sock" or "tcp://127.0.0.1:2376".
struct EngineAddress {
    bool unix_socket = true;
    std::string path;             // unix: the socket's path
    std::string host;             // tcp: a host name or literal address
    std::string port;             // tcp: the port
    std::string text;             // as the operator wrote it, for messages
    std::optional<EngineTls> tls; // tcp: speak TLS with this material; never set for unix
};

// Parses an engine address (unix:///path or tcp://host:port; TLS is set apart, by
// resolve_engine). Throws std::invalid_argument with a message saying which forms are accepted.
// Pure.
EngineAddress parse_engine_address(std::string_view text);

// An Engine API version such as 1.41.
struct ApiVersion {
    int major = 0;
    int minor = 0;
    std::string text() const { return std::to_string(major) + "." + std::to_string(minor); }
    friend auto operator<=>(const ApiVersion&, const ApiVersion&) = default;
};

// Parses "1.41"; std::nullopt for anything else. Pure.
std::optional<ApiVersion> parse_api_version(std::string_view text) noexcept;

// The oldest Engine API this client speaks (Docker Engine 20.10, Debian 12's docker.io): swarm
// jobs, Pids limits and CapabilityDrop need it.
inline constexpr ApiVersion kMinApiVersion{1, 41};
// The newest it asks for; a newer engine is spoken to at this version. Kept at the version every
// request here was tested against: a field a newer API adds (e.g. a service's
// Privileges.NoNewPrivileges) is used only once it is tested, never sent hoping an engine knows it.
inline constexpr ApiVersion kMaxApiVersion{1, 41};

// A failed call. what() names the call ("creating service for box 'x': POST /services/create"),
// the cause and, where known, the fix. `status` is the HTTP status, 0 when the engine never
// answered; `timed_out` is true when the call's deadline passed.
class EngineError : public std::runtime_error {
public:
    EngineError(const std::string& message, unsigned status, bool timed_out)
        : std::runtime_error(message), status_(status), timed_out_(timed_out) {}
    unsigned status() const noexcept { return status_; }
    bool timed_out() const noexcept { return timed_out_; }
    bool unreachable() const noexcept { return status_ == 0 && !timed_out_; }

private:
    unsigned status_;
    bool timed_out_;
};

struct Response {
    unsigned status = 0;
    std::string body;
};

// An open streamed response (GET …/logs?follow=1). Reads on one thread; stop() from any.
class Stream {
public:
    struct Impl;
    explicit Stream(std::unique_ptr<Impl> impl);
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    // Blocks until the next piece of the body arrives and replaces `chunk` with it. False when
    // the body ended or stop() was called. Throws EngineError when the connection fails.
    bool read(std::string& chunk);
    // Makes a blocked or later read() return false. [thread-safe] Never blocks.
    void stop() noexcept;
    // Sends `bytes` on a hijacked stream (open_hijacked: what the engine hands to the container's
    // stdin), all of them, within `budget`. Throws EngineError when the connection fails or the
    // budget passes, std::logic_error on a stream that is not hijacked. Not while another thread
    // reads the stream.
    void write(std::string_view bytes, std::chrono::milliseconds budget);

private:
    std::unique_ptr<Impl> impl_;
};

// One engine. Each call opens its own connection (close-on-exec, closed when the call returns),
// so calls from several threads never share a socket. [thread-safe]
class EngineClient {
public:
    // `call_budget`: the deadline of every call, from connect to the last byte of the response
    // (over TLS the handshake included). Loads the address's TLS material, if any, at once:
    // throws std::invalid_argument naming the file that cannot be read or does not fit (a key
    // that is not the certificate's) and what to do. Contacts nothing.
    EngineClient(EngineAddress address, std::chrono::milliseconds call_budget);
    ~EngineClient();

    const EngineAddress& address() const noexcept { return address_; }
    std::chrono::milliseconds call_budget() const noexcept { return budget_; }

    // Negotiates the API version once (GET /_ping's API-Version header, else GET /version's
    // ApiVersion, as the docker CLI does): the engine's version capped at
    // kMaxApiVersion. Throws EngineError when the engine cannot be reached or speaks less than
    // kMinApiVersion (naming both versions). A failure is not cached.
    ApiVersion version();

    // Asks the engine again (as version() does, within `budget`, whatever was negotiated before)
    // and keeps the answer: a health probe that never trusts an earlier success. Throws as
    // version().
    ApiVersion probe(std::chrono::milliseconds budget);

    // One versioned request ("/v1.41" + target): `method` "GET", "POST", "DELETE"; `body` JSON text
    // or empty. Returns whatever status the engine answered. `what` names the call for messages
    // ("creating the service of box 'x'"). Throws EngineError on a transport failure or timeout.
    Response request(std::string_view method, const std::string& target, const std::string& body,
                     const std::string& what);
    // The same within `budget` instead of call_budget().
    Response request(std::string_view method, const std::string& target, const std::string& body,
                     const std::string& what, std::chrono::milliseconds budget);

    // request() that requires a 2xx answer and returns its JSON body (null for an empty body).
    // Throws EngineError with the engine's own "message" for any other status.
    nlohmann::json call(std::string_view method, const std::string& target,
                        const nlohmann::json* body, const std::string& what);

    // Opens a streamed GET. The deadline covers connecting and the response header only; the body
    // is read until it ends or Stream::stop(). Throws EngineError for a non-2xx answer.
    std::unique_ptr<Stream> open_stream(const std::string& target, const std::string& what);

    // Opens a hijacked POST (`Upgrade: tcp`, as POST /containers/{id}/attach wants): after the
    // engine's 101 (or 200) header every byte on the connection is the raw multiplexed stream
    // (stream_frames.h), read with Stream::read until the engine closes it or Stream::stop().
    // The deadline covers connecting and the response header only. Throws EngineError for any
    // other status (404: no such container) and as request() does. A non-empty `body` is sent as
    // JSON (POST /exec/{id}/start wants one).
    std::unique_ptr<Stream> open_hijacked(const std::string& target, const std::string& what,
                                          const std::string& body = {});

private:
    std::string versioned(const std::string& target);
    ApiVersion negotiate(std::chrono::milliseconds budget);
    std::unique_ptr<Stream> open(bool hijack, const std::string& target, const std::string& what,
                                 const std::string& body = {});

    struct TlsContext; // the loaded OpenSSL context, shared read-only by every connection

    EngineAddress address_;
    std::chrono::milliseconds budget_;
    std::unique_ptr<TlsContext> tls_;
    std::mutex mutex_;
    std::optional<ApiVersion> version_;
};

// The engine's own message from an error body ({"message": "..."}), else the body itself cut to
// 500 bytes. Pure.
std::string engine_message(std::string_view body);

// Percent-encodes `s` for a URL query value. Pure.
std::string url_encode(std::string_view s);

// Base64 (standard alphabet, padded), as the API wants secret data. Pure.
std::string base64_encode(std::string_view bytes);

} // namespace radial::engine_api
