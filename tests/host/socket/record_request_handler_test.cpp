// tests/host/socket/record_request_handler_test.cpp — the turn socket's decision table as pure
// functions, no sockets (docs/design.md §9).
#include "socket/record_request_handler.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "socket/socket_error.h"

namespace radial::socket {
namespace {

using nlohmann::json;

const std::string kToken(64, 'c');
const std::string kType = "turn.result";

class RecordRequestHandler : public ::testing::Test {
protected:
    HandlerContext context() const { return {kToken, kType, 256, &sink_}; }

    static http::request<http::string_body> post(std::string body,
                                                 std::string auth = "Bearer " + kToken) {
        http::request<http::string_body> req{http::verb::post, "/v1/records", 11};
        req.set(http::field::host, "turn");
        if (!auth.empty()) req.set(http::field::authorization, auth);
        req.body() = std::move(body);
        req.prepare_payload();
        return req;
    }

    HandlerResult handle(const http::request<http::string_body>& req) {
        return handle_request(req, context());
    }

    static json body_of(const HandlerResult& r) { return json::parse(r.response.body()); }

    std::vector<std::pair<std::string, std::string>> records_;
    bool sink_throws_ = false;
    bool sink_full_ = false;
    bool sink_over_quota_ = false;
    RecordSink sink_ = [this](std::string_view type, std::string_view payload) -> std::uint64_t {
        if (sink_throws_) throw std::runtime_error("journal /var/lib/radial/j.db is locked");
        if (sink_over_quota_)
            throw RecordQuotaError("this turn has posted run.maxRecordsPerTurn (3) records");
        if (sink_full_)
            throw StorageError("journal /var/lib/radial/j.db: database or disk is full");
        records_.emplace_back(type, payload);
        return records_.size() + 41;
    };
};

TEST_F(RecordRequestHandler, AcceptedRecordReachesTheSinkAndReturnsItsSeq) {
    const auto r = handle(post(R"({"type":"turn.result","payload":{"ok":true,"n":[1,2]}})"));
    EXPECT_EQ(r.response.result(), http::status::created);
    EXPECT_EQ(body_of(r), (json{{"seq", 42}}));
    EXPECT_EQ(r.response[http::field::content_type], "application/json");
    EXPECT_TRUE(r.reason.empty());
    EXPECT_TRUE(r.response.keep_alive());
    ASSERT_EQ(records_.size(), 1u);
    EXPECT_EQ(records_[0].first, kType);
    EXPECT_EQ(json::parse(records_[0].second), (json{{"ok", true}, {"n", {1, 2}}}));
}

TEST_F(RecordRequestHandler, NullPayloadIsStillAPayload) {
    const auto r = handle(post(R"({"type":"turn.result","payload":null})"));
    EXPECT_EQ(r.response.result(), http::status::created);
    ASSERT_EQ(records_.size(), 1u);
    EXPECT_EQ(records_[0].second, "null");
}

// A posted -0 is stored as posted (docs/design.md §9.5): the parser reads it as a signed zero,
// which nlohmann's writer would print as 0. Every other number keeps its stored form.
TEST_F(RecordRequestHandler, ANegativeZeroIsStoredAsPosted) {
    auto r = handle(post(R"({"type":"turn.result","payload":-0})"));
    EXPECT_EQ(r.response.result(), http::status::created);
    r = handle(post(R"({"type":"turn.result","payload":{"a":[-0,0,-0.0,0.0,-1,1e2],"-0":-0}})"));
    EXPECT_EQ(r.response.result(), http::status::created);
    ASSERT_EQ(records_.size(), 2u);
    EXPECT_EQ(records_[0].second, "-0");
    EXPECT_EQ(records_[1].second, R"({"a":[-0,0,-0.0,0.0,-1,100.0],"-0":-0})");
}

TEST_F(RecordRequestHandler, BearerSchemeIsCaseInsensitive) {
    EXPECT_EQ(
        handle(post(R"({"type":"turn.result","payload":1})", "bearer " + kToken)).response.result(),
        http::status::created);
}

TEST_F(RecordRequestHandler, UnknownPathIs404BeforeAnythingElse) {
    auto req = post("not json", "");
    req.method(http::verb::get);
    req.target("/v1/other");
    const auto r = handle(req);
    EXPECT_EQ(r.response.result(), http::status::not_found);
    EXPECT_NE(r.reason.find("POST /v1/records"), std::string::npos);
    EXPECT_FALSE(r.response.keep_alive());
}

TEST_F(RecordRequestHandler, QueryStringIsAnotherPath) {
    auto req = post(R"({"type":"turn.result","payload":1})");
    req.target("/v1/records?x=1");
    EXPECT_EQ(handle(req).response.result(), http::status::not_found);
}

TEST_F(RecordRequestHandler, OtherMethodIs405WithAllowPost) {
    auto req = post("", "");
    req.method(http::verb::get);
    const auto r = handle(req);
    EXPECT_EQ(r.response.result(), http::status::method_not_allowed);
    EXPECT_EQ(r.response[http::field::allow], "POST");
}

TEST_F(RecordRequestHandler, MissingTokenIs401WithWwwAuthenticate) {
    const auto r = handle(post(R"({"type":"turn.result","payload":1})", ""));
    EXPECT_EQ(r.response.result(), http::status::unauthorized);
    EXPECT_EQ(r.response[http::field::www_authenticate], "Bearer");
    EXPECT_EQ(body_of(r).at("error"), r.reason);
}

TEST_F(RecordRequestHandler, WrongTokensAre401) {
    const std::string body = R"({"type":"turn.result","payload":1})";
    for (const std::string& auth :
         {"Bearer " + std::string(64, 'd'), "Bearer " + kToken.substr(1), "Bearer " + kToken + "c",
          "Basic " + kToken, "Bearer" + kToken, std::string("Bearer "), kToken}) {
        const auto r = handle(post(body, auth));
        EXPECT_EQ(r.response.result(), http::status::unauthorized) << "Authorization: " << auth;
    }
    EXPECT_TRUE(records_.empty());
}

TEST_F(RecordRequestHandler, EmptyConfiguredTokenRefusesEveryone) {
    HandlerContext ctx = context();
    ctx.token = "";
    EXPECT_EQ(handle_request(post(R"({"type":"turn.result","payload":1})", "Bearer "), ctx)
                  .response.result(),
              http::status::unauthorized);
}

TEST_F(RecordRequestHandler, AuthenticationIsCheckedBeforeSize) {
    const auto r = handle(post(std::string(1000, 'x'), "Bearer wrong"));
    EXPECT_EQ(r.response.result(), http::status::unauthorized);
}

TEST_F(RecordRequestHandler, HeaderStageRefusesAnnouncedOversizeBody) {
    auto req = post("");
    const auto over = check_request_header(req, 257, context());
    ASSERT_TRUE(over.has_value());
    EXPECT_EQ(over->response.result(), http::status::payload_too_large);
    EXPECT_NE(over->reason.find("256 bytes"), std::string::npos);
    EXPECT_FALSE(over->response.keep_alive());
    EXPECT_FALSE(check_request_header(req, 256, context()).has_value());
    EXPECT_FALSE(check_request_header(req, std::nullopt, context()).has_value());
}

TEST_F(RecordRequestHandler, OversizeBodyIs413) {
    const auto r =
        handle(post(R"({"type":"turn.result","payload":")" + std::string(300, 'x') + "\"}"));
    EXPECT_EQ(r.response.result(), http::status::payload_too_large);
    EXPECT_TRUE(records_.empty());
}

TEST_F(RecordRequestHandler, MalformedBodiesAre400) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "not valid JSON"},
        {"{", "not valid JSON"},
        {R"({"type":"turn.result","payload":1} trailing)", "not valid JSON"},
        {"[1,2]", "must be a JSON object"},
        {R"("turn.result")", "must be a JSON object"},
        {R"({"payload":1})", R"("type" is missing)"},
        {R"({"type":7,"payload":1})", R"("type" is missing or not a string)"},
        {R"({"type":"turn.result"})", R"("payload" is missing)"},
        {std::string(100, '[') + std::string(100, ']'), "nested deeper than 64"},
        {R"({"type":"turn.result","payload":)" + std::string(70, '[') + std::string(70, ']') + "}",
         "nested deeper"},
        {"{" + std::string(70, '{'), "not valid JSON"}, // keys must be strings: fails first
    };
    for (const auto& [body, why] : cases) {
        const auto r = handle(post(body));
        EXPECT_EQ(r.response.result(), http::status::bad_request) << body;
        EXPECT_NE(r.reason.find(why), std::string::npos) << body << " → " << r.reason;
        EXPECT_TRUE(r.response.keep_alive()) << "the body was read; the stream is reusable";
    }
    EXPECT_TRUE(records_.empty());
}

