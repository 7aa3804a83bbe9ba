// The writer between a turn's output and radiald's own stdout and stderr (docs/design.md §3.6):
// a reader that takes nothing costs at most run.outputStall and what it did not take is counted;
// a reader that takes slowly loses nothing; radiald's last line comes after the box's last byte.
#include "cli/output_delivery.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <string>
#include <thread>

namespace radial::cli {
namespace {
using namespace std::chrono_literals;
using Channel = OutputDelivery::Channel;

struct Pipe {
    int r = -1, w = -1;
    Pipe() {
        int fds[2];
        EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
        r = fds[0];
        w = fds[1];
    }
    ~Pipe() {
        if (r >= 0) ::close(r);
        if (w >= 0) ::close(w);
    }
    // Everything in the pipe now, without blocking.
    std::string take_all() const {
        ::fcntl(r, F_SETFL, O_NONBLOCK);
        std::string out;
        char buf[65536];
        for (ssize_t n; (n = ::read(r, buf, sizeof buf)) > 0;) out.append(buf, n);
        return out;
    }
};

TEST(OutputDelivery, AReaderThatTakesNothingCostsAtMostTheStallAndEveryByteIsCounted) {
    Pipe p;
    const std::string chunk(64 * 1024, 'x');
    constexpr int kChunks = 64; // 4 MiB: far more than the pipe and the buffer hold
    const auto t0 = std::chrono::steady_clock::now();
    OutputDelivery d(p.w, p.w, 300ms, 256 * 1024);
    for (int i = 0; i < kChunks; ++i) d.write(Channel::box_stdout, chunk);
    const auto dropped = d.drain_box_output();
    const auto took = std::chrono::steady_clock::now() - t0;
    d.close();
    // One stall while the box ran (then dropping without waiting), none at the end.
    EXPECT_LT(took, 3s);
    EXPECT_GT(dropped.stdout_bytes, 0u);
    EXPECT_EQ(dropped.stderr_bytes, 0u);
    const std::string delivered = p.take_all();
    EXPECT_EQ(delivered.size() + dropped.stdout_bytes, chunk.size() * kChunks);
}

TEST(OutputDelivery, AReaderThatTakesSlowlyLosesNothing) {
    Pipe p;
    std::string got;
    std::thread reader([&] {
        char buf[4096];
        for (ssize_t n; (n = ::read(p.r, buf, sizeof buf)) > 0;) {
            got.append(buf, n);
            std::this_thread::sleep_for(1ms);
        }
    });
    std::string sent;
    {
        OutputDelivery d(p.w, p.w, 5s, 64 * 1024);
        for (int i = 0; i < 256; ++i) {
            std::string chunk(4096, static_cast<char>('a' + i % 26));
            d.write(Channel::box_stdout, chunk);
            sent += chunk;
        }
        const auto dropped = d.drain_box_output();
        EXPECT_EQ(dropped.stdout_bytes, 0u);
        d.close();
    }
    ::close(p.w);
    p.w = -1;
    reader.join();
    EXPECT_EQ(got, sent);
}

TEST(OutputDelivery, RadialdsLastLineComesAfterTheBoxsLastBytes) {
    Pipe p;
    std::string got;
    std::thread reader([&] {
        char buf[4096];
        for (ssize_t n; (n = ::read(p.r, buf, sizeof buf)) > 0;) got.append(buf, n);
    });
    {
        OutputDelivery d(p.w, p.w, 5s);
        for (int i = 0; i < 100; ++i) d.write(Channel::box_stdout, std::string(1000, 'o'));
        d.write(Channel::box_stderr, "last bytes without a newline");
        d.drain_box_output();
        d.write(Channel::log, "radiald[turn] info: turn t: succeeded after 1 ms\n");
        d.close();
    }
    ::close(p.w);
    p.w = -1;
    reader.join();
    EXPECT_EQ(got, std::string(100'000, 'o') + "last bytes without a newline" +
                       "radiald[turn] info: turn t: succeeded after 1 ms\n");
}

TEST(OutputDelivery, AReaderThatIsGoneIsNotWaitedFor) {
    std::signal(SIGPIPE, SIG_IGN); // as radiald's main does
    Pipe p;
    ::close(p.r);
    p.r = -1;
    const auto t0 = std::chrono::steady_clock::now();
    OutputDelivery d(p.w, p.w, 30s, 64 * 1024);
    for (int i = 0; i < 64; ++i) d.write(Channel::box_stderr, std::string(64 * 1024, 'e'));
    const auto dropped = d.drain_box_output();
    d.close();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
    EXPECT_EQ(dropped.stderr_bytes, 64u * 64 * 1024);
}

// The stall is measured from the reader's last take, not from the box's end: a reader slower than
// the box but still reading gets every byte even when that takes many stalls.
TEST(OutputDelivery, AReaderSlowerThanTheStallButStillReadingLosesNothingAtTheEnd) {
    Pipe p;
    std::string got;
    std::thread reader([&] {
        char buf[4096];
        for (ssize_t n; (n = ::read(p.r, buf, sizeof buf)) > 0;) {
            got.append(buf, n);
            std::this_thread::sleep_for(10ms);
        }
    });
    const std::string sent(1 << 20, 's'); // 256 reads: 2.5 s at least, five stalls
    {
        OutputDelivery d(p.w, p.w, 500ms, 2 << 20);
        d.write(Channel::box_stdout, sent); // all of it queued at once: the box ended at once
        const auto dropped = d.drain_box_output();
        EXPECT_EQ(dropped.stdout_bytes, 0u);
        d.close();
    }
    ::close(p.w);
    p.w = -1;
    reader.join();
    EXPECT_EQ(got.size(), sent.size());
}

// stdout's reader gone (radiald turn | head -c 100) leaves stderr working: radiald's own lines,
// the outcome's above all, still reach it.
TEST(OutputDelivery, AStdoutThatIsGoneLeavesStderrWorking) {
    std::signal(SIGPIPE, SIG_IGN); // as radiald's main does
    Pipe out, err;
    ::close(out.r);
    out.r = -1;
    std::string got;
    std::thread reader([&] {
        char buf[4096];
        for (ssize_t n; (n = ::read(err.r, buf, sizeof buf)) > 0;) got.append(buf, n);
    });
    {
        OutputDelivery d(out.w, err.w, 30s, 64 * 1024);
        for (int i = 0; i < 8; ++i) d.write(Channel::box_stdout, std::string(64 * 1024, 'o'));
        d.write(Channel::box_stderr, "box stderr\n");
        const auto dropped = d.drain_box_output();
        EXPECT_EQ(dropped.stdout_bytes, 8u * 64 * 1024);
        EXPECT_EQ(dropped.stderr_bytes, 0u);
        d.write(Channel::log, "radiald[turn] info: turn t: succeeded after 1 ms\n");
        d.close();
    }
    ::close(err.w);
    err.w = -1;
    reader.join();
    EXPECT_EQ(got, "box stderr\nradiald[turn] info: turn t: succeeded after 1 ms\n");
}

} // namespace
} // namespace radial::cli
