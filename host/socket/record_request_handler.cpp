// host/socket/record_request_handler.cpp — see record_request_handler.h.
#include "socket/record_request_handler.h"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/verb.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "socket/socket_error.h"
#include "socket/turn_token.h"

namespace radial::socket {

namespace {

using json = nlohmann::json;

HandlerResult json_result(http::status status, const json& body, unsigned version,
                          bool keep_alive) {
    HandlerResult result;
    auto& res = result.response;
    res.result(status);
    res.version(version);
    res.set(http::field::content_type, "application/json");
    res.keep_alive(keep_alive);
    // replace: never throw on bytes that are not UTF-8 (the reasons are ours, but be total).
    res.body() = body.dump(-1, ' ', false, json::error_handler_t::replace);
    res.prepare_payload();
    return result;
}

// The token presented as `Bearer <token>`, or empty when the header is absent or uses another
// scheme. The scheme is case-insensitive (RFC 7235 §2.1); Beast has already trimmed the value.
std::string_view presented_token(const http::request_header<>& header) {
    const auto it = header.find(http::field::authorization);
    if (it == header.end()) return {};
    const std::string_view value(it->value().data(), it->value().size());
    constexpr std::string_view kScheme = "Bearer";
    if (value.size() <= kScheme.size() ||
        !boost::beast::iequals(boost::beast::string_view(value.data(), kScheme.size()),
                               boost::beast::string_view(kScheme.data(), kScheme.size())))
        return {};
    std::string_view rest = value.substr(kScheme.size());
    if (rest.front() != ' ') return {}; // "Bearerxyz" is not the Bearer scheme
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    return rest;
}

// Parses `body`, refusing nesting deeper than kMaxJsonDepth without building the deep part.
// Returns a discarded value when the body is not JSON; sets `too_deep` when it was refused.
json parse_bounded(const std::string& body, bool& too_deep) {
    too_deep = false;
    const json::parser_callback_t limit_depth = [&too_deep](int depth, json::parse_event_t event,
                                                            json&) {
        if ((event == json::parse_event_t::object_start ||
             event == json::parse_event_t::array_start) &&
            depth >= kMaxJsonDepth) {
            too_deep = true;
            return false; // skip the container: nothing below it is built
        }
        return true;
    };
    return json::parse(body, limit_depth, /*allow_exceptions=*/false);
}

} // namespace

HandlerResult make_error_result(http::status status, std::string reason, unsigned version,
                                bool keep_alive) {
    HandlerResult result = json_result(status, json{{"error", reason}}, version, keep_alive);
    if (status == http::status::method_not_allowed) result.response.set(http::field::allow, "POST");
    if (status == http::status::unauthorized)
        result.response.set(http::field::www_authenticate, "Bearer");
    result.reason = std::move(reason);
    return result;
}

std::optional<HandlerResult> check_request_header(const http::request_header<>& header,
                                                  std::optional<std::uint64_t> content_length,
                                                  const HandlerContext& context) {
    const unsigned version = header.version();
    const std::string_view target(header.target().data(), header.target().size());
    if (target != kRecordsTarget)
        return make_error_result(http::status::not_found,
                                 "no such endpoint; the turn socket serves POST /v1/records",
                                 version, false);
    if (header.method() != http::verb::post)
        return make_error_result(http::status::method_not_allowed,
                                 "method not allowed on /v1/records; use POST", version, false);
    const std::string_view presented = presented_token(header);
    // An empty configured token must not be matched by an empty presented one.
    if (context.token.empty() || presented.empty() || !token_equals(presented, context.token))
        return make_error_result(http::status::unauthorized,
                                 "missing or wrong bearer token; send 'Authorization: Bearer "
                                 "<the turn token>'",
                                 version, false);
    if (content_length && *content_length > context.max_body_bytes)
        return make_error_result(
            http::status::payload_too_large,
            "request body over the limit of " + std::to_string(context.max_body_bytes) + " bytes",
            version, false);
    return std::nullopt;
}

HandlerResult handle_request(const http::request<http::string_body>& request,
                             const HandlerContext& context) {
    if (auto rejected = check_request_header(request, request.body().size(), context))
        return std::move(*rejected);

    const unsigned version = request.version();
    const bool keep_alive = request.keep_alive();
    auto bad_request = [&](std::string reason) {
        return make_error_result(http::status::bad_request, std::move(reason), version, keep_alive);
    };

    bool too_deep = false;
    const json body = parse_bounded(request.body(), too_deep);
    if (too_deep)
        return bad_request("body nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    if (body.is_discarded()) return bad_request("body is not valid JSON");
    if (!body.is_object())
        return bad_request(R"(body must be a JSON object {"type": ..., "payload": ...})");
    const auto type = body.find("type");
    if (type == body.end() || !type->is_string())
        return bad_request(R"(field "type" is missing or not a string)");
    const auto payload = body.find("payload");
    if (payload == body.end()) return bad_request(R"(field "payload" is missing)");

    if (type->get_ref<const std::string&>() != context.record_type)
        return make_error_result(http::status::forbidden,
                                 "record type not allowed; this turn may only write records of "
                                 "type '" +
                                     std::string(context.record_type) + "'",
                                 version, keep_alive);

    std::string payload_json;
    try {
        payload_json = payload->dump();
    } catch (const json::exception&) {
        // The parser already rejects ill-formed UTF-8; this is the belt to its braces.
        return bad_request("payload is not valid UTF-8");
    }

    std::uint64_t seq = 0;
    try {
        if (context.sink == nullptr || !*context.sink) throw std::bad_function_call();
        seq = (*context.sink)(context.record_type, payload_json);
    } catch (const StorageError&) {
        return make_error_result(http::status::insufficient_storage,
                                 "the record could not be stored: the host's storage is full or "
                                 "failing; it was not kept",
                                 version, keep_alive);
    } catch (...) {
        // Generic on purpose: the exception text may name host paths or journal internals.
        return make_error_result(http::status::internal_server_error,
                                 "internal error while storing the record", version, keep_alive);
    }
    return json_result(http::status::created, json{{"seq", seq}}, version, keep_alive);
}

} // namespace radial::socket
