// Reading the config file (host/config/config_text.h): each way a path is no config file is said
// with what to do, through config::load as every command reads it (docs/design.md §7.7).
#include "config/config_text.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "../../support/temp_dir.h"
#include "config/host_config.h"

namespace radial::config {
namespace {

std::string load_error(const std::string& file) {
    try {
        load(file, std::nullopt, "/opt/radial/bin");
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(ConfigText, ADirectoryABrokenLinkOrAFifoIsSaidForWhatItIs) {
    test::TempDir d("radial-config-text");
    std::filesystem::create_symlink(d / "gone.toml", d / "link.toml");
    ASSERT_EQ(::mkfifo((d / "fifo.toml").c_str(), 0600), 0);
    for (const auto& [path, said] : std::vector<std::pair<std::string, std::string>>{
             {d.path(), "it is a directory, not a file; name the config file itself"},
             {d / "link.toml", "it is a link to '" + (d / "gone.toml") +
                                   "', which leads nowhere; restore what it leads to, or remove "
                                   "the link"},
             {d / "fifo.toml", "it is a fifo, not a regular file; name the config file itself"}})
        EXPECT_EQ(load_error(path), "reading config '" + path + "': " + said);
    EXPECT_EQ(load_error(d / "none.toml"), "reading config '" + (d / "none.toml") +
                                               "': no such file; pass an existing file with "
                                               "--config");
    EXPECT_EQ(read_config_text(d.write("ok.toml", "[run]\n")), "[run]\n");
}

// What the TOML parser says, in radiald's words: a table or key given twice was said as
// "Error while parsing table header: cannot redefine existing table 'run'", which names neither
// the mistake an operator makes (two [run] tables) nor its fix.
TEST(ConfigText, ATableOrKeyGivenTwiceIsNamedWithTheFix) {
    test::TempDir d("radial-config-text");
    for (const auto& [text, said] : std::vector<std::pair<std::string, std::string>>{
             {"[run]\nstateDir = \"/a\"\n[run]\nlogLevel = \"info\"\n",
              ":3:1: the table [run] appears twice; keep one [run] and put all its keys in it"},
             {"[run]\nstateDir = \"/a\"\nstateDir = \"/b\"\n",
              ":3:12: the key 'stateDir' is set twice; keep one"},
             {"[run]\nnetwork = \"x\"\n[run.network]\na = 1\n",
              ":3:1: 'run.network' is already a string, so it cannot also be a table; rename one "
              "of them"},
             {"[run]\nstateDir = \n",
              ":2:12: not valid TOML (key-value pair): expected value, "
              "saw '\\n'"}}) {
        const std::string file = d.write("twice.toml", text);
        EXPECT_EQ(load_error(file), file + said) << text;
    }
}

} // namespace
} // namespace radial::config
