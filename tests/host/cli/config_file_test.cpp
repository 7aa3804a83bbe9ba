// Which config file a command reads (docs/design.md §7.7): --config, else $RADIAL_CONFIG, else
// /etc/radial/radiald.toml when it exists, else none. The real /etc/radial is only looked at,
// never written; the variable is set and restored by the test.
#include "cli/config_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "../../support/temp_dir.h"
#include "text/nearest_word.h"

namespace radial::cli {

// $RADIAL_CONFIG set to `value` (nullptr: unset) for the test's scope, restored after.
class RadialConfigVariable {
public:
    explicit RadialConfigVariable(const char* value) {
        if (const char* old = std::getenv("RADIAL_CONFIG")) saved_ = old;
        if (value != nullptr)
            ::setenv("RADIAL_CONFIG", value, 1);
        else
            ::unsetenv("RADIAL_CONFIG");
    }
    ~RadialConfigVariable() {
        if (saved_)
            ::setenv("RADIAL_CONFIG", saved_->c_str(), 1);
        else
            ::unsetenv("RADIAL_CONFIG");
    }

private:
    std::optional<std::string> saved_;
};

TEST(ConfigFile, TheFlagWinsOverTheVariable) {
    RadialConfigVariable env("/nonexistent/radiald.toml");
    EXPECT_EQ(config_file(std::string("/etc/elsewhere.toml")), "/etc/elsewhere.toml");
}

TEST(ConfigFile, TheVariableNamesTheFileWithoutTheFlag) {
    test::TempDir d("radial-config-file");
    const std::string file = d.write("radiald.toml", "[run]\n");
    RadialConfigVariable env(file.c_str());
    EXPECT_EQ(config_file(std::nullopt), file);
}

TEST(ConfigFile, AVariableNamingNoFileIsAnErrorNamingIt) {
    test::TempDir d("radial-config-file");
    RadialConfigVariable env((d / "missing.toml").c_str());
    try {
        config_file(std::nullopt);
        FAIL() << "no error";
    } catch (const config::ConfigError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "reading config '" + (d / "missing.toml") +
                      "' named by $RADIAL_CONFIG: no such file; point RADIAL_CONFIG at an "
                      "existing file, or unset it to read /etc/radial/radiald.toml");
    }
    RadialConfigVariable dir(d.path().c_str()); // a directory is no config file either
    EXPECT_THROW(config_file(std::nullopt), config::ConfigError);
}

// Without either: the packaged file when this machine has it, else none (the defaults).
TEST(ConfigFile, WithoutEitherTheDefaultPathOnlyWhenItExists) {
    for (const char* value : {static_cast<const char*>(nullptr), ""}) {
        RadialConfigVariable env(value); // empty counts as unset
        std::error_code ec;
        const bool packaged = std::filesystem::exists(kDefaultConfigPath, ec);
        EXPECT_EQ(config_file(std::nullopt),
                  packaged ? std::optional<std::string>(kDefaultConfigPath) : std::nullopt);
    }
}

TEST(NearestWord, ATypoFindsItsWordAndAStrangerFindsNone) {
    const std::vector<std::string> flags{"--image", "--timeout", "--turn-id", "--config"};
    EXPECT_EQ(text::nearest_word("--imgae", flags), "--image");    // a swap is one edit
    EXPECT_EQ(text::nearest_word("--timout", flags), "--timeout"); // a missing letter
    EXPECT_EQ(text::nearest_word("--confg", flags), "--config");
    EXPECT_EQ(text::nearest_word("--workspace", flags), std::nullopt);
    EXPECT_EQ(text::nearest_word("-x", {"-n", "-v"}), std::nullopt); // too short to guess
}

} // namespace radial::cli
