// Loader refusals, one test per refusal, each asserting the message.
// Every plugin here is a real .so built by tests/fakes and loaded by the real loader.
#include "loader/plugin_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "../../support/temp_dir.h"

namespace radial::loader {
namespace {
namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string built(const std::string& target, const std::string& file) {
    return std::string(RADIAL_FAKE_PLUGIN_ROOT) + "/" + target + "/" + file + ".so";
}

// A plugin directory holding copies of the named built plugins.
struct PluginDir {
    test::TempDir dir{"radial-plugins"};
    explicit PluginDir(std::initializer_list<std::pair<std::string, std::string>> plugins) {
        for (const auto& [target, file] : plugins)
            fs::copy_file(built(target, file), dir / (file + ".so"));
    }
    std::string path(const std::string& file) const { return dir / (file + ".so"); }
};

std::string load_error(const std::vector<std::string>& dirs) {
    try {
        load_plugins(dirs);
    } catch (const LoadError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(PluginLoader, LoadsAGoodPluginAndReadsItsDescriptor) {
    PluginDir d{{"fake_good", "fake"}};
    auto plugins = load_plugins({d.dir.path()});
    ASSERT_EQ(plugins.size(), 1u);
    EXPECT_EQ(plugins[0].info.id, "fake");
    EXPECT_EQ(plugins[0].info.version, "9.9.9");
    EXPECT_EQ(plugins[0].info.abi_major, RADIAL_RT_ABI_MAJOR);
    EXPECT_EQ(plugins[0].info.abi_minor, RADIAL_RT_ABI_MINOR);
    EXPECT_EQ(plugins[0].path, d.path("fake"));
    EXPECT_NE(plugins[0].descriptor, nullptr);
}

TEST(PluginLoader, RefusesAnotherAbiMajorNamingBothVersions) {
    PluginDir d{{"zoo_wrong_major", "zoo_wrong_major"}};
    EXPECT_EQ(load_error({d.dir.path()}),
              "loading plugin '" + d.path("zoo_wrong_major") +
                  "' (runtime 'zoo-wrong-major' 0.0.1): it targets runtime ABI 2.1, this radiald "
                  "supports 1.1; rebuild the plugin against plugin-api 1.x");
}

TEST(PluginLoader, RefusesAPluginNeedingANewerMinor) {
    PluginDir d{{"zoo_newer_minor", "zoo_newer_minor"}};
    EXPECT_EQ(load_error({d.dir.path()}),
              "loading plugin '" + d.path("zoo_newer_minor") +
                  "' (runtime 'zoo-newer-minor' 0.0.1): it needs runtime ABI 1.99, this radiald "
                  "supports 1.1; upgrade radiald or use an older plugin");
}

TEST(PluginLoader, RefusesAFileWithoutTheEntrySymbol) {
    PluginDir d{{"zoo_no_entry", "zoo_no_entry"}};
    EXPECT_EQ(load_error({d.dir.path()}),
              "loading plugin '" + d.path("zoo_no_entry") +
                  "': no entry symbol 'radial_runtime_plugin_entry', so it is not a radial runtime "
                  "plugin; remove it from the plugin directory");
}

TEST(PluginLoader, RefusesAFileThatIsNotASharedObject) {
    PluginDir d{};
    d.dir.write("garbage.so", "this is not an ELF file\n");
    std::string e = load_error({d.dir.path()});
    EXPECT_THAT(
        e, HasSubstr("loading plugin '" + d.path("garbage") + "': not a loadable shared object ("));
    EXPECT_THAT(e, HasSubstr("remove it from the plugin directory"));
}

TEST(PluginLoader, RefusesAnEntryReturningNull) {
    PluginDir d{{"zoo_null", "zoo_null"}};
    EXPECT_EQ(load_error({d.dir.path()}), "loading plugin '" + d.path("zoo_null") +
                                              "': its entry point returned no descriptor");
}

TEST(PluginLoader, RefusesADescriptorMissingARequiredFunction) {
    PluginDir d{{"zoo_no_run", "zoo_no_run"}};
    EXPECT_EQ(
        load_error({d.dir.path()}),
        "loading plugin '" + d.path("zoo_no_run") +
            "' (runtime 'zoo-no-run' 0.0.1): its descriptor lacks the required function 'run'");
}

// A declared size the host would copy whole ended radiald with bad_alloc, naming nothing; now the
// file is refused by name, and no more than kMaxDescriptorText bytes of any string are read.
TEST(PluginLoader, RefusesADescriptorStringOfATerabyteNamingTheFile) {
    PluginDir d{{"zoo_huge_name", "zoo_huge_name"}};
    EXPECT_EQ(load_error({d.dir.path()}),
              "loading plugin '" + d.path("zoo_huge_name") +
                  "' (runtime 'zoo-huge-name' 0.0.1): its descriptor's name is 1099511627776 "
                  "bytes long; at most 256 are allowed");
    PluginDir i{{"zoo_huge_id", "zoo_huge_id"}};
    EXPECT_EQ(load_error({i.dir.path()}),
              "loading plugin '" + i.path("zoo_huge_id") + "' (runtime '" + std::string(256, 'z') +
                  "' 0.0.1): its runtime id is 1099511627776 bytes long; it must match "
                  "[a-z0-9-]{1,32}");
}

TEST(PluginLoader, RefusesTwoPluginsClaimingOneId) {
    PluginDir d{{"fake_dup_a", "dup_a"}, {"fake_dup_b", "dup_b"}};
    EXPECT_EQ(load_error({d.dir.path()}), "plugins '" + d.path("dup_a") + "' and '" +
                                              d.path("dup_b") +
                                              "' both claim runtime id 'dup'; remove one of them");
}

TEST(PluginLoader, RefusesAPluginWritableByOthers) {
    PluginDir d{{"fake_good", "fake"}};
    ::chmod(d.path("fake").c_str(), 0666);
    EXPECT_THAT(load_error({d.dir.path()}), HasSubstr("is writable by group or others"));
}

// A plugin is judged where it really is, with every directory above it: a link in a trusted
// directory to a root-owned file in one anybody can write was loaded, and that file could be
// swapped between the checks and the load.
TEST(PluginLoader, ALinkIsJudgedWhereItLeadsWithEveryDirectoryAboveIt) {
    test::TempDir outside("radial-plugin-elsewhere");
    const std::string open_dir = outside / "anyone";
    fs::create_directory(open_dir);
    ::chmod(open_dir.c_str(), 0777);
    fs::copy_file(built("fake_good", "fake"), open_dir + "/fake.so");
    test::TempDir links("radial-plugin-links");
    fs::create_symlink(open_dir + "/fake.so", links / "fake.so");
    const std::string said = load_error({links.path()});
    EXPECT_THAT(said, HasSubstr("loading plugin '" + links.path() + "/fake.so' (a link to '" +
                                open_dir + "/fake.so')"));
    EXPECT_THAT(said, HasSubstr("the directory '" + open_dir + "' is writable by group or others"));
    // The same file in a directory only its owner writes is loaded, through the link too.
    ::chmod(open_dir.c_str(), 0755);
    EXPECT_EQ(load_error({links.path()}), "(no error)");
}

// The directory the entry is named in is judged too: a link planted in a plugin directory anybody
// can write, to a trusted root-owned plugin elsewhere, picked which plugin radiald loaded (only
// where the link led was judged).
TEST(PluginLoader, ALinkInADirectoryOthersMayWriteIsRefusedWhereverItLeads) {
    PluginDir trusted{{"fake_good", "fake"}};
    test::TempDir outside("radial-plugin-open");
    const std::string open_dir = outside / "anyone";
    fs::create_directory(open_dir);
    ::chmod(open_dir.c_str(), 0777);
    fs::create_symlink(trusted.path("fake"), open_dir + "/fake.so");
    EXPECT_EQ(load_error({open_dir}),
              "loading plugin '" + open_dir + "/fake.so': the directory '" + open_dir +
                  "' is writable by group or others, so anyone could replace the runtime; run "
                  "'chmod go-w " +
                  open_dir + "'");
    // A link whose owner is neither root nor radiald's user, in a trusted directory.
    ::chmod(open_dir.c_str(), 0755);
    ASSERT_EQ(::lchown((open_dir + "/fake.so").c_str(), 65534, 65534), 0);
    EXPECT_EQ(load_error({open_dir}),
              "loading plugin '" + open_dir +
                  "/fake.so': the link is owned by uid 65534, neither root nor radiald's user; "
                  "remove it from the plugin directory");
}

// A dangling link in a trusted plugin directory fails the scan (radiald loads no plugin while one
// is broken) and the error says it is a link, where it leads and what to do.
TEST(PluginLoader, ADanglingLinkIsNamedAsOneWithWhatToDo) {
    test::TempDir links("radial-plugin-dangling");
    fs::create_symlink(links / "gone.so.1", links / "gone.so");
    EXPECT_EQ(load_error({links.path()}),
              "loading plugin '" + links.path() + "/gone.so': it is a link to '" + links.path() +
                  "/gone.so.1', which cannot be followed (No such file or directory); radiald "
                  "loads no plugin while one in its plugin directory is broken: remove the link "
                  "or restore what it points to");
}

// Where the dynamic linker looks for a plugin's libraries is judged as the plugin's own directory
// is: a trusted plugin whose runpath ($ORIGIN/../libs) is a directory anybody can write, or whose
// library there is another user's, would run their code as radiald's user. Laid out right, it
// loads, its library found there.
TEST(PluginLoader, ALibraryDirectoryInThePluginsRunpathIsJudgedAsItsOwnDirectoryIs) {
    test::TempDir root("radial-plugin-runpath");
    const std::string plugins = root / "plugins", libs = root / "libs";
    fs::create_directory(plugins);
    fs::create_directory(libs);
    fs::copy_file(built("fake_runpath", "runpath"), plugins + "/runpath.so");
    const std::string dep = libs + "/libradial_runpath_dep.so";
    fs::copy_file(
        std::string(RADIAL_FAKE_PLUGIN_ROOT) + "/fake_runpath/libs/libradial_runpath_dep.so", dep);
    const std::string said =
        "loading plugin '" + plugins + "/runpath.so': the library directory '" + plugins +
        "/runpath.so', named in its runpath as '$ORIGIN/../libs': the directory '" + libs +
        "' is writable by group or others";
    ::chmod(libs.c_str(), 0777);
    EXPECT_THAT(load_error({plugins}), HasSubstr(said));
    ::chmod(libs.c_str(), 0755);
    ASSERT_EQ(::chown(dep.c_str(), 65534, 65534), 0);
    EXPECT_THAT(load_error({plugins}),
                HasSubstr("'" + dep + "', which '" + plugins + "/runpath.so' needs: the library '" +
                          dep + "' is owned by uid 65534, neither root nor radiald's user"));
    ASSERT_EQ(::chown(dep.c_str(), 0, 0), 0);
    auto loaded = load_plugins({plugins});
    ASSERT_EQ(loaded.size(), 1u);
    EXPECT_EQ(loaded[0].info.id, "runpath");
}

TEST(PluginLoader, SelectListsTheIdsFoundWhenNoneMatches) {
    PluginDir d{{"fake_good", "fake"}, {"fake_throwing", "throwing"}};
    auto plugins = load_plugins({d.dir.path()});
    try {
        select_plugin(plugins, "sandbox", {d.dir.path()});
        FAIL() << "expected a LoadError";
    } catch (const LoadError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "no runtime plugin with id 'sandbox' in '" + d.dir.path() +
                      "'; found 'fake', 'throwing'; set run.containerRuntime to one of those or "
                      "install the plugin (run.pluginDir names where to look)");
    }
    EXPECT_EQ(select_plugin(plugins, "throwing", {d.dir.path()}).info.id, "throwing");
}

TEST(PluginLoader, AMissingDirectoryContributesNothing) {
    EXPECT_TRUE(load_plugins({"/nonexistent/radial/plugins"}).empty());
}

} // namespace
} // namespace radial::loader
