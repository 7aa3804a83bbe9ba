// host/journal/journal_sqlite.h — the turn journal in one SQLite file under the state directory
// (docs/design.md §11).
//
// Durability: journal_mode=WAL with synchronous=FULL, and every write is one transaction, so a
// call that returned is on disk and a process killed at any instant (SIGKILL included) leaves the
// journal as it was after the last returned write. The schema carries its version in
// `PRAGMA user_version` and is migrated forward on open; a file from a newer radiald is refused.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "journal/journal.h"

namespace radial::journal {

// Where the journal's timestamps come from. Tests inject a fixed or stepping clock.
using JournalClock = std::function<std::chrono::system_clock::time_point()>;

// The schema version this radiald writes (`PRAGMA user_version`).
inline constexpr int kJournalSchemaVersion = 2;

// Opens the journal at `path`, creating the file (mode 0600) and any missing parent directories
// (mode 0700) first, and creating or migrating the schema. Existing files and directories keep
// their modes. `clock` stamps state changes and records (default: the system clock).
//
// Errors (JournalError, what() "opening the journal '<path>': <cause>; <fix>"): newer_schema when
// the file's user_version is above kJournalSchemaVersion; storage when the directory or file
// cannot be created or opened, the file is not an SQLite database or holds tables that are not a
// journal's, or another process holds it locked past the busy timeout.
//
// Thread-safety: may be called from any thread, also for the same path from several threads or
// processes at once; the returned journal is [thread-safe] (one connection behind one mutex).
std::unique_ptr<Journal> open_sqlite_journal(const std::string& path, JournalClock clock = {});

// As open_sqlite_journal, but writes nothing to the journal: nullptr where open_sqlite_journal
// would create the file, migrate its schema or switch on write-ahead logging, so that a caller
// not yet sure its turn may run leaves the journal as it was (docs/design.md §3.2). Same errors,
// same thread-safety.
std::unique_ptr<Journal> open_sqlite_journal_unchanged(const std::string& path,
                                                       JournalClock clock = {});

// For the commands that only read (turns, records, logs, status): as open_sqlite_journal, but
// where the state directory's file system is read-only (a backup mounted to be looked at, a
// state directory remounted read-only), or so full that the read-write open fails (less than
// 1 MiB left), the journal is opened read-only instead of failing at its side files
// (journal_file.h, open_journal_file_read_only); its writing calls then fail as a read-only
// database does. Same errors otherwise, same thread-safety.
std::unique_ptr<Journal> open_sqlite_journal_for_reading(const std::string& path,
                                                         JournalClock clock = {});

} // namespace radial::journal
