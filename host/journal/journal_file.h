// host/journal/journal_file.h — the journal's SQLite file: created with private modes, checked to
// be a radiald journal this radiald can read, its pragmas set and its schema created or migrated
// (docs/design.md §11). Internal to the journal library; journal_sqlite.cpp is its one user.
#pragma once

#include <string>
#include <string_view>

#include "journal/journal.h"
#include "journal/sqlite_db.h"

namespace radial::journal {

// SQLite waits this long for another process's lock before a call fails with SQLITE_BUSY. Writes
// are single small transactions, so a longer wait means a stuck writer, not a busy one.
inline constexpr int kBusyTimeoutMs = 5000;

// A refusal decided by the journal code itself rather than by SQLite. `cause_and_fix` reads
// "<cause>; <fix>"; whoever catches it prefixes the operation and the path and throws JournalError.
struct JournalRefusal {
    JournalErrc code;
    std::string cause_and_fix;
};

// What an operator can do about an SQLite failure, by its primary result code (SQLITE_FULL: "the
// file system is full; free space and retry"). [thread-safe]
std::string_view fix_for_sqlite(int primary_code) noexcept;

// Creates any missing parent directories of `path` (0700). When no file is at `path`, builds a
// complete empty journal in a temporary file (0600) and links it into place, so a journal file is
// never seen half-created. Refuses, before writing anything to it, an existing file that is
// empty (0 bytes), an SQLite database without a journal's identity, or one with a newer schema
// (radiald never leaves any of these behind: they are damage, and an empty replacement would
// silently lose the history). Then sets journal_mode=WAL, synchronous=FULL, foreign_keys=ON and
// the busy timeout, and migrates the schema in one write transaction. Returns the connection.
// Throws JournalRefusal (storage, newer_schema) or SqliteError. [thread-safe] for distinct calls;
// the returned connection has one owner.
SqliteDb open_journal_file(const std::string& path);

} // namespace radial::journal
