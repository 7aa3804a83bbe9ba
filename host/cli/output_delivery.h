// host/cli/output_delivery.h — a turn's redacted output and radiald's own log lines on their way
// to radiald's stdout and stderr (docs/design.md §3.6). One FIFO for both descriptors, so the
// caller sees them in the order they were produced (radiald's last line after the box's last
// byte), written by a thread of its own: a reader that takes nothing never holds the turn. The
// queue is bounded; a producer waits for room only while the reader takes something, and at most
// `stall` after the reader last did; past that, output is dropped and counted, never waited for.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "turn/terminal_record.h"

namespace radial::cli {

// How many bytes may wait for the reader (docs/design.md §3.6).
inline constexpr std::size_t kOutputBufferBytes = 1 << 20;

class OutputDelivery {
public:
    // What is queued: the box's stdout or stderr, or a line of radiald's log (to `err_fd`).
    enum class Channel { box_stdout, box_stderr, log };

    // `out_fd` and `err_fd` stay the caller's (not closed). Starts the writer thread; throws
    // std::system_error when it cannot.
    OutputDelivery(int out_fd, int err_fd, std::chrono::milliseconds stall,
                   std::size_t buffer_bytes = kOutputBufferBytes);
    ~OutputDelivery(); // stops the writer at once (close() first to deliver what is queued)
    OutputDelivery(const OutputDelivery&) = delete;
    OutputDelivery& operator=(const OutputDelivery&) = delete;

    // Queues `bytes`. Waits for room only while the reader keeps taking output, and never longer
    // than `stall` after it last took any; then drops them and counts them. [thread-safe]
    void write(Channel channel, std::string_view bytes);

    // The box is gone: waits until its output queued so far is written, but not past `stall`
    // after the reader last took something, then drops what is left of it. Returns the box's bytes
    // dropped over the whole turn. Later writes still go out (radiald's last lines). [thread-safe]
    turn::TerminalRecord::OutputDropped drain_box_output();

    // Waits for everything queued, but not past `stall` after the reader last took something,
    // drops the rest and stops the writer; writes
    // after it are dropped. Idempotent. [thread-safe]
    void close();

private:
    struct Chunk {
        Channel channel;
        std::string bytes;
        std::size_t offset = 0;
        std::uint64_t id = 0;
    };
    void writer_loop();
    void drop_queued(bool box_only); // with mutex_ held
    void drop_broken();              // every chunk for a broken descriptor; with mutex_ held
    template <typename Pending>
    void wait_while_reading(std::unique_lock<std::mutex>& lock, Pending pending);
    static int fd_index(Channel c) { return c == Channel::box_stdout ? 0 : 1; }
    void count_dropped(Channel channel, std::uint64_t n);
    bool box_output_queued() const; // with mutex_ held

    int fds_[2];
    std::chrono::milliseconds stall_;
    std::size_t buffer_bytes_;
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<Chunk> queue_;
    std::size_t queued_bytes_ = 0;
    std::uint64_t next_id_ = 0;
    std::chrono::steady_clock::time_point last_progress_;
    bool stalled_ = false; // the reader took nothing for `stall`: drop until it takes again
    bool broken_[2] = {false, false}; // a write to fds_[i] failed (its reader is gone): what is
                                      // for it is dropped, the other descriptor goes on
    bool stop_ = false;
    bool writing_ = false; // the writer is in write(), outside the mutex
    turn::TerminalRecord::OutputDropped dropped_;
    std::uint64_t dropped_log_bytes_ = 0;
    std::thread writer_;
};

} // namespace radial::cli
