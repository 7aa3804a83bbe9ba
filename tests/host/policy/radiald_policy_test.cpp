// The real radiald with the fake runtime (no engine): a request cannot ask for host power
// (C-14), refused by `radiald submit` and by `radiald turn` alike, and checked again when the
// daemon claims it; the spool only ever holds regular files radiald wrote (C-15).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "../../support/fake_engine.h"
#include "../../support/process_probe.h"
#include "../daemon/daemon_harness.h"

namespace radial {
namespace {
namespace fs = std::filesystem;
using test::DaemonProcess;
using test::DaemonSetup;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

std::string fake_plugin_keys() {
    static test::TempDir plugins("radial-pfake");
    fs::copy_file(std::string(RADIAL_FAKE_PLUGIN_ROOT) + "/fake_good/fake.so", plugins / "fake.so",
                  fs::copy_options::overwrite_existing);
    return "containerRuntime = \"fake\"\npluginDir = \"" + plugins.path() + "\"\n";
}

// A state directory and config running the fake runtime, with workspaces in a directory of its
// own (`ws()`), and the two entry points: submit and turn.
struct PolicySetup : DaemonSetup {
    explicit PolicySetup(const std::string& run_keys = "")
        : DaemonSetup(fake_plugin_keys() + run_keys) {
        fs::create_directories(ws());
    }
    std::string ws() const { return dir() / "ws"; }

    // `radiald turn` with a fixed turn id, the workspace and `flags`, running `argv`.
    test::ProcessResult turn(const std::vector<std::string>& flags,
                             const std::vector<std::string>& argv = {"echo", "hi"}) const {
        std::vector<std::string> a{RADIALD_PATH, "turn",      "--config",
                                   config(),     "--turn-id", "policy-turn"};
        a.insert(a.end(), flags.begin(), flags.end());
        a.push_back("--");
        a.insert(a.end(), argv.begin(), argv.end());
        return test::run_process(a, {}, 60s);
    }
};

// A unix socket bound at `path`, closed with its owner.
struct BoundSocket {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    explicit BoundSocket(const std::string& path) {
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
        EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << path;
    }
    ~BoundSocket() { ::close(fd); }
};

std::size_t files_in(const std::string& dir) {
    std::error_code ec;
    std::size_t n = 0;
    for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator();
         it.increment(ec))
        ++n;
    return n;
}

// `radiald submit` refused `toml`: exit 1, one line naming `fragment`, nothing in the spool or
// the journal.
void expect_submit_refused(const PolicySetup& s, const std::string& toml,
                           const std::string& fragment) {
    auto r = s.submit_raw(toml);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr(fragment));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(files_in(s.state_dir() + "/spool/queue"), 0u);
    auto st = s.status();
    EXPECT_TRUE(st["queued"].empty()) << st.dump();
    EXPECT_TRUE(st["recent"].empty()) << st.dump();
}

// `radiald turn` refused: exit 125, the message, no box and no journal entry.
void expect_turn_refused(const PolicySetup& s, const test::ProcessResult& r,
                         const std::string& fragment) {
    EXPECT_EQ(r.exit_code, 125) << r.err;
    EXPECT_THAT(r.err, HasSubstr(fragment));
    EXPECT_THAT(r.err, ::testing::Not(HasSubstr("starting box")));
    EXPECT_TRUE(s.records("policy-turn").is_null());
}

std::string request(const std::string& body, const std::string& image = "img",
                    const std::string& argv = "[\"echo\", \"hi\"]") {
    return "image = \"" + image + "\"\nargv = " + argv + "\n" + body;
}

std::string mount(const std::string& source, const std::string& target, bool read_only = false) {
    return "[[mounts]]\nsource = \"" + source + "\"\ntarget = \"" + target +
           "\"\nreadOnly = " + (read_only ? "true" : "false") + "\n";
}

// ---- C-14, radiald submit ----

