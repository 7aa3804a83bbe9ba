// host/journal/sqlite_db.h — owners for an SQLite connection, a prepared statement and a
// transaction. Nothing in the journal calls sqlite3_close, sqlite3_finalize or ROLLBACK except
// through these, so no error path can leak a handle or leave a transaction open.
//
// Thread-safety: none of these types is thread-safe; their owner serializes use (the journal holds
// one mutex around every call). Errors throw SqliteError carrying SQLite's extended result code.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace radial::journal {

// An SQLite failure: what() is SQLite's own message (no context; callers add it), code() the
// extended result code (SQLITE_CONSTRAINT_UNIQUE, SQLITE_BUSY, SQLITE_NOTADB, …).
class SqliteError : public std::runtime_error {
public:
    SqliteError(int code, const std::string& message, int system_errno = 0)
        : std::runtime_error(message), code_(code), system_errno_(system_errno) {}
    int code() const noexcept { return code_; }
    // The primary result code (SQLITE_CONSTRAINT for SQLITE_CONSTRAINT_UNIQUE, …).
    int primary_code() const noexcept { return code_ & 0xff; }
    // The operating system's errno behind an I/O or open failure (ENOSPC, EROFS, …); 0 if none.
    int system_errno() const noexcept { return system_errno_; }

private:
    int code_;
    int system_errno_;
};

// One open connection. Move-only; closed (sqlite3_close_v2) when the owner goes out of scope.
class SqliteDb {
public:
    // Opens `path` read-write, creating it if missing, in serialized threading mode with extended
    // result codes. Throws SqliteError (SQLITE_CANTOPEN, …).
    explicit SqliteDb(const std::string& path);
    // Opens `path` read-only as an immutable file (SQLite's "immutable" URI parameter: no lock, no
    // side file, no write-ahead log read), for a file on a read-only file system, which no one can
    // change meanwhile. Throws SqliteError.
    struct ImmutableReadOnly {};
    SqliteDb(const std::string& path, ImmutableReadOnly);
    SqliteDb(SqliteDb&& other) noexcept;
    SqliteDb& operator=(SqliteDb&& other) noexcept;
    SqliteDb(const SqliteDb&) = delete;
    SqliteDb& operator=(const SqliteDb&) = delete;
    ~SqliteDb();

    sqlite3* get() const noexcept { return db_; }

    // Runs SQL text that holds no values (schema, pragmas with constants, BEGIN/COMMIT); values
    // always go through SqliteStmt's bind functions. Throws SqliteError.
    void exec(const char* sql);

    // Runs a single statement that yields one text value (e.g. "PRAGMA journal_mode=WAL") and
    // returns it. Throws SqliteError, or if no row comes back.
    std::string query_text(const char* sql);

    // Runs a single statement that yields one integer (e.g. "PRAGMA user_version").
    std::int64_t query_int(const char* sql);

    // SQLite's message for the connection's most recent failure.
    std::string last_message() const;

    // Throws SqliteError for result `rc` with the connection's current message.
    [[noreturn]] void fail(int rc) const;

private:
    SqliteDb(const std::string& name, int flags);
    sqlite3* db_ = nullptr;
};

// One prepared statement of a connection that must outlive it. Move-only; finalized when the owner
// goes out of scope. Parameters are 1-based, as in SQLite; columns are 0-based.
class SqliteStmt {
public:
    // Prepares `sql` (one statement) as a long-lived statement. Throws SqliteError.
    SqliteStmt(SqliteDb& db, std::string_view sql);
    SqliteStmt(SqliteStmt&& other) noexcept;
    SqliteStmt& operator=(SqliteStmt&& other) noexcept;
    SqliteStmt(const SqliteStmt&) = delete;
    SqliteStmt& operator=(const SqliteStmt&) = delete;
    ~SqliteStmt();

    // Binds text without copying it: `text` must stay alive until the statement is reset, which
    // Scope guarantees when the binding and the stepping happen inside one Scope.
    void bind(int index, std::string_view text);
    void bind(int index, std::int64_t value);
    void bind_null(int index);

    // Runs one step: true when a row is available, false when the statement is done.
    // Throws SqliteError for anything else (busy past the timeout, constraint violation, I/O).
    bool step();

    std::int64_t column_int(int col) const;
    std::string column_text(int col) const;                         // NULL reads as ""
    std::optional<std::string> column_optional_text(int col) const; // NULL reads as nullopt

    // Resets the statement and clears its bindings (so no borrowed text outlives the call).
    void reset() noexcept;

    // Resets the statement when it leaves scope, however the scope is left. Use one per execution.
    class [[nodiscard]] Scope {
    public:
        explicit Scope(SqliteStmt& stmt) noexcept : stmt_(stmt) {}
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;
        ~Scope() { stmt_.reset(); }
        SqliteStmt& operator*() const noexcept { return stmt_; }
        SqliteStmt* operator->() const noexcept { return &stmt_; }

    private:
        SqliteStmt& stmt_;
    };

private:
    sqlite3* db_ = nullptr; // for error messages
    sqlite3_stmt* stmt_ = nullptr;
};

// A transaction: BEGIN on construction, ROLLBACK on destruction unless commit() succeeded.
// `write` takes the database's write lock at once (BEGIN IMMEDIATE), so what the transaction
// reads cannot change before it writes — the read-then-write of a sequence number relies on it.
// A read transaction (BEGIN DEFERRED) sees one consistent snapshot across several queries.
// Throws SqliteError (SQLITE_BUSY after the connection's busy timeout).
class SqliteTransaction {
public:
    enum class Mode { read, write };
    SqliteTransaction(SqliteDb& db, Mode mode);
    SqliteTransaction(const SqliteTransaction&) = delete;
    SqliteTransaction& operator=(const SqliteTransaction&) = delete;
    ~SqliteTransaction();

    // Commits; with synchronous=FULL the data is on disk when it returns. Throws SqliteError
    // (the destructor then rolls back).
    void commit();

private:
    SqliteDb& db_;
    bool open_ = true;
};

} // namespace radial::journal
