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

// Anything at the default path is the operator's config, read and reported when it is broken: a
// link that leads nowhere, a directory. Only nothing there means the built-in defaults, which
// would silently drop every bound the file narrows.
TEST(ConfigFile, AnythingAtTheDefaultPathIsReadNotTakenForNoFile) {
    RadialConfigVariable env(nullptr);
    test::TempDir d("radial-config-default");
    const std::string at = d / "radiald.toml";
    EXPECT_EQ(config_file(std::nullopt, at), std::nullopt) << "nothing there";
    EXPECT_EQ(config_file(std::nullopt, d / "file/radiald.toml"), std::nullopt)
        << "no directory there";
    std::filesystem::create_symlink(d / "gone.toml", at);
    EXPECT_EQ(config_file(std::nullopt, at), at) << "a link that leads nowhere";
    std::filesystem::remove(at);
    std::filesystem::create_directory(at);
    EXPECT_EQ(config_file(std::nullopt, at), at) << "a directory";
}

// $RADIAL_CONFIG naming a directory or a link that leads nowhere says which, not "no such file".
TEST(ConfigFile, AVariableNamingADirectoryOrABrokenLinkSaysWhichItIs) {
    test::TempDir d("radial-config-file");
    std::filesystem::create_symlink(d / "gone.toml", d / "link.toml");
    for (const auto& [path, why] : std::vector<std::pair<std::string, std::string>>{
             {d.path(), "it is a directory, not a file"},
             {d / "link.toml",
              "it is a link to '" + (d / "gone.toml") + "', which leads nowhere"}}) {
        RadialConfigVariable env(path.c_str());
        try {
            config_file(std::nullopt);
            ADD_FAILURE() << "no error for " << path;
        } catch (const config::ConfigError& e) {
            EXPECT_EQ(std::string(e.what()),
                      "reading config '" + path + "' named by $RADIAL_CONFIG: " + why +
                          "; point RADIAL_CONFIG at an existing file, or unset it to read "
                          "/etc/radial/radiald.toml");
        }
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