TEST(C14_Submit, WorkspaceRootIsRefused) {
    PolicySetup s;
    expect_submit_refused(s, request("workspace = \"/\"\n"),
                          "workspace '/' is, lies under or contains the protected host path '/'");
}

TEST(C14_Submit, MountOfRootReadWriteIsRefused) {
    PolicySetup s;
    expect_submit_refused(s, request(mount("/", "/host")),
                          "mounts[0].source '/' is, lies under or contains the protected host "
                          "path '/'");
}

TEST(C14_Submit, EtcOverEtcIsRefused) {
    PolicySetup s;
    expect_submit_refused(s, request(mount("/etc", "/etc")),
                          "mounts[0].source '/etc' is, lies under or contains the protected host "
                          "path '/etc'; no request may mount it, whatever run.workspaceRoots says");
}

TEST(C14_Submit, TheDockerSocketIsRefused) {
    PolicySetup s;
    ASSERT_TRUE(fs::exists("/var/run/docker.sock")) << "the suite needs the engine's socket here";
    expect_submit_refused(s, request(mount("/var/run/docker.sock", "/var/run/docker.sock")),
                          "mounts[0].source '/var/run/docker.sock' (which resolves to "
                          "'/run/docker.sock') is a socket");
}

TEST(C14_Submit, ASocketInsideAnAllowedRootIsRefused) {
    PolicySetup s;
    std::string sock = s.ws() + "/s.sock";
    BoundSocket bound(sock);
    expect_submit_refused(s, request(mount(sock, "/s.sock")), "is a socket");
}

TEST(C14_Submit, ADeviceNodeInsideAnAllowedRootIsRefused) {
    PolicySetup s;
    std::string dev = s.ws() + "/null";
    ASSERT_EQ(::mknod(dev.c_str(), S_IFCHR | 0600, makedev(1, 3)), 0)
        << "the suite runs as root (mknod needs CAP_MKNOD): " << std::strerror(errno);
    expect_submit_refused(s, request(mount(dev, "/n")), "is a character device");
}

TEST(C14_Submit, ASymlinkInsideAnAllowedRootPointingAtEtcIsRefused) {
    PolicySetup s;
    fs::create_directory_symlink("/etc", s.ws() + "/link");
    expect_submit_refused(s, request("workspace = \"" + s.ws() + "/link\"\n"),
                          "workspace '" + s.ws() +
                              "/link' (which resolves to '/etc') is, lies under or contains the "
                              "protected host path '/etc'");
    expect_submit_refused(s, request(mount(s.ws() + "/../../..", "/x")),
                          "mounts[0].source '/' is, lies under or contains the protected host "
                          "path '/'");
}

TEST(C14_Submit, TheStateDirectoryAndTheEngineDataRootAreRefused) {
    PolicySetup s("workspaceRoots = [\"/var/lib\", \"/tmp\"]\n");
    fs::create_directories(s.state_dir());
    expect_submit_refused(s, request(mount(s.state_dir(), "/state")), "radiald's state directory");
    // A directory holding the state directory hands the box the journal and every turn socket.
    expect_submit_refused(s, request(mount(s.dir().path(), "/d")), "radiald's state directory");
    ASSERT_TRUE(fs::is_directory("/var/lib/docker"))
        << "the suite needs the engine's data root here";
    expect_submit_refused(s, request(mount("/var/lib/docker", "/d")),
                          "the protected host path '/var/lib/docker'");
    expect_submit_refused(s, request(mount("/var/lib", "/d")),
                          "the protected host path '/var/lib/docker'");
}

TEST(C14_Submit, ASourceOutsideTheWorkspaceRootsIsRefused) {
    test::TempDir other("radial-out");
    PolicySetup narrow("workspaceRoots = [\"/nonexistent-root\"]\n");
    expect_submit_refused(
        narrow, request("workspace = \"" + other.path() + "\"\n"),
        "workspace '" + other.path() + "' is outside run.workspaceRoots ('/nonexistent-root')");
    expect_submit_refused(narrow, request(mount(other.path(), "/o")),
                          "mounts[0].source '" + other.path() + "' is outside run.workspaceRoots");
}