// What is journaled is exactly what was posted, or it is refused: a duplicate key anywhere would
// be silently dropped by the parser, so it is a 400.
TEST_F(RecordRequestHandler, DuplicateKeysAnywhereAre400) {
    for (const std::string& body : std::vector<std::string>{
             R"({"type":"turn.result","payload":1,"payload":2})",
             R"({"type":"turn.result","type":"turn.result","payload":1})",
             R"({"type":"turn.result","payload":{"a":1,"b":{"c":1,"c":1}}})",
             R"({"type":"turn.result","payload":[{"a":1},{"x":true,"x":false}]})",
             R"({"type":"turn.result","payload":{"\u0061":1,"a":2}})",
         }) {
        const auto r = handle(post(body));
        EXPECT_EQ(r.response.result(), http::status::bad_request) << body;
        EXPECT_NE(r.reason.find("duplicate object key"), std::string::npos) << r.reason;
    }
    EXPECT_TRUE(records_.empty());
    // The same key in different objects is fine.
    EXPECT_EQ(handle(post(R"({"type":"turn.result","payload":[{"a":1},{"a":2},{"b":{"a":3}}]})"))
                  .response.result(),
              http::status::created);
}

// Numbers the stored record could not hold exactly are refused rather than rewritten (an integer
// beyond 64 bits would become an approximate float, 1e400 would become null).
TEST_F(RecordRequestHandler, NumbersThatCannotBeStoredExactlyAre400) {
    for (const std::string number :
         {"12345678901234567890123", "-98765432109876543210", "1e400", "-1e400", "1e-400",
          "3.14159265358979323846", "0.30000000000000001", "18446744073709551616"}) {
        const auto r = handle(post(R"({"type":"turn.result","payload":{"n":)" + number + "}}"));
        EXPECT_EQ(r.response.result(), http::status::bad_request) << number;
        // The parser itself refuses a float overflow ("number overflow").
        if (number.find("e400") == std::string::npos || number == "1e-400") {
            EXPECT_NE(r.reason.find("cannot be stored exactly"), std::string::npos) << r.reason;
        }
        EXPECT_EQ(r.reason.find(number), std::string::npos) << "client text is never echoed";
    }
    EXPECT_TRUE(records_.empty());
}

