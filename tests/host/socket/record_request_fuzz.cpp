// tests/host/socket/record_request_fuzz.cpp — libFuzzer target for the turn socket's request
// handling (docs/design.md §9). Built as a real libFuzzer binary with clang, and into a bounded
// driver (record_request_fuzz_main.cpp) that CTest runs in every build.
//
// The input is the raw bytes a box might write to the socket. They go through what the server
// does, minus the I/O: a Beast request_parser with the server's header limit and no body limit,
// the header-stage checks, the body limit, then handle_request. Checks (a failure aborts):
//  - nothing crashes, and every answer is one of the statuses the protocol defines, with a JSON
//    object body that never contains the token;
//  - 201 only when the input carried "Bearer <token>" and a body whose "type" is the turn's type;
//  - the sink is called exactly once for a 201 or a sink-thrown 500, and never otherwise;
//  - a header-stage answer always closes the connection.
#include "record_request_fuzz.h"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "socket/record_request_handler.h"

namespace radial::socket::fuzz {
namespace {

Stats g_stats;

#define FUZZ_CHECK(cond, what)                                                                 \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            std::fprintf(stderr, "record_request_fuzz: check failed: %s (%s)\n", what, #cond); \
            std::abort();                                                                      \
        }                                                                                      \
    } while (0)

namespace http = boost::beast::http;
using json = nlohmann::json;

// Checks every answer, whichever stage produced it.
void check_answer(const HandlerResult& result, int sink_calls) {
    const unsigned status = result.response.result_int();
    const bool known = status == 201 || status == 400 || status == 401 || status == 403 ||
                       status == 404 || status == 405 || status == 413 || status == 431 ||
                       status == 500 || status == 501;
    FUZZ_CHECK(known, "unexpected status");
    ++g_stats.by_status[status];
    const json body = json::parse(result.response.body(), nullptr, false);
    FUZZ_CHECK(body.is_object(), "response body is a JSON object");
    FUZZ_CHECK(body.contains(status == 201 ? "seq" : "error"), "response carries seq or error");
    FUZZ_CHECK(result.response.body().find(kToken) == std::string::npos,
               "response never contains the token");
    FUZZ_CHECK(result.reason.find(kToken) == std::string::npos, "reason never names the token");
    FUZZ_CHECK((status == 201) == result.reason.empty(), "a reason exactly for rejections");
    if (status != 201 && status != 500) FUZZ_CHECK(sink_calls == 0, "sink not called");
}

} // namespace

const Stats& stats() { return g_stats; }

} // namespace radial::socket::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace radial::socket;
    using namespace radial::socket::fuzz;
    namespace asio = boost::asio;
    const std::string_view input(reinterpret_cast<const char*>(data), size);

    int sink_calls = 0;
    bool sink_threw = false;
    std::string sink_type;
    std::string sink_payload;
    const RecordSink sink = [&](std::string_view type, std::string_view payload) -> std::uint64_t {
        ++sink_calls;
        sink_type = type;
        sink_payload = payload;
        FUZZ_CHECK(json::accept(payload), "sink receives valid JSON");
        if (payload.find(kSinkThrowsMarker) != std::string_view::npos) {
            sink_threw = true;
            throw std::runtime_error("journal unavailable");
        }
        return 1;
    };
    const HandlerContext context{kToken, kType, kMaxBodyBytes, &sink};

    // As the server: header limit 8 KiB, no body limit until the header checks have passed.
    http::request_parser<http::string_body> parser;
    parser.header_limit(8 * 1024);
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    boost::beast::error_code ec;
    std::size_t used = 0;
    // Header stage.
    while (!ec && !parser.is_header_done()) {
        const std::size_t n =
            parser.put(asio::buffer(input.data() + used, input.size() - used), ec);
        used += n;
        if (ec == http::error::need_more || (!ec && n == 0)) {
            ++g_stats.incomplete;
            return 0;
        }
    }
    if (ec) {
        // The server answers a malformed or oversized header with 400 / 431 and closes.
        const auto status = ec == http::error::header_limit
                                ? http::status::request_header_fields_too_large
                                : http::status::bad_request;
        check_answer(make_error_result(status, "malformed", 11, false), sink_calls);
        return 0;
    }
    std::optional<std::uint64_t> content_length;
    if (parser.content_length()) content_length = *parser.content_length();
    if (auto rejected = check_request_header(parser.get(), content_length, context)) {
        FUZZ_CHECK(!rejected->response.keep_alive(), "header-stage answers close");
        FUZZ_CHECK(rejected->response.result_int() != 201, "header stage never accepts");
        check_answer(*rejected, sink_calls);
        FUZZ_CHECK(sink_calls == 0, "header-stage rejection never calls the sink");
        return 0;
    }

    // Body stage.
    parser.body_limit(kMaxBodyBytes);
    parser.eager(true);
    while (!ec && !parser.is_done()) {
        const std::size_t n =
            parser.put(asio::buffer(input.data() + used, input.size() - used), ec);
        used += n;
        if (ec == http::error::need_more || (!ec && n == 0)) {
            ++g_stats.incomplete;
            return 0;
        }
    }
    if (ec) {
        const auto status = ec == http::error::body_limit ? http::status::payload_too_large
                                                          : http::status::bad_request;
        check_answer(make_error_result(status, "malformed", 11, false), sink_calls);
        FUZZ_CHECK(sink_calls == 0, "a body the reader refused never reaches the sink");
        return 0;
    }
    FUZZ_CHECK(parser.get().body().size() <= kMaxBodyBytes, "body within the limit");

    const HandlerResult result = handle_request(parser.get(), context);
    check_answer(result, sink_calls);
    const unsigned status = result.response.result_int();
    if (status == 201) {
        FUZZ_CHECK(sink_calls == 1, "201 means exactly one sink call");
        FUZZ_CHECK(sink_type == kType, "the sink only ever gets the turn's type");
        // Independent of the handler: the input carried the token, and the body's type.
        const auto auth = parser.get()[http::field::authorization];
        const std::string_view auth_sv(auth.data(), auth.size());
        FUZZ_CHECK(auth_sv.size() > kToken.size() &&
                       auth_sv.substr(auth_sv.size() - kToken.size()) == kToken,
                   "201 only with the token in Authorization");
        FUZZ_CHECK(input.find(kToken) != std::string_view::npos, "201 only if the input had it");
        const json body = json::parse(parser.get().body(), nullptr, false);
        FUZZ_CHECK(body.is_object() && body.contains("type") && body["type"] == kType &&
                       body.contains("payload"),
                   "201 only for the turn's type with a payload");
        // What reaches the journal is the posted value, keys in posted order.
        const auto posted = nlohmann::ordered_json::parse(parser.get().body(), nullptr, false);
        FUZZ_CHECK(!posted.is_discarded() && posted["payload"].dump() == sink_payload,
                   "the sink gets the posted payload");
        FUZZ_CHECK(json::parse(sink_payload, nullptr, false) == body["payload"],
                   "the stored payload is the posted value");
    } else if (status == 500) {
        FUZZ_CHECK(sink_calls == 1 && sink_threw, "500 only from a throwing sink");
    } else {
        FUZZ_CHECK(sink_calls == 0, "a rejection never calls the sink");
    }
    return 0;
}