TEST(C14_Submit, ATargetThatNormalisesIntoProcIsRefused) {
    PolicySetup s;
    expect_submit_refused(s, request(mount(s.ws(), "/work/../proc")),
                          "mounts[0].target '/proc' is '/proc', under /proc in the box");
    expect_submit_refused(s, request(mount(s.ws(), "/run/radial/x")), "under /run/radial");
    expect_submit_refused(s, request(mount(s.ws(), "/dev/shm")), "under /dev");
    expect_submit_refused(s, request(mount(s.ws(), "/sys/fs")), "under /sys");
}

TEST(C14_Submit, ATargetWithAColonOrACommaIsRefused) {
    PolicySetup s;
    expect_submit_refused(s, request(mount(s.ws(), "/y:rw")),
                          "mounts[0].target '/y:rw' contains ':', ','");
    expect_submit_refused(s, request(mount(s.ws(), "/y,readonly=false")),
                          "mounts[0].target '/y,readonly=false' contains ':', ','");
}

TEST(C14_Submit, AnImageThatIsNotAReferenceIsRefused) {
    PolicySetup s;
    expect_submit_refused(s, request("", "--privileged"),
                          "image '--privileged' is not a valid image reference");
    expect_submit_refused(s, request("", "Busybox"), "image 'Busybox' is not a valid image");
}

TEST(C14_Submit, AnImageOutsideAllowedImagesIsRefused) {
    PolicySetup s("allowedImages = [\"radial/*\"]\n");
    expect_submit_refused(s, request("", "evil/miner:latest"),
                          "image 'evil/miner:latest' matches none of run.allowedImages "
                          "('radial/*')");
    EXPECT_EQ(s.submit_raw(request("", "radial/busybox:latest")).exit_code, 0);
}

// A request relaying untrusted input names secrets: it takes only the variables of radiald's
// environment run.secretNames lets it, not another team's token or the host's own credentials.
TEST(C14_Submit, ASecretOutsideSecretNamesIsRefused) {
    PolicySetup s("secretNames = [\"TEAM_A_*\", \"GITHUB_TOKEN\"]\n");
    expect_submit_refused(s, request("secrets = [\"TEAM_A_KEY\", \"OTHER_TEAM_TOKEN\"]\n"),
                          "secret 'OTHER_TEAM_TOKEN' matches none of run.secretNames ('TEAM_A_*', "
                          "'GITHUB_TOKEN'): a request may take only the variables of radiald's "
                          "environment the operator lets it");
    expect_submit_refused(s, request("secrets = [\"GITHUB_TOKEN_2\"]\n"),
                          "secret 'GITHUB_TOKEN_2' matches none of run.secretNames");
    EXPECT_EQ(s.submit_raw(request("secrets = [\"TEAM_A_KEY\", \"GITHUB_TOKEN\"]\n")).exit_code, 0);
}

TEST(C14_Submit, ARecordTypeTheSocketWouldRefuseIsRefused) {
    PolicySetup s;
    expect_submit_refused(
        s, request("recordType = \"a b\"\n"),
        "the record type 'a b' (--record-type, recordType in a turn file) must be 1 to");
}

// radiald's own records are told apart by their type: a turn whose box could post
// "radial.egress" records could forge the broker's receipts.
TEST(C14_Submit, ARecordTypeOfRadialdsOwnIsRefused) {
    PolicySetup s;
    for (const char* type : {"radial.egress", "radial.egress.open", "radial.anything"})
        expect_submit_refused(s, request(std::string("recordType = \"") + type + "\"\n"),
                              "are radiald's own records");
}

TEST(C14_Submit, AnArgvElementWithNulIsRefused) {
    PolicySetup s;
    expect_submit_refused(s, request("", "img", "[\"echo\", \"a\\u0000b\"]"),
                          "argv[1] contains a NUL byte");
    expect_submit_refused(s, request("[env]\nX = \"a\\u0000b\"\n"), "env.X contains a NUL byte");
}

