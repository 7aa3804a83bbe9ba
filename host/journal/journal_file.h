// host/journal/journal_file.h — the journal's SQLite file: created with private modes, checked to
// be a radiald journal this radiald can read, its pragmas set and its schema created or migrated
// (docs/design.md §11). Internal to the journal library; journal_sqlite.cpp is its one user.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "journal/journal.h"
#include "journal/sqlite_db.h"

namespace radial::journal {

// SQLite waits this long for another process's lock before a call fails with SQLITE_BUSY. Writes
// are single small transactions, so a longer wait means a stuck writer, not a busy one.
inline constexpr int kBusyTimeoutMs = 5000;

// Schema version 1, frozen: journals in the field were made by it, the migrations start from
// it, and the test of the migration from version 1 builds its old journal with it. STRICT tables
// (SQLite 3.37+) so a wrong type is an error, not a coercion. The CHECKs restate the invariants the
// code keeps, so a bug cannot store a finished turn without its terminal record or a record that is
// not JSON.
inline constexpr const char* kJournalSchemaV1 = R"sql(
CREATE TABLE turns (
    turn_id       TEXT NOT NULL PRIMARY KEY CHECK (length(turn_id) > 0),
    label         TEXT NOT NULL,
    runtime       TEXT NOT NULL,
    image         TEXT NOT NULL,
    record_type   TEXT NOT NULL,
    request_json  TEXT NOT NULL CHECK (json_valid(request_json)),
    state         TEXT NOT NULL CHECK (state IN ('queued', 'claimed', 'started', 'finished')),
    status        TEXT NOT NULL DEFAULT '',
    terminal_json TEXT CHECK (terminal_json IS NULL OR json_valid(terminal_json)),
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    CHECK ((state = 'finished') = (terminal_json IS NOT NULL))
) STRICT;
CREATE INDEX turns_by_created ON turns (created_at_ms);
CREATE INDEX turns_by_state ON turns (state, created_at_ms);

CREATE TABLE turn_states (
    id      INTEGER PRIMARY KEY,
    turn_id TEXT NOT NULL REFERENCES turns (turn_id),
    state   TEXT NOT NULL CHECK (state IN ('queued', 'claimed', 'started', 'finished')),
    at_ms   INTEGER NOT NULL
) STRICT;
CREATE INDEX turn_states_by_turn ON turn_states (turn_id, id);

CREATE TABLE records (
    turn_id        TEXT NOT NULL REFERENCES turns (turn_id),
    seq            INTEGER NOT NULL CHECK (seq >= 1),
    type           TEXT NOT NULL CHECK (length(type) > 0),
    payload_json   TEXT NOT NULL CHECK (json_valid(payload_json)),
    received_at_ms INTEGER NOT NULL,
    UNIQUE (turn_id, seq)
) STRICT;
)sql";

// A refusal decided by the journal code itself rather than by SQLite. `cause_and_fix` reads
// "<cause>; <fix>"; whoever catches it prefixes the operation and the path and throws JournalError.
struct JournalRefusal {
    JournalErrc code;
    std::string cause_and_fix;
};

// What an operator can do about an SQLite failure, by the operating system's errno behind an I/O,
// open or full failure when that says more (ENOSPC under SQLITE_IOERR is a full disk, EROFS a
// read-only one), else by its
// primary result code (SQLITE_FULL: "the file system is full; free space and retry"). [thread-safe]
std::string_view fix_for_sqlite(int primary_code, int system_errno = 0) noexcept;

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

// As open_journal_file, but writes nothing to the journal: nullopt where open_journal_file would
// change it (no file yet; a schema to migrate; write-ahead logging not yet on). For a caller that
// opens the journal before it knows whether the turn may run, and opens it with
// open_journal_file only once it does (docs/design.md §3.2). Refuses what open_journal_file
// refuses, with the same errors. [thread-safe] for distinct calls.
std::optional<SqliteDb> open_journal_file_unchanged(const std::string& path);

// The journal at `path` on a read-only file system, for reading: opened immutable (nothing can
// change it there), after the checks open_journal_file makes of an existing file. Refuses a
// journal with a side file (-wal, -shm): a connection has it open, maybe through another mount
// that may write it, or left commits to apply; and one with another schema version than this
// radiald's (it cannot be migrated there); naming the fix. Throws JournalRefusal (storage,
// newer_schema) or SqliteError. [thread-safe] for distinct calls.
SqliteDb open_journal_file_read_only(const std::string& path);

} // namespace radial::journal
