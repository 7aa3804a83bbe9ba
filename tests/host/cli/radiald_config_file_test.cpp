// The config file the real radiald binary reads: one it cannot read is said with the errno and
// what to do, never as a TOML error at 0:0 (docs/design.md §7.7).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

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

} // namespace
} // namespace radial