TEST(C14_Submit, AFiveMegabyteArgvIsRefusedNamingTheLimit) {
    PolicySetup s;
    expect_submit_refused(s,
                          request("", "img", "[\"echo\", \"" + std::string(5'000'000, 'a') + "\"]"),
                          "argv[1] is 5000001 bytes; the kernel refuses any single argument or "
                          "environment entry over 131072 bytes (MAX_ARG_STRLEN)");
    std::string many = "[\"echo\"";
    for (int i = 0; i < 50; ++i) many += ", \"" + std::string(100'000, 'a') + "\"";
    many += "]";
    expect_submit_refused(s, request("", "img", many), "ARG_MAX");
}

// C-23: an argv element or environment value of 200 KiB is refused by submit before any process
// starts, naming the kernel's limit — never reported as a missing docker CLI.
TEST(C23_Submit, A200KiBArgvElementOrEnvValueIsRefusedNamingTheKernelsLimit) {
    PolicySetup s;
    const std::string big(200 * 1024, 'a');
    expect_submit_refused(s, request("", "img", "[\"echo\", \"" + big + "\"]"),
                          "argv[1] is 204801 bytes; the kernel refuses any single argument or "
                          "environment entry over 131072 bytes (MAX_ARG_STRLEN)");
    auto r = s.submit_raw(request("[env]\nBIG = \"" + big + "\"\n"));
    EXPECT_NE(r.exit_code, 0);
    EXPECT_THAT(r.err, HasSubstr("MAX_ARG_STRLEN")) << r.err;
    EXPECT_THAT(r.err, Not(HasSubstr("install"))) << r.err;
    EXPECT_EQ(files_in(s.state_dir() + "/spool/queue"), 0u);
}

TEST(C14_Submit, AnAcceptableRequestIsStillAccepted) {
    PolicySetup s;
    auto r =
        s.submit_raw(request("workspace = \"" + s.ws() + "\"\n" + mount(s.ws(), "/data", true)));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(files_in(s.state_dir() + "/spool/queue"), 1u);
}

// ---- Inputs at the edges: submit refuses what the run would (docs/design.md §7.5) ----

TEST(C14_Submit, AMountOverTheBoxUsersFilesOrHomeIsRefused) {
    PolicySetup s;
    for (const char* target : {"/etc/passwd", "/etc/group", "/home/radial", "/home/radial/",
                               "/home/x/../radial", "/home/radial/.codex"})
        expect_submit_refused(s, request(mount(s.ws(), target)),
                              "which radiald gives the box user");
    // Beside them is still fine.
    auto r = s.submit_raw(request(mount(s.ws(), "/home/radial/cache")));
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(C14_Submit, AnUpperCaseRepositoryNameIsRefused) {
    PolicySetup s;
    for (const char* image : {"Radial/busybox:latest", "Localhost/busybox", "radial/BusyBox"})
        expect_submit_refused(s, request("", image), "is not a valid image reference");
    // A registry host is case-insensitive: the engine takes these, and so does submit.
    for (const char* image : {"Registry.Example.com/radial/busybox", "localhost/busybox"}) {
        auto r = s.submit_raw(request("", image));
        EXPECT_EQ(r.exit_code, 0) << image << r.err;
    }
}

TEST(C14_Turn, AnUpperCaseRepositoryNameIsRefused) {
    PolicySetup s;
    expect_turn_refused(s, s.turn({"--image", "Radial/busybox:latest"}),
                        "image 'Radial/busybox:latest' is not a valid image reference");
}

TEST(EdgeInputs, ATimeoutPastTheLimitIsRefusedNamingKeyAndLimit) {
    PolicySetup s;
    expect_submit_refused(s, request("timeout = \"2600000000000h\"\n"),
                          "timeout: must be a duration from 1ms to 720h");
    expect_submit_refused(s, request("timeout = \"721h\"\n"), "is more than the limit of 720h");
    expect_turn_refused(s, s.turn({"--image", "img", "--timeout", "2600000000000h"}),
                        "--timeout must be a duration from 1ms to 720h, such as 90s, 5m or 1500ms; "
                        "'2600000000000h' is more than the limit of 720h");
    expect_turn_refused(s, s.turn({"--image", "img", "--timeout", "99999999999999999999ms"}),
                        "--timeout must be a duration from 1ms to 720h");
    auto ok = s.turn({"--image", "img", "--timeout", "720h"});
    EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// Bytes that are not UTF-8 in any text of a request are refused naming the argument, never an
// internal error (docs/design.md §7.5).
TEST(EdgeInputs, BytesThatAreNotUtf8AreRefusedNamingTheArgument) {
    PolicySetup s;
    const std::string bad =
        "a\xff\xfe"
        "b";
    auto expect = [&](const test::ProcessResult& r, const std::string& fragment) {
        expect_turn_refused(s, r, fragment + " is not valid UTF-8 (byte 0xff at offset ");
        EXPECT_THAT(r.err, Not(HasSubstr("internal error")));
        EXPECT_THAT(r.err, Not(HasSubstr("json.exception")));
    };
    expect(s.turn({"--image", "img"}, {"echo", bad}), "argv[1]");
    expect(s.turn({"--image", "img", "--env", "X=" + bad}), "env.X");
    {
        std::vector<std::string> a{
            RADIALD_PATH,  "turn",    "--config", s.config(), "--turn-id",
            "policy-turn", "--image", "img",      "--secret", "RADIAL_BAD_SECRET",
            "--",          "echo",    "hi"};
        auto r = test::run_process(a, {{"RADIAL_BAD_SECRET", "secret-" + bad}}, 60s);
        expect(r, "the value of secret RADIAL_BAD_SECRET");
        EXPECT_THAT(r.err, Not(HasSubstr(bad))) << "a secret's value is never quoted";
    }
    fs::create_directory(s.ws() + "/" + bad);
    expect(s.turn({"--image", "img", "--workspace", s.ws() + "/" + bad}), "workspace");
}

// ---- C-14, the daemon checks again when it claims ----

TEST(C14_Run, ARequestChangedAfterSubmitIsRefusedWhenClaimed) {
    PolicySetup s;
    fs::create_directory(s.ws() + "/real");
    fs::create_directory_symlink(s.ws() + "/real", s.ws() + "/link");
    std::string id = s.submit(request("workspace = \"" + s.ws() + "/link\"\n"));
    ASSERT_FALSE(id.empty());
    // The spool keeps the path as given; the link now points at /etc.
    fs::remove(s.ws() + "/link");
    fs::create_directory_symlink("/etc", s.ws() + "/link");
    DaemonProcess d(s);
    ASSERT_TRUE(s.wait_terminal({id}, 15s)) << d.log();
    auto rec = s.terminal(id);
    EXPECT_EQ(rec["status"], "error");
    EXPECT_THAT(rec["error"].get<std::string>(),
                HasSubstr("workspace '" + s.ws() +
                          "/link' (which resolves to '/etc') is, lies under or contains the "
                          "protected host path '/etc'"));
    EXPECT_THAT(d.log(), ::testing::Not(HasSubstr("starting box")));
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(10s), 0) << d.log();
}

// ---- C-14, radiald turn ----

TEST(C14_Turn, WorkspaceRootIsRefused) {
    PolicySetup s;
    expect_turn_refused(s, s.turn({"--image", "img", "--workspace", "/"}),
                        "workspace '/' is, lies under or contains the protected host path '/'");
}

TEST(C14_Turn, EtcAsTheWorkspaceIsRefused) {
    PolicySetup s;
    expect_turn_refused(s, s.turn({"--image", "img", "--workspace", "/etc"}),
                        "the protected host path '/etc'");
}

TEST(C14_Turn, ASymlinkInsideAnAllowedRootPointingAtEtcIsRefused) {
    PolicySetup s;
    fs::create_directory_symlink("/etc", s.ws() + "/link");
    expect_turn_refused(s, s.turn({"--image", "img", "--workspace", s.ws() + "/link"}),
                        "(which resolves to '/etc') is, lies under or contains the protected "
                        "host path '/etc'");
    expect_turn_refused(s, s.turn({"--image", "img", "--workspace", s.ws() + "/../../.."}),
                        "the protected host path '/'");
}

TEST(C14_Turn, TheStateDirectoryIsRefused) {
    PolicySetup s;
    fs::create_directories(s.state_dir());
    expect_turn_refused(s, s.turn({"--image", "img", "--workspace", s.state_dir()}),
                        "radiald's state directory");
}

TEST(C14_Turn, AWorkspaceOutsideTheRootsIsRefused) {
    PolicySetup s("workspaceRoots = [\"/nonexistent-root\"]\n");
    expect_turn_refused(s, s.turn({"--image", "img", "--workspace", s.ws()}),
                        "is outside run.workspaceRoots ('/nonexistent-root')");
}

TEST(C14_Turn, AnImageThatIsNotAReferenceIsRefused) {
    PolicySetup s;
    expect_turn_refused(s, s.turn({"--image=--privileged"}),
                        "image '--privileged' is not a valid image reference");
}

TEST(C14_Turn, AnImageOutsideAllowedImagesIsRefused) {
    PolicySetup s("allowedImages = [\"radial/*\"]\n");
    expect_turn_refused(s, s.turn({"--image", "evil/miner"}), "matches none of run.allowedImages");
}

TEST(C14_Turn, ASecretOutsideSecretNamesIsRefused) {
    PolicySetup s("secretNames = []\n");
    expect_turn_refused(s, s.turn({"--image", "img", "--secret", "PATH"}),
                        "secret 'PATH' matches none of run.secretNames (none)");
    // Refused before it is looked up: the refusal does not tell whether it is set.
    expect_turn_refused(s, s.turn({"--image", "img", "--secret", "NOPE_SURELY_UNSET_VAR"}),
                        "secret 'NOPE_SURELY_UNSET_VAR' matches none of run.secretNames");
}

// A pattern that cannot match a variable name is a mistake, said with the key's position.
TEST(C14_Turn, ASecretNamesPatternThatNamesNoVariableIsRefused) {
    PolicySetup s("secretNames = [\"TEAM A\"]\n");
    auto r = s.turn({"--image", "img", "--", "true"});
    EXPECT_EQ(r.exit_code, 125) << r.err;
    EXPECT_THAT(r.err, HasSubstr("run.secretNames: 'TEAM A' is not a pattern of variable names"));
}

TEST(C14_Turn, ARecordTypeTheSocketWouldRefuseIsRefused) {
    PolicySetup s;
    expect_turn_refused(
        s, s.turn({"--image", "img", "--record-type", "a b"}),
        "the record type 'a b' (--record-type, recordType in a turn file) must be 1 to");
    expect_turn_refused(s, s.turn({"--image", "img", "--record-type", "radial.egress"}),
                        "are radiald's own records");
}

// The kernel keeps radiald's own command line under ARG_MAX, but the runtime's client needs room
// for its options too: an argv that radiald itself could just receive is refused.
TEST(C14_Turn, AnArgvTooLargeForTheRuntimesExecIsRefusedNamingTheLimit) {
    PolicySetup s;
    long arg_max = ::sysconf(_SC_ARG_MAX);
    ASSERT_GT(arg_max, 0);
    std::size_t env_bytes = 0;
    for (char** e = environ; *e != nullptr; ++e) env_bytes += std::strlen(*e) + 1 + sizeof(char*);
    // Between radiald's limit (ARG_MAX less 64 KiB) and what exec accepts for radiald itself.
    std::size_t want = static_cast<std::size_t>(arg_max) - 32 * 1024 - env_bytes;
    std::vector<std::string> argv{"echo"};
    for (std::size_t have = 0; have + 10'001 + sizeof(char*) < want; have += 10'001 + sizeof(char*))
        argv.push_back(std::string(10'000, 'a'));
    expect_turn_refused(s, s.turn({"--image", "img"}, argv), "ARG_MAX");
}

TEST(C14_Turn, AnAcceptableTurnStillRuns) {
    PolicySetup s;
    auto r = s.turn({"--image", "img", "--workspace", s.ws()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "hi\n");
}

// ---- C-15, the spool ----

// A valid request for turn `id`, as the spool keeps it.
std::string spool_json(const std::string& id, const std::string& word) {
    return "{\"turnId\": \"" + id + "\", \"image\": \"img\", \"argv\": [\"echo\", \"" + word +
           "\"], \"env\": {}, \"secrets\": [], \"mounts\": [], \"recordType\": \"result\"}\n";
}

std::size_t count_of(const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
}

TEST(C15_Spool, AFifoASymlinkAndADanglingSymlinkAreMovedAsideAndNewTurnsStillRun) {
    PolicySetup s("shutdownGrace = \"5s\"\n");
    DaemonProcess d(s);
    ASSERT_TRUE(d.wait_for_log("serving instance", 15s)) << d.log();
    std::string queue = s.state_dir() + "/spool/queue";
    std::string elsewhere = s.dir().write("valid.json", spool_json("s", "from-the-symlink"));
    ASSERT_EQ(::mkfifo((queue + "/f.json").c_str(), 0600), 0);
    fs::create_symlink(elsewhere, queue + "/s.json");
    fs::create_symlink(s.dir() / "nothing-here.json", queue + "/d.json");

    std::string id = s.submit(request(""));
    ASSERT_TRUE(s.wait_terminal({id}, 15s)) << d.log();
    EXPECT_EQ(s.terminal(id)["status"], "succeeded");

    std::string rejected = s.state_dir() + "/spool/rejected";
    EXPECT_TRUE(fs::is_fifo(fs::symlink_status(rejected + "/f.json")));
    EXPECT_TRUE(fs::is_symlink(fs::symlink_status(rejected + "/s.json")));
    EXPECT_TRUE(fs::is_symlink(fs::symlink_status(rejected + "/d.json")));
    EXPECT_EQ(files_in(queue), 0u);
    // Nothing outside the spool was read or run.
    EXPECT_TRUE(s.records("s").is_null());
    EXPECT_EQ(test::read_file(elsewhere), spool_json("s", "from-the-symlink"));
    std::string log = d.log();
    EXPECT_EQ(count_of(log, "spool/queue/f.json' to '"), 1u) << log;
    EXPECT_EQ(count_of(log, "spool/queue/s.json' to '"), 1u) << log;
    EXPECT_EQ(count_of(log, "spool/queue/d.json' to '"), 1u) << log;
    EXPECT_THAT(log, HasSubstr("unread: it is a fifo"));
    EXPECT_THAT(log, HasSubstr("unread: it is a symlink"));

    auto t0 = std::chrono::steady_clock::now();
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(10s), 0) << d.log();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

TEST(C15_Spool, AFileOwnedByAnotherUidIsMovedAsideUnread) {
    ASSERT_EQ(::geteuid(), 0u) << "the suite runs as root (chown to another uid)";
    PolicySetup s("shutdownGrace = \"5s\"\n");
    DaemonProcess d(s);
    ASSERT_TRUE(d.wait_for_log("serving instance", 15s)) << d.log();
    std::string queue = s.state_dir() + "/spool/queue";
    std::string tmp = s.dir().write("o.json", spool_json("o", "from-another-uid"));
    ASSERT_EQ(::chown(tmp.c_str(), 12345, 12345), 0);
    fs::rename(tmp, queue + "/o.json"); // inotify: IN_MOVED_TO
    ASSERT_TRUE(d.wait_for_log("spool/queue/o.json' to '", 15s)) << d.log();
    EXPECT_THAT(d.log(), HasSubstr("owned by uid 12345, not radiald's uid 0"));
    EXPECT_TRUE(fs::exists(s.state_dir() + "/spool/rejected/o.json"));
    std::string id = s.submit(request(""));
    ASSERT_TRUE(s.wait_terminal({id}, 15s)) << d.log();
    EXPECT_TRUE(s.records("o").is_null());
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(10s), 0) << d.log();
}

TEST(C15_Spool, SigtermStopsTheDaemonWithAFifoInTheQueue) {
    PolicySetup s("shutdownGrace = \"2s\"\n");
    std::string queue = s.state_dir() + "/spool/queue";
    fs::create_directories(queue);
    ASSERT_EQ(::mkfifo((queue + "/f.json").c_str(), 0600), 0);
    DaemonProcess d(s);
    ASSERT_TRUE(d.wait_for_log("serving instance", 15s)) << d.log();
    auto t0 = std::chrono::steady_clock::now();
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(10s), 0) << d.log();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s + 1s);
    EXPECT_TRUE(fs::is_fifo(fs::symlink_status(s.state_dir() + "/spool/rejected/f.json")));
}

// The engine answers the preflight but then hangs (the box listing never gets an answer) while the
// daemon reconciles at startup: SIGTERM still stops it within run.shutdownGrace.
TEST(C15_Daemon, SigtermDuringAHungStartupReconciliationStopsWithinTheGrace) {
    std::atomic<bool> listed{false};
    test::FakeEngine engine([&](const std::string&, const std::string& path) {
        if (path == "/_ping") return test::ping_answer("1.41");
        // Startup asks whether the engine remaps user namespaces (docs/design.md §8.8).
        if (path.ends_with("/info")) return test::EngineAnswer{200, R"({"SecurityOptions":[]})"};
        listed = true;
        return test::EngineAnswer{0, "", true};
    });
    DaemonSetup s("shutdownGrace = \"2s\"\n",
                  "[run.docker]\nhost = \"" + engine.address() +
                      "\"\ncommandTimeout = \"60s\"\npull = \"never\"\n");
    DaemonProcess d(s);
    ASSERT_TRUE(test::wait_until([&] { return listed.load(); }, 15s)) << d.log();
    auto t0 = std::chrono::steady_clock::now();
    d.signal(SIGTERM);
    auto status = d.wait_exit(10s);
    auto took = std::chrono::steady_clock::now() - t0;
    ASSERT_TRUE(status.has_value()) << d.log();
    EXPECT_EQ(*status, 70) << d.log();
    EXPECT_LT(took, 2s + 1500ms);
    EXPECT_THAT(d.log(), HasSubstr("the startup reconciliation did not end within 2000 ms"));
}

// ---- C-17, a hung engine fails within its budget ----

// The engine accepts the connection and never answers, with a 3 s preflight budget: the real
// radiald and docker plugin fail naming the budget, within it.
TEST(C17_RadialdTurn, AHungEngineFailsNamingTheBudget) {
    test::FakeEngine engine([](const std::string&, const std::string&) {
        return test::EngineAnswer{0, "", true};
    });
    test::TempDir d("radial-c17r");
    std::string config = d.write(
        "radiald.toml", "[run]\nstateDir = \"" + d.path() + "/state\"\n[run.docker]\nhost = \"" +
                            engine.address() + "\"\npreflightTimeout = \"3s\"\npull = \"never\"\n");
    auto start = std::chrono::steady_clock::now();
    auto r = test::run_process({RADIALD_PATH, "turn", "--config", config, "--image",
                                "radial/busybox:latest", "--", "true"},
                               {}, 60s);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);
    EXPECT_EQ(r.exit_code, 125) << r.err;
    EXPECT_THAT(r.err, HasSubstr("no answer within 3000 ms (run.docker.preflightTimeout)"));
}

} // namespace
} // namespace radial