// Accepted records keep their value: every number as posted (in its shortest spelling), keys in
// posted order, strings as posted.
TEST_F(RecordRequestHandler, AcceptedPayloadIsTheValuePostedInItsOrder) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"({"b":1,"a":2,"c":{"z":0,"y":1}})", R"({"b":1,"a":2,"c":{"z":0,"y":1}})"},
        {"18446744073709551615", "18446744073709551615"},
        {"-9223372036854775808", "-9223372036854775808"},
        {"[0.1, 1.10, 1E2, 2.5e-3, -0.0, 0, -0, 1e22]", "[0.1,1.1,100.0,0.0025,-0.0,0,-0,1e+22]"},
        {R"(["\u00e9\n", "\/"])", "[\"\u00e9\\n\",\"/\"]"},
    };
    for (const auto& [payload, stored] : cases) {
        records_.clear();
        const auto r = handle(post(R"({"type":"turn.result","payload":)" + payload + "}"));
        ASSERT_EQ(r.response.result(), http::status::created) << payload << ": " << r.reason;
        ASSERT_EQ(records_.size(), 1u);
        EXPECT_EQ(records_[0].second, stored) << payload;
        EXPECT_EQ(json::parse(records_[0].second), json::parse(payload)) << payload;
    }
}

// The reader decodes only a plain chunked body; any other coding would reach the journal
// undecoded or mis-framed.
TEST_F(RecordRequestHandler, TransferEncodingOtherThanPlainChunkedIs501) {
    for (const std::vector<std::string>& codings : {std::vector<std::string>{"gzip"},
                                                    {"gzip, chunked"},
                                                    {"identity"},
                                                    {"chunked, gzip"},
                                                    {"gzip", "chunked"},
                                                    {"chunked", "chunked"}}) {
        auto req = post(R"({"type":"turn.result","payload":1})");
        req.erase(http::field::content_length);
        for (const auto& c : codings) req.insert(http::field::transfer_encoding, c);
        const auto r = handle(req);
        EXPECT_EQ(r.response.result(), http::status::not_implemented) << codings.front();
        EXPECT_NE(r.reason.find("Transfer-Encoding"), std::string::npos);
        EXPECT_FALSE(r.response.keep_alive());
    }
    EXPECT_TRUE(records_.empty());
    auto chunked = post(R"({"type":"turn.result","payload":1})");
    chunked.erase(http::field::content_length);
    chunked.set(http::field::transfer_encoding, " Chunked ");
    EXPECT_EQ(handle(chunked).response.result(), http::status::created);
    // Authentication still comes first.
    auto unauthenticated = post("", "");
    unauthenticated.set(http::field::transfer_encoding, "gzip");
    EXPECT_EQ(handle(unauthenticated).response.result(), http::status::unauthorized);
}

TEST_F(RecordRequestHandler, DepthAtTheLimitIsAccepted) {
    // The outer object is depth 0, so the payload may open 63 more levels.
    const std::string payload = std::string(63, '[') + std::string(63, ']');
    const auto r = handle(post(R"({"type":"turn.result","payload":)" + payload + "}"));
    EXPECT_EQ(r.response.result(), http::status::created) << r.reason;
    const std::string too_deep = std::string(64, '[') + std::string(64, ']');
    EXPECT_EQ(
        handle(post(R"({"type":"turn.result","payload":)" + too_deep + "}")).response.result(),
        http::status::bad_request);
}

