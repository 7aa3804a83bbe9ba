// host/turn/terminal_reserve.h — a place for a turn's terminal record that cannot run out of
// space: when the journal cannot take the record (the state file system is full), it is kept here
// until it can, so a turn that ran is never remembered as merely "started".
//
// Every turn reserves kTerminalReserveBytes in <stateDir>/pending/<turnId>.json before its box
// starts (the file is filled with newlines and synced, so its blocks are allocated). Writing the
// record later overwrites those blocks instead of asking the file system for new ones. The record
// is written there as soon as the box is gone, before the journal is asked to take it, and the
// file is removed once the journal has it: a radiald that dies in between leaves the true record,
// not a guess (docs/design.md §11.5). A file that is still blank belongs to a turn that is
// running, or whose radiald died before its box ended; a file holding JSON is a terminal record
// waiting to be journaled (`radiald status` shows it as pending; the daemon retries it; startup
// reconciliation journals it, or drops it when the journal already has the turn's record).
#pragma once

#include <radial/internal/unique_fd.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "turn/terminal_record.h"

namespace radial::turn {

// How much space each turn reserves for its terminal record, in bytes. A record with 4 KiB of
// output tail per stream takes about 9 KiB of JSON; a longer one has its tails shortened to fit.
inline constexpr std::size_t kTerminalReserveBytes = 16 * 1024;

// <stateDir>/pending/<turnId>.json. [thread-safe]
std::string pending_path(const std::string& state_dir, const std::string& turn_id);

// One turn's reserved space. Move-only. The destructor removes the file unless keep() stored a
// record in it. Not thread-safe; one owner (the thread running the turn).
class TerminalReserve {
public:
    // Creates the file (mode 0600; <stateDir>/pending is created 0700) and allocates its space.
    // Throws std::runtime_error "reserving space for the terminal record in '<path>': <cause>;
    // <fix>" — e.g. when the file system is already full.
    static TerminalReserve create(const std::string& state_dir, const std::string& turn_id);

    TerminalReserve(TerminalReserve&& other) noexcept;
    TerminalReserve& operator=(TerminalReserve&&) = delete;
    TerminalReserve(const TerminalReserve&) = delete;
    TerminalReserve& operator=(const TerminalReserve&) = delete;
    ~TerminalReserve();

    // Writes `rec` as JSON over the reserved space and syncs it (one fdatasync). Output tails
    // (then the error text) are shortened from the front until the record fits the reserve. May
    // be called again: the later record replaces the earlier one whole. Returns an empty string
    // on success, else what failed (the record could then not be kept anywhere on disk).
    std::string keep(TerminalRecord rec);

    // The journal holds the record: removes the file. Never throws.
    void release() noexcept;

    const std::string& path() const noexcept { return path_; }

private:
    TerminalReserve(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

    std::string path_;
    internal::UniqueFd fd_;
    bool kept_ = false;
    std::size_t written_ = 0; // the longest record written so far, in bytes
};

// A terminal record waiting in the reserve for the journal.
struct PendingTerminal {
    std::string turn_id;
    std::string status;
    std::string json; // the record as stored (trailing blank space removed)
};

// The pending record of one turn, or nullopt when its file is missing, blank or unreadable.
// [thread-safe]
std::optional<PendingTerminal> read_pending(const std::string& state_dir,
                                            const std::string& turn_id);

// Every pending record under the state directory, by turn id. [thread-safe]
std::vector<PendingTerminal> list_pending(const std::string& state_dir);

// Removes <stateDir>/pending/<turnId>.json, blank or not. Never throws. [thread-safe]
void remove_pending(const std::string& state_dir, const std::string& turn_id) noexcept;

} // namespace radial::turn
