// host/daemon/spool.h — the daemon's queue of turn requests on disk (docs/design.md §12.1, §2).
//
//   <stateDir>/spool/tmp/     requests being written; never read
//   <stateDir>/spool/queue/   <turnId>.json, one per request, from the moment it is submitted until
//                             its turn has a terminal record
//   <stateDir>/spool/rejected/ whatever was found in queue/ that radiald did not write: a fifo, a
//                             symlink, a device, a directory, a file another uid owns. Moved
//                             aside unread, with one log line each; never acted on.
//
// A request is written whole into tmp/, fsynced, and renamed into queue/ (never over an existing
// file), so the daemon — which watches queue/ with inotify — never sees half of one, and a crash
// leaves either the whole request or none. The spool holds what to run; the journal holds where
// each turn is. Whoever first sees a request without a journal entry (the submitter, or the daemon
// for a file that arrived otherwise) adds it as queued.
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "daemon/spooled_request.h"

namespace radial::daemon {

// A spool operation failed. what() names the path, the cause and the fix.
class SpoolError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A request could not be read for want of something the system lends (descriptors, memory,
// buffers), not for anything in the request: the turn stays queued and is read again later,
// never refused for it.
class SpoolBusy : public SpoolError {
public:
    using SpoolError::SpoolError;
};

class Spool {
public:
    // The largest request file the daemon reads, in bytes: well above any request the exec
    // limits let run.
    static constexpr std::size_t kMaxRequestBytes = 16u << 20;

    // Paths only; touches nothing. `state_dir` is run.stateDir.
    explicit Spool(const std::string& state_dir);

    // Creates spool/, tmp/, queue/ and rejected/ (0700) when missing. Throws SpoolError.
    void ensure_dirs() const;

    const std::string& queue_dir() const noexcept { return queue_dir_; }
    // The file of turn `turn_id` in queue/.
    std::string request_path(const std::string& turn_id) const;

    // Adds `r` to queue/ atomically and durably (see the file comment). Returns false, writing
    // nothing, when a request with that turn id is already queued. Throws SpoolError, writing
    // nothing, when the request is larger than kMaxRequestBytes (load() would refuse it).
    // [thread-safe]; several processes may enqueue at once.
    bool enqueue(const SpooledRequest& r) const;

    // Turn ids of the requests in queue/, sorted. Ignores regular files not named
    // "<turnId>.json"; moves every entry that is not a regular file owned by radiald's uid to
    // rejected/ (see the file comment) without opening it. Throws SpoolError when queue/ cannot
    // be read. [thread-safe]
    std::vector<std::string> list() const;

    // The queued request of `turn_id`; nullopt when there is none, or when the entry is not a
    // regular file owned by radiald's uid (it is then moved to rejected/). Opened with O_NOFOLLOW
    // and O_NONBLOCK, so neither a symlink nor a fifo is ever followed or waited on. Throws
    // SpoolError for a file that cannot be read, is larger than kMaxRequestBytes or is not a
    // request. [thread-safe]
    std::optional<SpooledRequest> load(const std::string& turn_id) const;

    // Replaces the request file of `turn_id` with `json` (atomically, durably): a claimed turn's
    // request masked once its secrets are known (docs/design.md §10.2); nothing loads a claimed
    // turn's request again. Throws SpoolError. [thread-safe]
    void overwrite(const std::string& turn_id, const std::string& json) const;

    // Removes the request of `turn_id` (durably); no error when it is already gone. Throws
    // SpoolError when it cannot be removed. [thread-safe]
    void remove(const std::string& turn_id) const;

    // Removes files in tmp/ older than `age`: submits that died before their rename. Returns how
    // many. Never throws. [thread-safe]
    std::size_t remove_stale_temp_files(std::chrono::seconds age) const noexcept;

    // Moves the request of `turn_id` to rejected/ (never over an earlier one), read or not, and
    // logs an error naming it and `why`. Never throws: one that cannot be moved is logged and left.
    void set_aside(const std::string& turn_id, const std::string& why) const noexcept;

private:
    // Moves queue/<name> to rejected/ (never over an earlier one) and logs one line naming it and
    // `why`. Never throws: an entry that cannot be moved is logged and left.
    void reject(const std::string& name, const std::string& why) const noexcept;
    // The move itself: the path it went to, or "" with errno's value in `err`.
    std::string move_to_rejected(const std::string& name, int& err) const noexcept;

    std::string spool_dir_, tmp_dir_, queue_dir_, rejected_dir_;
};

} // namespace radial::daemon
