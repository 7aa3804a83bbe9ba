// The spool (docs/design.md §12.1): atomic, durable, never over an existing request, and only ever
// what radiald wrote.
#include "daemon/spool.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <exception>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "../../support/temp_dir.h"

namespace radial::daemon {
namespace {
namespace fs = std::filesystem;

SpooledRequest request(const std::string& id) {
    SpooledRequest r;
    r.turn_id = id;
    r.image = "img";
    r.argv = {"sh", "-c", "echo 'quoted' \"$X\""};
    r.workdir = "/src";
    r.env = {{"X", "1", false}};
    r.secrets = {"GH_TOKEN"};
    r.mounts = {{"/tmp", "/t", true}};
    r.timeout_ms = 1500;
    r.record_type = "review";
    return r;
}

std::size_t files_in(const std::string& dir) {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
    return n;
}

TEST(Spool, EnqueuedRequestRoundTripsAndLeavesNoTemporaryFile) {
    test::TempDir d;
    Spool s(d.path());
    ASSERT_TRUE(s.enqueue(request("t1")));
    EXPECT_EQ(s.list(), (std::vector<std::string>{"t1"}));
    EXPECT_EQ(s.load("t1"), request("t1"));
    EXPECT_EQ(files_in(d / "spool/tmp"), 0u);
    EXPECT_EQ(fs::status(s.request_path("t1")).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write);
}

// A request that cannot be opened for want of descriptors is not a bad request: the load says the
// spool is busy (the turn stays queued), and the same request loads once descriptors are free.
TEST(Spool, ARequestThatCannotBeOpenedForWantOfDescriptorsIsBusyNotBad) {
    test::TempDir d;
    Spool s(d.path());
    ASSERT_TRUE(s.enqueue(request("t1")));
    // UBSan's first check of a dynamic type needs descriptors of its own (a pipe): the one the
    // load's message makes (fmt's buffer) is made here, while there are some, and the exception
    // is looked at only once descriptors are free again.
    ASSERT_EQ(fmt::format("{} {}", std::string("warm"), 1), "warm 1");
    rlimit old{};
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
    rlimit low = old;
    low.rlim_cur = std::min<rlim_t>(old.rlim_cur, 512);
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
    std::vector<int> taken;
    for (int fd; (fd = ::dup(2)) >= 0;) taken.push_back(fd);
    const int err = errno;
    std::exception_ptr thrown;
    try {
        (void)s.load("t1");
    } catch (...) {
        thrown = std::current_exception();
    }
    for (int fd : taken) ::close(fd);
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
    ASSERT_EQ(err, EMFILE);
    ASSERT_TRUE(thrown) << "out of descriptors, the request was read";
    try {
        std::rethrow_exception(thrown);
    } catch (const SpoolBusy& e) {
        EXPECT_NE(std::string(e.what()).find("stays queued"), std::string::npos) << e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "out of descriptors, the request was judged bad: " << e.what();
    }
    EXPECT_EQ(s.load("t1"), request("t1"));
}

TEST(Spool, TheFileHoldsSecretNamesOnly) {
    test::TempDir d;
    Spool s(d.path());
    ASSERT_TRUE(s.enqueue(request("t1")));
    std::string text = test::read_file(s.request_path("t1"));
    EXPECT_NE(text.find("\"secrets\": [\n    \"GH_TOKEN\"\n  ]"), std::string::npos) << text;
}

TEST(Spool, ASecondRequestWithTheSameIdIsRefusedAndTheFirstKept) {
    test::TempDir d;
    Spool s(d.path());
    ASSERT_TRUE(s.enqueue(request("t1")));
    SpooledRequest other = request("t1");
    other.image = "other";
    EXPECT_FALSE(s.enqueue(other));
    EXPECT_EQ(s.load("t1")->image, "img");
    EXPECT_EQ(files_in(d / "spool/tmp"), 0u);
}

// A request no load would take (past kMaxRequestBytes) is refused when it is queued, not when the
// daemon claims it; each field that can grow it, alone.
TEST(Spool, ARequestLargerThanALoadTakesIsNeverQueued) {
    test::TempDir d;
    Spool s(d.path());
    const std::string big(Spool::kMaxRequestBytes + 1, 'a');
    std::vector<SpooledRequest> cases(4, request("t1"));
    cases[0].workdir = "/" + big;
    cases[1].argv.push_back(big);
    cases[2].env.push_back({"BIG", big, false});
    cases[3].mounts.push_back({"/tmp", "/" + big, true});
    for (const auto& r : cases) {
        try {
            s.enqueue(r);
            ADD_FAILURE() << "a request of more than " << Spool::kMaxRequestBytes
                          << " bytes was queued";
        } catch (const SpoolError& e) {
            EXPECT_NE(std::string(e.what()).find("more than the 16777216 a request may have"),
                      std::string::npos)
                << e.what();
        }
        EXPECT_TRUE(s.list().empty());
    }
    EXPECT_TRUE(s.enqueue(request("t1"))) << "an ordinary request still is";
}

TEST(Spool, ConcurrentEnqueuesOfOneIdLetExactlyOneWin) {
    test::TempDir d;
    Spool s(d.path());
    s.ensure_dirs();
    std::atomic<int> wins{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i)
        threads.emplace_back([&] { wins += s.enqueue(request("same")) ? 1 : 0; });
    for (auto& t : threads) t.join();
    EXPECT_EQ(wins, 1);
    EXPECT_EQ(files_in(d / "spool/tmp"), 0u);
}

TEST(Spool, ListTakesOnlyRequestFilesAndMovesTheRestAside) {
    test::TempDir d;
    Spool s(d.path());
    s.ensure_dirs();
    test::TempDir unused;
    std::ofstream(s.queue_dir() + "/.t9.json.abc123") << "{";
    std::ofstream(s.queue_dir() + "/notes.txt") << "x";
    std::ofstream(s.queue_dir() + "/Bad_Id.json") << "{}";
    ASSERT_TRUE(s.enqueue(request("b")));
    ASSERT_TRUE(s.enqueue(request("a")));
    EXPECT_EQ(s.list(), (std::vector<std::string>{"a", "b"}));
    EXPECT_TRUE(fs::exists(d / "spool/rejected/notes.txt"));
    EXPECT_TRUE(fs::exists(d / "spool/rejected/Bad_Id.json"));
}

TEST(Spool, AFileRadialdDidNotWriteIsAnError) {
    test::TempDir d;
    Spool s(d.path());
    s.ensure_dirs();
    std::ofstream(s.request_path("t1")) << "{\"turnId\": \"t1\", \"image\": 3}";
    try {
        s.load("t1");
        FAIL() << "no error";
    } catch (const SpoolError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "reading the queued request '" + s.request_path("t1") +
                      "': field 'image' must be a string; requests are written "
                      "by 'radiald submit'");
    }
}

TEST(Spool, RemoveIsIdempotentAndLoadOfAMissingRequestIsEmpty) {
    test::TempDir d;
    Spool s(d.path());
    ASSERT_TRUE(s.enqueue(request("t1")));
    s.remove("t1");
    s.remove("t1");
    EXPECT_EQ(s.load("t1"), std::nullopt);
    EXPECT_TRUE(s.list().empty());
}

TEST(Spool, StaleTemporaryFilesAreRemovedFreshOnesKept) {
    test::TempDir d;
    Spool s(d.path());
    s.ensure_dirs();
    std::ofstream(d / "spool/tmp/.old.json.x") << "{";
    std::ofstream(d / "spool/tmp/.new.json.y") << "{";
    fs::last_write_time(d / "spool/tmp/.old.json.x",
                        fs::file_time_type::clock::now() - std::chrono::hours(2));
    EXPECT_EQ(s.remove_stale_temp_files(std::chrono::hours(1)), 1u);
    EXPECT_TRUE(fs::exists(d / "spool/tmp/.new.json.y"));
}

} // namespace
} // namespace radial::daemon