// An object's keys are bounded (kMaxObjectKeys): building an object that keeps its key order costs
// the square of its keys, in radiald's CPU, before the record's type is even looked at — so a
// body of the wrong type is refused for its keys first.
TEST_F(RecordRequestHandler, AnObjectWithMoreKeysThanTheLimitIs400) {
    auto object_of = [](std::size_t keys) {
        std::string o = "{";
        for (std::size_t i = 0; i < keys; ++i)
            o += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":0";
        return o + "}";
    };
    HandlerContext roomy = context();
    roomy.max_body_bytes = 1 << 20;
    EXPECT_EQ(
        handle_request(
            post(R"({"type":"turn.result","payload":)" + object_of(kMaxObjectKeys) + "}"), roomy)
            .response.result(),
        http::status::created);
    for (const std::string type : {"turn.result", "turn.other"}) {
        const auto r = handle_request(post(R"({"type":")" + type + R"(","payload":[1,)" +
                                           object_of(kMaxObjectKeys + 1) + "]}"),
                                      roomy);
        EXPECT_EQ(r.response.result(), http::status::bad_request) << type;
        EXPECT_NE(r.reason.find("more than 1024 keys"), std::string::npos) << r.reason;
    }
    EXPECT_EQ(records_.size(), 1u);
}

TEST_F(RecordRequestHandler, WrongTypeIs403AndNamesTheAllowedType) {
    const auto r = handle(post(R"({"type":"turn.other","payload":1})"));
    EXPECT_EQ(r.response.result(), http::status::forbidden);
    EXPECT_NE(r.reason.find("'turn.result'"), std::string::npos);
    EXPECT_EQ(r.reason.find("turn.other"), std::string::npos) << "client text is never echoed";
    EXPECT_TRUE(records_.empty());
}

TEST_F(RecordRequestHandler, ThrowingSinkIs500WithAGenericMessage) {
    sink_throws_ = true;
    const auto r = handle(post(R"({"type":"turn.result","payload":1})"));
    EXPECT_EQ(r.response.result(), http::status::internal_server_error);
    EXPECT_EQ(r.response.body().find("/var/lib"), std::string::npos);
    EXPECT_EQ(r.reason.find("locked"), std::string::npos);
}

// A record that could not be stored must never get a 201; 507 tells the harness why.
TEST_F(RecordRequestHandler, ASinkOutOfStorageIs507AndNothingIsStored) {
    sink_full_ = true;
    const auto r = handle(post(R"({"type":"turn.result","payload":1})"));
    EXPECT_EQ(r.response.result(), http::status::insufficient_storage);
    EXPECT_EQ(body_of(r)["error"],
              "the record could not be stored: the host's storage is full or failing; it was not "
              "kept");
    EXPECT_EQ(r.response.body().find("/var/lib"), std::string::npos);
    EXPECT_TRUE(records_.empty());
}

// docs/design.md §9.6: a record past the turn's share is a 507 that tells the box which share.
TEST_F(RecordRequestHandler, ARecordPastTheTurnsShareIs507NamingTheKey) {
    sink_over_quota_ = true;
    const auto r = handle(post(R"({"type":"turn.result","payload":1})"));
    EXPECT_EQ(r.response.result(), http::status::insufficient_storage);
    EXPECT_EQ(body_of(r)["error"], "this turn has posted run.maxRecordsPerTurn (3) records");
    EXPECT_TRUE(records_.empty());
}

TEST_F(RecordRequestHandler, MissingSinkIs500) {
    HandlerContext ctx = context();
    ctx.sink = nullptr;
    EXPECT_EQ(handle_request(post(R"({"type":"turn.result","payload":1})"), ctx).response.result(),
              http::status::internal_server_error);
}

TEST_F(RecordRequestHandler, NoResponseEverContainsTheToken) {
    for (auto req : {post("{}"), post("{", "Bearer x"), post(R"({"type":"a","payload":1})")}) {
        const auto r = handle(req);
        EXPECT_EQ(r.response.body().find(kToken), std::string::npos);
        EXPECT_EQ(r.reason.find(kToken), std::string::npos);
    }
}

TEST_F(RecordRequestHandler, KeepAliveFollowsTheRequestForBodyStageAnswers) {
    auto req = post(R"({"type":"turn.result","payload":1})");
    req.keep_alive(false);
    EXPECT_FALSE(handle(req).response.keep_alive());
    auto req10 = post(R"({"type":"turn.result","payload":1})");
    req10.version(10);
    const auto r = handle(req10);
    EXPECT_EQ(r.response.version(), 10u);
    EXPECT_FALSE(r.response.keep_alive());
}

} // namespace
} // namespace radial::socket
