// The header-only plugin helper in isolation: config getters and unknown-key refusal, the output
// sink's close semantics, label validation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <radial/plugin/runtime.hpp>
#include <tuple>

namespace radial::plugin {
namespace {

struct Entries {
    Entries() = default;
    // String entries, in order.
    Entries(std::initializer_list<std::pair<const char*, const char*>> strings) {
        keys.reserve(strings.size());
        values.reserve(strings.size());
        for (const auto& [k, v] : strings) add_string(k, v);
    }
    std::vector<std::string> keys, values;
    std::vector<radial_config_entry> entries;
    radial_config config{};
    void add_string(const std::string& k, const std::string& v) {
        keys.push_back(k);
        values.push_back(v);
    }
    const radial_config* build() {
        for (std::size_t i = 0; i < keys.size(); ++i) {
            radial_config_entry e{};
            e.key = to_c(keys[i]);
            e.kind = RADIAL_CONFIG_STRING;
            e.string_value = to_c(values[i]);
            entries.push_back(e);
        }
        config.struct_size = sizeof(config);
        config.section = to_c(section);
        config.entries = radial_array{entries.data(), static_cast<std::uint32_t>(entries.size()),
                                      sizeof(radial_config_entry)};
        return &config;
    }
    std::string section = "run.test";
};

// A key that looks like a typo of one the plugin reads is named with it (radial/names.hpp).
TEST(PluginHelperConfig, AMistypedKeyNamesTheKnownKeyItIsNear) {
    Entries e;
    e.keys.reserve(2);
    e.values.reserve(2);
    e.add_string("binary", "/usr/bin/docker");
    e.add_string("pidsLimt", "256");
    Config c(e.build());
    EXPECT_EQ(c.string("binary"), "/usr/bin/docker");
    EXPECT_EQ(c.integer("pidsLimit"), std::nullopt);
    EXPECT_EQ(c.size_bytes("memory"), std::nullopt);
    try {
        c.finish();
        FAIL() << "the mistyped key was accepted";
    } catch (const Error& err) {
        EXPECT_EQ(err.key(), "pidsLimt");
        EXPECT_STREQ(err.what(), "unknown key 'pidsLimt' in [run.test]; did you mean 'pidsLimit'?");
    }
    EXPECT_EQ(radial::nearest_name("memroy", std::vector<std::string>{"binary", "memory"}),
              std::optional<std::string>("memory"));
    EXPECT_EQ(radial::nearest_name("ab", std::vector<std::string>{"ac"}), std::nullopt)
        << "a two-letter word is never taken for a typo";
    EXPECT_EQ(radial::edit_distance("imgae", "image"), 1u) << "a swap of neighbours is one edit";
}

// The distance kept in three rows gives what the full table gave, and a word far longer than
// every candidate (a key of megabytes in a request) is compared with none: it took memory in
// proportion to its length times the candidate's, 800 MB for a 5 MiB key.
TEST(PluginHelperConfig, TheNearestNameCostsNothingForAWordFarFromEveryCandidate) {
    const std::vector<std::tuple<std::string, std::string, std::size_t>> pairs = {
        {"", "", 0},
        {"", "abc", 3},
        {"abc", "", 3},
        {"kitten", "sitting", 3},
        {"ca", "abc", 3},
        {"abcdef", "badcfe", 3},
        {"memory", "memroy", 1},
        {"pidsLimit", "pidsLimt", 1},
        {"same", "same", 0},
    };
    for (const auto& [a, b, d] : pairs) {
        EXPECT_EQ(radial::edit_distance(a, b), d) << a << " / " << b;
        EXPECT_EQ(radial::edit_distance(b, a), d) << b << " / " << a;
    }
    const std::string huge(64u << 20, 'm');
    EXPECT_EQ(radial::nearest_name(huge, std::vector<std::string>{"memory", "mmmmmm"}),
              std::nullopt);
    EXPECT_EQ(radial::nearest_name("mmmmmmmm", std::vector<std::string>{"mmmmmm", huge}),
              std::optional<std::string>("mmmmmm"));
}

TEST(PluginHelperConfig, TypedGettersAndUnknownKeys) {
    Entries e;
    e.keys.reserve(4);
    e.values.reserve(4);
    e.add_string("binary", "/usr/bin/docker");
    e.add_string("memory", "1g");
    e.add_string("timeout", "90s");
    e.add_string("typo", "x");
    Config c(e.build());
    EXPECT_EQ(c.string("binary"), "/usr/bin/docker");
    EXPECT_EQ(c.size_bytes("memory"), 1ull << 30);
    EXPECT_EQ(c.duration_ms("timeout"), 90'000u);
    EXPECT_EQ(c.string("absent"), std::nullopt);
    try {
        c.finish();
        FAIL();
    } catch (const Error& err) {
        EXPECT_EQ(err.code(), RADIAL_E_INVALID);
        EXPECT_EQ(err.key(), "typo");
        EXPECT_STREQ(err.what(), "unknown key 'typo' in [run.test]");
    }
}

TEST(PluginHelperConfig, BadValuesNameTheKey) {
    Entries e;
    e.keys.reserve(2);
    e.values.reserve(2);
    e.add_string("memory", "lots");
    Config c(e.build());
    try {
        c.size_bytes("memory");
        FAIL();
    } catch (const Error& err) {
        EXPECT_EQ(err.key(), "memory");
        EXPECT_STREQ(err.what(),
                     "memory must be a size such as \"512m\" or \"2g\", or a number of bytes");
    }
    EXPECT_THROW(c.integer("memory"), Error);
}

// "30" as text would be seconds to the parser, 30 as an integer milliseconds: a string that is a
// bare number says no unit, and is refused naming the ways to say one.
TEST(PluginHelperConfig, ADurationStringWithoutAUnitIsRefused) {
    Entries e{{"killGrace", "30"}, {"commandTimeout", "1.5"}};
    Config c(e.build());
    for (const char* key : {"killGrace", "commandTimeout"}) {
        std::string why, named;
        try {
            c.duration_ms(key);
        } catch (const Error& err) {
            why = err.what();
            named = err.key();
        }
        EXPECT_THAT(why, ::testing::HasSubstr("a duration such as \"90s\"")) << key;
        EXPECT_EQ(named, key);
    }
}

// A zero duration or size is well formed but means nothing a runtime can do ("0s" of a kill
// grace): the refusal says it is zero, not that it is not a duration.
TEST(PluginHelperConfig, AZeroDurationOrSizeIsRefusedAsZero) {
    Entries e{{"killGrace", "0s"}, {"commandTimeout", "0ms"}, {"memory", "0"}};
    Config c(e.build());
    for (const char* key : {"killGrace", "commandTimeout"}) {
        try {
            c.duration_ms(key);
            ADD_FAILURE() << key << " = 0 was taken";
        } catch (const Error& err) {
            EXPECT_EQ(err.key(), key);
            EXPECT_EQ(std::string(err.what()),
                      std::string(key) +
                          " is zero; it must be more: a duration such as \"90s\" "
                          "or \"1500ms\", or a number of milliseconds");
        }
    }
    try {
        c.size_bytes("memory");
        ADD_FAILURE() << "memory = 0 was taken";
    } catch (const Error& err) {
        EXPECT_THAT(err.what(), ::testing::HasSubstr("memory is zero"));
    }
}

// Every duration and size a runtime's table takes is range-checked, naming the key and the limit
// (docs/design.md §7.3).
TEST(PluginHelperConfig, ValuesPastTheLimitNameTheKeyAndTheLimit) {
    Entries e;
    e.keys.reserve(2);
    e.values.reserve(2);
    e.add_string("killGrace", "2600000000000h");
    e.add_string("tmpfsSize", "99999t");
    Config c(e.build());
    try {
        c.duration_ms("killGrace");
        FAIL();
    } catch (const Error& err) {
        EXPECT_EQ(err.key(), "killGrace");
        EXPECT_STREQ(err.what(),
                     "killGrace is more than the limit of 720h (30 days); it must be a duration "
                     "such as \"90s\" or \"1500ms\", or a number of milliseconds of at most that");
    }
    try {
        c.size_bytes("tmpfsSize");
        FAIL();
    } catch (const Error& err) {
        EXPECT_EQ(err.key(), "tmpfsSize");
        EXPECT_THAT(std::string(err.what()), ::testing::HasSubstr("more than the limit of 1024t"));
    }
}

TEST(PluginHelperOutput, WritesAfterCloseAreDropped) {
    int calls = 0;
    radial_output_sink sink{
        sizeof(radial_output_sink), &calls,
        [](void* ctx, std::uint32_t, const std::uint8_t*, std::size_t) -> std::int32_t {
            ++*static_cast<int*>(ctx);
            return 0;
        }};
    Output out(&sink);
    Output copy = out; // a pump thread's copy
    EXPECT_TRUE(copy.write(RADIAL_STREAM_STDOUT, "x", 1));
    out.close();
    EXPECT_FALSE(copy.write(RADIAL_STREAM_STDOUT, "y", 1));
    EXPECT_EQ(calls, 1);
}

TEST(PluginHelperOutput, NonZeroFromTheSinkAborts) {
    radial_output_sink sink{
        sizeof(radial_output_sink), nullptr,
        [](void*, std::uint32_t, const std::uint8_t*, std::size_t) -> std::int32_t { return 1; }};
    Output out(&sink);
    EXPECT_FALSE(out.write(RADIAL_STREAM_STDERR, "x", 1));
    EXPECT_TRUE(out.aborted());
}

TEST(PluginHelper, LabelRules) {
    EXPECT_TRUE(valid_label("radial-turn-inst1-7"));
    EXPECT_TRUE(valid_label("a.b_c-D9"));
    EXPECT_FALSE(valid_label(""));
    EXPECT_FALSE(valid_label("-leading"));
    EXPECT_FALSE(valid_label("has space"));
    EXPECT_FALSE(valid_label("semi;colon"));
    EXPECT_FALSE(valid_label(std::string(129, 'a')));
    EXPECT_TRUE(valid_label(std::string(128, 'a')));
}

} // namespace
} // namespace radial::plugin

namespace radial::plugin {
namespace {

// A helper runtime that forgets describe(): it must claim nothing it does not say it does.
class ForgetfulRuntime final : public Runtime {
public:
    RunResult run(const ContainerSpec&, Output&) override { return {}; }
    std::vector<std::string> list_by_label(std::string_view) override { return {}; }
    void kill(std::string_view) override {}
};

TEST(PluginHelper, TheDefaultDescribeFailsClosed) {
    ForgetfulRuntime rt;
    ContainerSpec s;
    s.label = "l";
    s.image = "i";
    s.argv = {"true"};
    s.user = "1000:1000";
    s.memory_bytes = 1 << 20;
    s.network = "none";
    s.env = {{"A", "1", false}};
    for (const auto& d : rt.describe(s)) {
        const bool basic = d.field == RADIAL_FIELD_LABEL || d.field == RADIAL_FIELD_IMAGE ||
                           d.field == RADIAL_FIELD_ARGV || d.field == RADIAL_FIELD_ON_OUTPUT;
        EXPECT_EQ(d.disposition, basic ? RADIAL_DISP_HONOURED : RADIAL_DISP_REFUSED)
            << field_name(d.field);
        if (!basic) {
            EXPECT_NE(d.note.find("override describe()"), std::string::npos) << d.note;
        }
    }
    EXPECT_EQ(rt.describe(s).size(), carried_fields(s).size());
}

} // namespace
} // namespace radial::plugin

namespace radial::plugin {
namespace {

// The create and removal times reach a host whose struct holds them, and a host built before they
// were appended is told nothing of them: neither the flag nor a byte past its struct.
TEST(PluginHelper, PhaseTimesReachOnlyAHostWithRoomForThem) {
    RunResult r;
    r.flags = RADIAL_RUN_EXITED | RADIAL_RUN_PHASE_TIMES;
    r.duration_ms = 900;
    r.create_ms = 120;
    r.remove_ms = 40;
    radial_run_result now{};
    now.struct_size = sizeof(now);
    detail::put_result(r, &now);
    EXPECT_EQ(now.flags, r.flags);
    EXPECT_EQ(now.create_ms, 120u);
    EXPECT_EQ(now.remove_ms, 40u);

    radial_run_result old{};
    std::memset(&old, 0xAB, sizeof(old));
    old.struct_size = offsetof(radial_run_result, create_ms);
    detail::put_result(r, &old);
    EXPECT_EQ(old.flags, static_cast<std::uint32_t>(RADIAL_RUN_EXITED));
    EXPECT_EQ(old.duration_ms, 900u);
    EXPECT_EQ(old.create_ms, 0xABABABABABABABABull); // untouched: beyond the host's struct
}

} // namespace
} // namespace radial::plugin
