#include "cli/output_delivery.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "cli/standard_output.h"

namespace radial::cli {
namespace {

// Real time: paced by a real reader on a real pipe (docs/design.md §12.7).
using Clock = std::chrono::steady_clock;

// At most this much per write(): a pipe that polls writable takes it without blocking, so the
// writer always comes back to see a stop (docs/design.md §3.6).
constexpr std::size_t kPiece = 4096;
// How often the writer looks again at a descriptor that is not writable.
constexpr int kPollMs = 100;

} // namespace

OutputDelivery::OutputDelivery(int out_fd, int err_fd, std::chrono::milliseconds stall,
                               std::size_t buffer_bytes)
    : fds_{out_fd, err_fd}, stall_(stall), buffer_bytes_(buffer_bytes) {
    last_progress_ = Clock::now();
    writer_ = std::thread([this] { writer_loop(); });
}

OutputDelivery::~OutputDelivery() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    cv_.notify_all();
    if (writer_.joinable()) writer_.join();
}

void OutputDelivery::count_dropped(Channel channel, std::uint64_t n) {
    switch (channel) {
        case Channel::box_stdout: dropped_.stdout_bytes += n; break;
        case Channel::box_stderr: dropped_.stderr_bytes += n; break;
        case Channel::log: dropped_log_bytes_ += n; break;
    }
}

void OutputDelivery::write(Channel channel, std::string_view bytes) {
    if (bytes.empty()) return;
    std::unique_lock lock(mutex_);
    auto no_room = [&] {
        return queued_bytes_ > 0 && queued_bytes_ + bytes.size() > buffer_bytes_;
    };
    bool& broken = broken_[fd_index(channel)];
    while (!stop_ && !broken && !stalled_ && no_room()) {
        const auto deadline = last_progress_ + stall_;
        if (Clock::now() >= deadline) {
            stalled_ = true; // cleared by the writer's next progress
            break;
        }
        cv_.wait_until(lock, deadline);
    }
    if (stop_ || broken || (stalled_ && no_room())) {
        count_dropped(channel, bytes.size());
        return;
    }
    // The wait for the reader starts with the first byte it has to take.
    if (queue_.empty()) last_progress_ = Clock::now();
    queue_.push_back({channel, std::string(bytes), 0, next_id_++});
    queued_bytes_ += bytes.size();
    cv_.notify_all();
}

void OutputDelivery::writer_loop() {
    char piece[kPiece];
    std::unique_lock lock(mutex_);
    for (;;) {
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        const std::uint64_t id = queue_.front().id;
        const int index = fd_index(queue_.front().channel);
        const int fd = fds_[index];
        lock.unlock();
        pollfd p{fd, POLLOUT, 0};
        const int ready = ::poll(&p, 1, kPollMs);
        lock.lock();
        if (stop_) return;
        if (ready > 0 && (p.revents & (POLLERR | POLLNVAL)) != 0) {
            // The reader is gone or the descriptor is unusable: nothing more goes out on it; the
            // other descriptor (radiald's stderr when stdout went to `head`) goes on.
            broken_[index] = true;
            drop_broken();
            cv_.notify_all();
            continue;
        }
        // Dropped while this thread waited for the descriptor: nothing of it may go out now.
        if (ready <= 0 || queue_.empty() || queue_.front().id != id) continue;
        Chunk& c = queue_.front();
        const std::size_t n = std::min(kPiece, c.bytes.size() - c.offset);
        c.bytes.copy(piece, n, c.offset);
        writing_ = true;
        lock.unlock();
        const ssize_t written = ::write(fd, piece, n);
        const int error = written < 0 ? errno : 0;
        lock.lock();
        writing_ = false;
        if (written > 0) {
            last_progress_ = Clock::now();
            stalled_ = false;
            // Still the front: nothing drops a chunk while a piece of it is being written.
            Chunk& front = queue_.front();
            front.offset += static_cast<std::size_t>(written);
            queued_bytes_ -= static_cast<std::size_t>(written);
            if (front.offset == front.bytes.size()) queue_.pop_front();
        } else if (error != 0 && error != EINTR && error != EAGAIN) {
            broken_[index] = true; // EPIPE: the reader is gone
            // Anything else (a full disk, /dev/full) lost output a reader wanted: the command
            // fails at its end, as every command does (cli/standard_output.h).
            if (error != EPIPE && fd == STDOUT_FILENO) note_standard_output_error(error);
            drop_broken();
        }
        cv_.notify_all();
    }
}

bool OutputDelivery::box_output_queued() const {
    for (const auto& c : queue_)
        if (c.channel != Channel::log) return true;
    return false;
}

void OutputDelivery::drop_broken() {
    for (auto it = queue_.begin(); it != queue_.end();) {
        if (!broken_[fd_index(it->channel)] || (writing_ && it == queue_.begin())) {
            ++it;
            continue;
        }
        const std::size_t left = it->bytes.size() - it->offset;
        count_dropped(it->channel, left);
        queued_bytes_ -= left;
        it = queue_.erase(it);
    }
}

// Waits while `pending` holds, until `stall` passes without the reader taking anything: the
// deadline moves with every write that went out, so a slow reader that keeps reading loses
// nothing (docs/design.md §3.6).
template <typename Pending>
void OutputDelivery::wait_while_reading(std::unique_lock<std::mutex>& lock, Pending pending) {
    while (pending()) {
        const auto deadline = last_progress_ + stall_;
        if (Clock::now() >= deadline) return;
        cv_.wait_until(lock, deadline);
    }
}

void OutputDelivery::drop_queued(bool box_only) {
    for (auto it = queue_.begin(); it != queue_.end();) {
        // The chunk a piece of which is being written stays: the writer counts that piece.
        if ((box_only && it->channel == Channel::log) || (writing_ && it == queue_.begin())) {
            ++it;
            continue;
        }
        const std::size_t left = it->bytes.size() - it->offset;
        count_dropped(it->channel, left);
        queued_bytes_ -= left;
        it = queue_.erase(it);
    }
}

turn::TerminalRecord::OutputDropped OutputDelivery::drain_box_output() {
    std::unique_lock lock(mutex_);
    // A reader that has taken nothing for `stall` already is not waited for at all.
    wait_while_reading(lock, [&] { return !stop_ && box_output_queued(); });
    // A piece being written is the writer's to count; a write to a descriptor that polled
    // writable does not block (on a terminal it may, briefly).
    cv_.wait_for(lock, std::chrono::seconds(1), [&] { return !writing_; });
    drop_queued(true);
    auto dropped = dropped_;
    // A piece still being written past that second is counted as not delivered (it may yet be).
    if (writing_ && !queue_.empty() && queue_.front().channel != Channel::log) {
        const auto& c = queue_.front();
        (c.channel == Channel::box_stdout ? dropped.stdout_bytes : dropped.stderr_bytes) +=
            c.bytes.size() - c.offset;
    }
    return dropped;
}

void OutputDelivery::close() {
    std::unique_lock lock(mutex_);
    if (stop_) return;
    wait_while_reading(lock, [&] { return !queue_.empty(); });
    stop_ = true;
    lock.unlock();
    cv_.notify_all();
    if (writer_.joinable()) writer_.join();
    lock.lock();
    drop_queued(false);
}

} // namespace radial::cli
