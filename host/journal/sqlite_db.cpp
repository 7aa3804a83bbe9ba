// host/journal/sqlite_db.cpp — see sqlite_db.h.
#include "journal/sqlite_db.h"

#include <sqlite3.h>

#include <cstring>
#include <limits>
#include <string>
#include <utility>

namespace radial::journal {

namespace {

// SQLite's message, plus the operating system's reason when an I/O failure has one: "disk I/O
// error" alone does not say that the disk is full.
std::string message_of(sqlite3* db, int code) {
    std::string message = sqlite3_errmsg(db);
    int primary = code & 0xff;
    if (primary == SQLITE_IOERR || primary == SQLITE_FULL || primary == SQLITE_CANTOPEN) {
        if (int err = sqlite3_system_errno(db); err != 0)
            message += std::string(" (") + std::strerror(err) + ")";
    }
    return message;
}

// "file:<path>?immutable=1", the path's '%', '?' and '#' escaped as a URI's must be.
std::string immutable_uri(const std::string& path) {
    std::string uri = "file:";
    for (const char c : path) {
        if (c == '%' || c == '?' || c == '#') {
            static constexpr char kHex[] = "0123456789ABCDEF";
            uri += '%';
            uri += kHex[static_cast<unsigned char>(c) >> 4];
            uri += kHex[static_cast<unsigned char>(c) & 0xf];
        } else {
            uri += c;
        }
    }
    return uri + "?immutable=1";
}

} // namespace

SqliteDb::SqliteDb(const std::string& path)
    : SqliteDb(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX |
                         SQLITE_OPEN_EXRESCODE) {}

SqliteDb::SqliteDb(const std::string& path, ImmutableReadOnly)
    : SqliteDb(immutable_uri(path), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_FULLMUTEX |
                                        SQLITE_OPEN_EXRESCODE) {}

SqliteDb::SqliteDb(const std::string& name, int flags) {
    sqlite3* db = nullptr;
    int rc = sqlite3_open_v2(name.c_str(), &db, flags, nullptr);
    // sqlite3_open_v2 hands back a handle even on failure (to carry the message); it must still
    // be closed, so it is owned before anything can throw.
    db_ = db;
    if (rc != SQLITE_OK) {
        std::string message = db != nullptr ? message_of(db, rc) : sqlite3_errstr(rc);
        const int err = db != nullptr ? sqlite3_system_errno(db) : 0;
        sqlite3_close_v2(std::exchange(db_, nullptr));
        throw SqliteError(rc, message, err);
    }
}

SqliteDb::SqliteDb(SqliteDb&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}

SqliteDb& SqliteDb::operator=(SqliteDb&& other) noexcept {
    if (this != &other) {
        if (db_ != nullptr) sqlite3_close_v2(db_);
        db_ = std::exchange(other.db_, nullptr);
    }
    return *this;
}

SqliteDb::~SqliteDb() {
    // close_v2 defers the close until the last statement is finalized, so destruction order
    // between a connection and its statements cannot leak or crash.
    if (db_ != nullptr) sqlite3_close_v2(db_);
}

void SqliteDb::exec(const char* sql) {
    int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) fail(rc);
}

std::string SqliteDb::query_text(const char* sql) {
    SqliteStmt stmt(*this, sql);
    if (!stmt.step()) throw SqliteError(SQLITE_ERROR, std::string("no result from: ") + sql);
    return stmt.column_text(0);
}

std::int64_t SqliteDb::query_int(const char* sql) {
    SqliteStmt stmt(*this, sql);
    if (!stmt.step()) throw SqliteError(SQLITE_ERROR, std::string("no result from: ") + sql);
    return stmt.column_int(0);
}

std::string SqliteDb::last_message() const { return sqlite3_errmsg(db_); }

void SqliteDb::fail(int rc) const {
    // The extended code of the failure; `rc` is already extended with SQLITE_OPEN_EXRESCODE.
    throw SqliteError(rc, message_of(db_, rc), sqlite3_system_errno(db_));
}

SqliteStmt::SqliteStmt(SqliteDb& db, std::string_view sql) : db_(db.get()) {
    if (sql.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
        throw SqliteError(SQLITE_TOOBIG, "statement text too long");
    int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
    if (rc != SQLITE_OK) {
        std::string message = sqlite3_errmsg(db_);
        sqlite3_finalize(std::exchange(stmt_, nullptr));
        throw SqliteError(rc, message);
    }
    if (stmt_ == nullptr) throw SqliteError(SQLITE_MISUSE, "empty statement");
}

SqliteStmt::SqliteStmt(SqliteStmt&& other) noexcept
    : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)) {}

SqliteStmt& SqliteStmt::operator=(SqliteStmt&& other) noexcept {
    if (this != &other) {
        if (stmt_ != nullptr) sqlite3_finalize(stmt_);
        db_ = other.db_;
        stmt_ = std::exchange(other.stmt_, nullptr);
    }
    return *this;
}

SqliteStmt::~SqliteStmt() {
    if (stmt_ != nullptr) sqlite3_finalize(stmt_);
}

void SqliteStmt::bind(int index, std::string_view text) {
    // SQLITE_STATIC: no copy of a possibly large payload; Scope resets (and so unbinds) the
    // statement before the caller's text can go away.
    int rc =
        sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_STATIC, SQLITE_UTF8);
    if (rc != SQLITE_OK) throw SqliteError(rc, sqlite3_errmsg(db_));
}

void SqliteStmt::bind(int index, std::int64_t value) {
    int rc = sqlite3_bind_int64(stmt_, index, value);
    if (rc != SQLITE_OK) throw SqliteError(rc, sqlite3_errmsg(db_));
}

void SqliteStmt::bind_null(int index) {
    int rc = sqlite3_bind_null(stmt_, index);
    if (rc != SQLITE_OK) throw SqliteError(rc, sqlite3_errmsg(db_));
}

bool SqliteStmt::step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    int code = sqlite3_extended_errcode(db_);
    throw SqliteError(code, message_of(db_, code), sqlite3_system_errno(db_));
}

std::int64_t SqliteStmt::column_int(int col) const { return sqlite3_column_int64(stmt_, col); }

std::string SqliteStmt::column_text(int col) const {
    // column_text before column_bytes: the documented order that yields the UTF-8 length.
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    if (text == nullptr) return {};
    return std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)));
}

std::optional<std::string> SqliteStmt::column_optional_text(int col) const {
    if (sqlite3_column_type(stmt_, col) == SQLITE_NULL) return std::nullopt;
    return column_text(col);
}

void SqliteStmt::reset() noexcept {
    if (stmt_ == nullptr) return;
    // reset() repeats the last step's error code; that error was already thrown by step().
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
}

SqliteTransaction::SqliteTransaction(SqliteDb& db, Mode mode) : db_(db) {
    db_.exec(mode == Mode::write ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED");
}

SqliteTransaction::~SqliteTransaction() {
    // After a failed COMMIT or certain I/O errors SQLite may already have rolled back; only roll
    // back a transaction that is still open, and never throw from here.
    if (open_ && sqlite3_get_autocommit(db_.get()) == 0)
        sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void SqliteTransaction::commit() {
    db_.exec("COMMIT");
    open_ = false;
}

} // namespace radial::journal
