// The config file's tables are read through tables of keys (host/config/key_table.h): the keys
// docs/configuration.md documents are exactly the keys radiald reads, and a key no reader takes is
// refused with the nearest known one and the table's keys, from the same table.
#include "config/key_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "../../support/temp_dir.h"
#include "config/host_config.h"
#include "config/run_keys.h"

namespace radial::config {
namespace {

using ::testing::ElementsAre;

// The keys in the first column of the table under the heading "## `[TABLE]`…" of
// docs/configuration.md ("`maxBytesIn` / `maxBytesOut`" is two).
std::set<std::string> documented_keys(const std::string& table) {
    std::ifstream in(std::string(RADIAL_SOURCE_DIR) + "/docs/configuration.md");
    std::string line;
    bool inside = false;
    std::set<std::string> keys;
    const std::regex key_cell("`([A-Za-z]+)`");
    while (std::getline(in, line)) {
        if (line.rfind("## ", 0) == 0) {
            inside = line.rfind("## `[" + table + "]`", 0) == 0;
            continue;
        }
        if (!inside || line.rfind("| `", 0) != 0) continue;
        const std::string first = line.substr(1, line.find('|', 1) - 1);
        for (std::sregex_iterator it(first.begin(), first.end(), key_cell), end; it != end; ++it)
            keys.insert((*it)[1]);
    }
    return keys;
}

TEST(ConfigKeyTables, TheReferenceDocumentsExactlyTheKeysEachTableReads) {
    for (const char* table : {"run", "run.egress", "run.pool", "redact"}) {
        const auto keys = table_keys(table);
        ASSERT_FALSE(keys.empty()) << table;
        const std::set<std::string> read(keys.begin(), keys.end());
        EXPECT_EQ(read.size(), keys.size()) << table << ": a key with two readers";
        auto documented = documented_keys(table);
        // run.egress is a table with a section of its own.
        if (std::string(table) == "run" && !documented_keys("run.egress").empty())
            documented.insert("egress");
        // So is run.workspaces (a table of tables).
        if (std::string(table) == "run" && !documented_keys("run.workspaces.NAME").empty())
            documented.insert("workspaces");
        // So is run.pool.
        if (std::string(table) == "run" && !documented_keys("run.pool").empty())
            documented.insert("pool");
        EXPECT_EQ(documented, read)
            << "[" << table << "] in docs/configuration.md and the readers in "
            << "host/config/run_keys.cpp (or turn_bounds.cpp) disagree";
    }
    EXPECT_TRUE(table_keys("run.docker").empty()) << "a runtime's table is the plugin's to read";
}

TEST(ConfigKeyTables, AnUnknownKeyNamesTheNearestKnownOneAndTheTablesKeys) {
    const std::vector<KeyReader> readers{{"source", {}}, {"target", {}}, {"readOnly", {}}};
    EXPECT_EQ(unknown_key_problem("ro", readers, {"a mount", ""}),
              "unknown key; a mount takes source, target and readOnly");
    EXPECT_EQ(unknown_key_problem("taget", readers, {"a mount", ""}),
              "unknown key; did you mean 'target'? (a mount takes source, target and readOnly)");
    EXPECT_EQ(unknown_key_problem("readOnyl", readers, {"a mount", "the guide"}),
              "unknown key; did you mean 'readOnly'? (see the guide)");
    EXPECT_EQ(unknown_key_problem("zzz", {{"one", {}}}, {"[t]", ""}), "unknown key; [t] takes one");
}

TEST(ConfigKeyTables, ReadKeysCallsEachReaderInTheTablesOrderAndOffersTheRestToOther) {
    auto table = toml::parse("b = 1\na = 2\n[sub]\nx = 1\n");
    std::vector<std::string> seen;
    const std::vector<KeyReader> readers{
        {"a", [&](const std::string& key, const toml::node&) { seen.push_back(key); }},
        {"b", [&](const std::string& key, const toml::node&) { seen.push_back(key); }},
    };
    auto refuse = [](const std::string& key, const toml::node&, const std::string& problem) {
        throw std::runtime_error(key + ": " + problem);
    };
    read_keys(table, "p", readers, {"[p]", ""}, refuse,
              [&](const std::string& name, const toml::node& v) {
                  seen.push_back("other " + name);
                  return v.is_table();
              });
    EXPECT_THAT(seen, ElementsAre("p.a", "p.b", "other sub"));
    auto bad = toml::parse("a = 1\nc = 2\n");
    try {
        read_keys(bad, "p", readers, {"[p]", ""}, refuse);
        ADD_FAILURE() << "an unknown key was taken";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "p.c: unknown key; [p] takes a and b");
    }
}

TEST(ConfigKeyTables, AMistypedEgressKeyIsRefusedWithItsPositionAndTheNearestKey) {
    test::TempDir d;
    auto f = d.write("r.toml", "[run.egress]\nalow = [\"pypi.org:443\"]\n");
    try {
        load(f, std::nullopt, "/opt/radial/bin");
        ADD_FAILURE() << "accepted";
    } catch (const ConfigError& e) {
        EXPECT_EQ(std::string(e.what()),
                  f + ":2:8: run.egress.alow: unknown key; did you mean 'allow'? ([run.egress] "
                      "takes allow, allowRanges, denyRanges, hosts, maxConnections, maxBytesIn, "
                      "maxBytesOut and runtimePolicy)");
    }
    auto g = d.write("g.toml", "[run]\negress = 3\n");
    try {
        load(g, std::nullopt, "/opt/radial/bin");
        ADD_FAILURE() << "accepted";
    } catch (const ConfigError& e) {
        EXPECT_EQ(std::string(e.what()), g + ":2:10: run.egress: must be a table ([run.egress])");
    }
}

TEST(ConfigKeyTables, AKeyOfRedactIsReadAndAMistypedOneNamesTheOthers) {
    test::TempDir d;
    auto f = d.write("r.toml", "[redact]\nminLength = 8\nvalues = [\"abcdefgh\"]\n");
    const auto cfg = load(f, std::nullopt, "/opt/radial/bin");
    EXPECT_EQ(cfg.redact.min_length, 8u);
    EXPECT_THAT(cfg.redact.values, ElementsAre("abcdefgh"));
    auto g = d.write("g.toml", "[redact]\nminLenght = 8\n");
    try {
        load(g, std::nullopt, "/opt/radial/bin");
        ADD_FAILURE() << "accepted";
    } catch (const ConfigError& e) {
        EXPECT_EQ(std::string(e.what()),
                  g + ":2:13: redact.minLenght: unknown key; did you mean 'minLength'? ([redact] "
                      "takes envNames, values and minLength)");
    }
}

} // namespace
} // namespace radial::config
