// host/socket/record_request_handler.cpp — see record_request_handler.h.
#include "socket/record_request_handler.h"

#include <algorithm>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/verb.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "socket/socket_error.h"
#include "socket/turn_token.h"
#include "text/exact_json.h"

namespace radial::socket {

namespace {

using json = nlohmann::json;
// Keeps the keys in the order they were posted, so the stored payload is the posted value.
using ordered_json = nlohmann::ordered_json;

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
// scheme. The scheme is case-insensitive (docs/design.md §9.5); Beast has already trimmed the
// value.
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

// Whether a JSON number as written (`raw`, RFC 8259 grammar) has the same decimal value as
// `shortest`, the text the journal would store. Both are compared as sign, significant digits and
// decimal exponent, so "1.10", "1E2" and "100.0" are equal and "0.30000000000000001" is not "0.3".
bool same_decimal(std::string_view raw, std::string_view shortest) {
    struct Decimal {
        bool negative = false;
        std::string digits;     // significant digits, no leading or trailing zeros; empty for zero
        long long exponent = 0; // value = 0.digits * 10^exponent
    };
    auto normalise = [](std::string_view text) {
        Decimal d;
        std::size_t i = 0;
        if (i < text.size() && text[i] == '-') d.negative = true, ++i;
        long long point = 0; // digits before the decimal point
        bool after_point = false;
        for (; i < text.size() && text[i] != 'e' && text[i] != 'E'; ++i) {
            const char c = text[i];
            if (c == '.') {
                after_point = true;
                continue;
            }
            if (!after_point) ++point;
            d.digits.push_back(c);
        }
        long long exp = 0;
        if (i < text.size()) {
            ++i;
            bool exp_negative = false;
            if (i < text.size() && (text[i] == '+' || text[i] == '-'))
                exp_negative = text[i++] == '-';
            for (; i < text.size(); ++i)
                exp = std::min<long long>(exp * 10 + (text[i] - '0'), 1'000'000'000);
            if (exp_negative) exp = -exp;
        }
        const auto first = d.digits.find_first_not_of('0');
        if (first == std::string::npos) return Decimal{}; // zero, whatever its sign
        point -= static_cast<long long>(first);
        d.digits.erase(0, first);
        d.digits.erase(d.digits.find_last_not_of('0') + 1);
        d.exponent = point + exp;
        return d;
    };
    const Decimal a = normalise(raw), b = normalise(shortest);
    return a.negative == b.negative && a.digits == b.digits && a.exponent == b.exponent;
}

// A first pass over the body that builds nothing: it refuses what the stored record could not
// hold exactly, so that a record is journaled as the value posted or not at all. Iterative (SAX),
// so a deeply nested body cannot overflow the stack.
class StrictJsonCheck final : public nlohmann::json_sax<json> {
public:
    // Empty when the body is acceptable; otherwise the reason for the 400, fixed wording only.
    std::string reason;

    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t value, const string_t& raw) override {
        // The parser falls back to a double for integers beyond 64 bits and for every fraction;
        // the journal stores that double's shortest form, so the two must be the same number.
        if (!std::isfinite(value) || !same_decimal(raw, json(value).dump()))
            return refuse(
                "a number in the body cannot be stored exactly (out of range, or more digits "
                "than a 64-bit float holds); send it as a string");
        return true;
    }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override {
        if (!enter()) return false;
        keys_.emplace_back();
        return true;
    }
    bool key(string_t& name) override {
        if (!keys_.back().insert(name).second)
            return refuse("duplicate object key in the body; every key may appear once per object");
        if (keys_.back().size() > kMaxObjectKeys)
            return refuse("an object in the body has more than " + std::to_string(kMaxObjectKeys) +
                          " keys");
        return true;
    }
    bool end_object() override {
        keys_.pop_back();
        --depth_;
        return true;
    }
    bool start_array(std::size_t) override { return enter(); }
    bool end_array() override {
        --depth_;
        return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
        return refuse("body is not valid JSON");
    }

private:
    bool enter() {
        if (++depth_ > kMaxJsonDepth)
            return refuse("body nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
        return true;
    }
    bool refuse(std::string why) {
        if (reason.empty()) reason = std::move(why);
        return false;
    }

    int depth_ = 0;
    std::vector<std::unordered_set<std::string>> keys_; // the keys seen in each open object
};

// What a Transfer-Encoding the reader could decode looks like: exactly one field, exactly
// "chunked". Anything else ("gzip", "gzip, chunked", "identity") would leave the body undecoded
// or mis-framed.
bool plain_chunked_or_absent(const http::request_header<>& header) {
    std::size_t fields = 0;
    bool plain = true;
    for (const auto& field : header) {
        if (field.name() != http::field::transfer_encoding) continue;
        ++fields;
        std::string_view value(field.value().data(), field.value().size());
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
            value.remove_prefix(1);
        while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
            value.remove_suffix(1);
        if (!boost::beast::iequals(boost::beast::string_view(value.data(), value.size()),
                                   "chunked"))
            plain = false;
    }
    return fields == 0 || (fields == 1 && plain);
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

bool presents_valid_token(const http::request_header<>& header, const HandlerContext& context) {
    const std::string_view presented = presented_token(header);
    // An empty configured token must not be matched by an empty presented one.
    return !context.token.empty() && !presented.empty() && token_equals(presented, context.token);
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
    if (!presents_valid_token(header, context))
        return make_error_result(http::status::unauthorized,
                                 "missing or wrong bearer token; send 'Authorization: Bearer "
                                 "<the turn token>'",
                                 version, false);
    if (!plain_chunked_or_absent(header))
        return make_error_result(http::status::not_implemented,
                                 "Transfer-Encoding other than a single 'chunked' is not "
                                 "supported; send Content-Length or 'Transfer-Encoding: chunked'",
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

    StrictJsonCheck check;
    json::sax_parse(request.body(), &check);
    if (!check.reason.empty()) return bad_request(std::move(check.reason));
    const ordered_json body = ordered_json::parse(request.body(), nullptr, false);
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
        // Written back as posted: a "-0" stays "-0" (text/exact_json.h).
        payload_json = text::dump_exact(*payload);
    } catch (const ordered_json::exception&) {
        // The parser already rejects ill-formed UTF-8; this is the belt to its braces.
        return bad_request("payload is not valid UTF-8");
    }

    std::uint64_t seq = 0;
    try {
        if (context.sink == nullptr || !*context.sink) throw std::bad_function_call();
        seq = (*context.sink)(context.record_type, payload_json);
    } catch (const RecordQuotaError& e) {
        return make_error_result(http::status::insufficient_storage, e.what(), version, keep_alive);
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
