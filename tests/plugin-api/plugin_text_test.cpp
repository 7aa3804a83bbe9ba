// What the host keeps of a plugin's text: at most kMaxPluginText bytes, cut at a UTF-8 character's
// start, marked once (radial/host/runtime_answers.hpp).
#include <gtest/gtest.h>

#include <radial/host/runtime_answers.hpp>

namespace radial::host {
namespace {

const std::string kMark = " [cut: the plugin's text was longer]";

TEST(PluginText, ShortTextIsKeptWhole) {
    EXPECT_EQ(plugin_text("engine is asleep"), "engine is asleep");
    EXPECT_EQ(plugin_text(std::string(kMaxPluginText, 'a')), std::string(kMaxPluginText, 'a'));
}

TEST(PluginText, LongTextIsCutAndMarkedOnce) {
    auto s = plugin_text(std::string(kMaxPluginText + 1, 'a'));
    EXPECT_EQ(s, std::string(kMaxPluginText, 'a') + kMark);
    // Further appends to a cut text add nothing, not even a second mark.
    append_plugin_text(s, "; more");
    EXPECT_EQ(s, std::string(kMaxPluginText, 'a') + kMark);
}

TEST(PluginText, TextFilledToTheByteIsMarkedWhenMoreComes) {
    std::string s = plugin_text(std::string(kMaxPluginText, 'a'));
    EXPECT_EQ(s.size(), kMaxPluginText);
    append_plugin_text(s, "b");
    EXPECT_EQ(s, std::string(kMaxPluginText, 'a') + kMark);
    append_plugin_text(s, "c");
    EXPECT_EQ(s, std::string(kMaxPluginText, 'a') + kMark);
}

TEST(PluginText, TheCutNeverSplitsAUtf8Character) {
    // "é" is two bytes: one 'a' then "é"s put a character across the limit.
    std::string text = "a";
    while (text.size() < kMaxPluginText + 8) text += "\xc3\xa9";
    auto s = plugin_text(text);
    ASSERT_GT(s.size(), kMark.size());
    const std::string kept = s.substr(0, s.size() - kMark.size());
    EXPECT_EQ(kept.size(), kMaxPluginText - 1);
    EXPECT_EQ(kept.back(), '\xa9'); // ends on a whole "é"
    EXPECT_EQ(s.substr(kept.size()), kMark);
}

TEST(PluginText, ManyReportsTogetherStayWithinTheLimit) {
    std::string all;
    for (int i = 0; i < 1000; ++i) {
        if (!all.empty()) append_plugin_text(all, "; ");
        append_plugin_text(all, "the engine did not answer");
    }
    EXPECT_LE(all.size(), kMaxPluginText + kMark.size());
    EXPECT_EQ(all.substr(all.size() - kMark.size()), kMark);
}

} // namespace
} // namespace radial::host
