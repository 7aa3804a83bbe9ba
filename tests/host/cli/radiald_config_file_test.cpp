// The config file the real radiald binary reads: one it cannot read is said with the errno and
// what to do, never as a TOML error at 0:0 (docs/design.md §7.7); one that anyone but root and
// radiald's user could change — the file, a link to it, a directory above it — is refused with
// the fix, as a plugin is (§5.9, §15.1).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "../../support/fake_runtime_setup.h"
#include "../../support/process_runner.h"
#include "../../support/temp_dir.h"

namespace radial {
namespace {

// `radiald config check --config <config>` as uid and gid 65534 (nobody).
test::ProcessResult check_as_nobody(const std::string& config) {
    return test::run_process({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              RADIALD_PATH, "config", "check", "--config", config});
}

TEST(RadialdConfigFile, AConfigRadialdCannotReadIsSaidWithItsErrnoNotAPosition) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (a command as another uid)";
    test::TempDir d("radial-cfgread");
    ASSERT_EQ(::chmod(d.path().c_str(), 0755), 0);
    const std::string config = d.write("radiald.toml", "[run]\n");
    ASSERT_EQ(::chmod(config.c_str(), 0600), 0);
    const auto r = check_as_nobody(config);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err, "radiald[config] error: reading config '" + config +
                         "': cannot read it: Permission denied; run radiald as a user who may "
                         "read it, or change its mode\n");
    EXPECT_EQ(r.out, "");
}

test::ProcessResult check(const std::string& config) {
    return test::run_process({RADIALD_PATH, "config", "check", "--config", config});
}

// As the reviewer found it: a config owned by nobody, or writable by everyone, made radiald (as
// root) run what it named. Each is refused naming the file and the chown or chmod that fixes it.
TEST(RadialdConfigFile, AConfigAnotherUserCouldChangeIsRefusedWithTheFix) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown to another uid)";
    const test::FakeRuntimeSetup s("radial-cfgtrust");
    const test::TempDir& d = s.dir;
    const std::string& config = s.config;
    ASSERT_EQ(check(config).exit_code, 0) << check(config).err;

    ASSERT_EQ(::chmod(config.c_str(), 0666), 0);
    auto r = check(config);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err, "radiald[config] error: reading config '" + config + "': the file '" + config +
                         "' is writable by group or others, so anyone could change what radiald "
                         "runs; run 'chmod go-w " +
                         config + "'\n");
    EXPECT_EQ(r.out, "");

    ASSERT_EQ(::chmod(config.c_str(), 0644), 0);
    ASSERT_EQ(::chown(config.c_str(), 65534, 65534), 0);
    r = check(config);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err, "radiald[config] error: reading config '" + config + "': the file '" + config +
                         "' is owned by uid 65534, neither root nor radiald's user, who could "
                         "change what radiald runs; run 'chown root " +
                         config + "'\n");

    // A directory above it anyone may write (not sticky): the file could be swapped.
    ASSERT_EQ(::chown(config.c_str(), 0, 0), 0);
    ASSERT_EQ(::chmod(d.path().c_str(), 0777), 0);
    r = check(config);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, ::testing::HasSubstr("the directory '" + d.path() +
                                            "' is writable by group or others"));
    // Sticky and root's, as /tmp is (every config of this suite lies below it): trusted.
    ASSERT_EQ(::chmod(d.path().c_str(), 01777), 0);
    r = check(config);
    EXPECT_EQ(r.exit_code, 0) << r.err;

    // A link another user owns, in a trusted directory, to a trusted file: the link picks it.
    ASSERT_EQ(::chmod(d.path().c_str(), 0700), 0);
    const std::string link = d / "link.toml";
    std::filesystem::create_symlink(config, link);
    ASSERT_EQ(::lchown(link.c_str(), 65534, 65534), 0);
    r = check(link);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, ::testing::HasSubstr("the link '" + link + "' is owned by uid 65534"));
}

} // namespace
} // namespace radial
