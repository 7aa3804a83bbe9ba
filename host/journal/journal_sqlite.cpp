// host/journal/journal_sqlite.cpp — the SQLite turn journal (docs/design.md §11). See
// journal_sqlite.h.
#include "journal/journal_sqlite.h"

#include <errno.h>
#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <limits>
#include <mutex>
#include <utility>

#include "journal/journal_file.h"
#include "journal/sqlite_db.h"

namespace radial::journal {
namespace {

std::int64_t to_unix_ms(std::chrono::system_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

std::optional<TurnState> parse_state(std::string_view text) {
    for (TurnState s :
         {TurnState::queued, TurnState::claimed, TurnState::started, TurnState::finished})
        if (to_string(s) == text) return s;
    return std::nullopt;
}

constexpr const char* kSummaryColumns =
    "SELECT t.turn_id, t.label, t.runtime, t.image, t.state, t.status, t.created_at_ms, "
    "t.updated_at_ms, (SELECT count(*) FROM records r WHERE r.turn_id = t.turn_id), t.kind "
    "FROM turns t ";

// Every statement the journal runs, prepared once. Values are always bound parameters.
struct Statements {
    explicit Statements(SqliteDb& db)
        : json_valid(db, "SELECT json_valid(?1)"),
          find_turn(db, "SELECT state, status FROM turns WHERE turn_id = ?1"),
          insert_turn(db,
                      "INSERT INTO turns (turn_id, label, runtime, image, record_type, "
                      "request_json, state, created_at_ms, updated_at_ms, kind) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9)"),
          insert_state(db, "INSERT INTO turn_states (turn_id, state, at_ms) VALUES (?1, ?2, ?3)"),
          update_state(db, "UPDATE turns SET state = ?2, updated_at_ms = ?3 WHERE turn_id = ?1"),
          touch_turn(db, "UPDATE turns SET updated_at_ms = ?2 WHERE turn_id = ?1"),
          update_request(db, "UPDATE turns SET image = ?2, request_json = ?3 WHERE turn_id = ?1"),
          update_label(db, "UPDATE turns SET label = ?2 WHERE turn_id = ?1"),
          insert_record(db,
                        "INSERT INTO records (turn_id, seq, type, payload_json, received_at_ms) "
                        "SELECT ?1, coalesce(max(seq), 0) + 1, ?2, ?3, ?4 FROM records "
                        "WHERE turn_id = ?1 RETURNING seq"),
          update_terminal(db,
                          "UPDATE turns SET state = 'finished', status = ?2, terminal_json = ?3, "
                          "updated_at_ms = ?4 WHERE turn_id = ?1"),
          select_turn(db,
                      "SELECT label, runtime, image, record_type, request_json, status, "
                      "terminal_json, kind FROM turns WHERE turn_id = ?1"),
          select_states(db, "SELECT state, at_ms FROM turn_states WHERE turn_id = ?1 ORDER BY id"),
          select_records(db,
                         "SELECT seq, type, payload_json, received_at_ms FROM records "
                         "WHERE turn_id = ?1 ORDER BY seq"),
          select_recent(db, std::string(kSummaryColumns) +
                                "ORDER BY t.created_at_ms DESC, t.rowid DESC LIMIT ?1"),
          select_in_flight(db, std::string(kSummaryColumns) +
                                   "WHERE t.state IN ('claimed', 'started') AND "
                                   "t.terminal_json IS NULL ORDER BY t.created_at_ms, t.rowid"),
          select_queued(db, std::string(kSummaryColumns) +
                                "WHERE t.state = 'queued' AND t.terminal_json IS NULL "
                                "ORDER BY t.created_at_ms, t.rowid"),
          select_ended_before(db,
                              "SELECT turn_id FROM turns WHERE state = 'finished' AND "
                              "updated_at_ms < ?1 ORDER BY updated_at_ms LIMIT 512"),
          select_oldest_finished(db,
                                 "SELECT turn_id FROM turns WHERE state = 'finished' "
                                 "ORDER BY updated_at_ms, rowid LIMIT 512"),
          delete_records(db, "DELETE FROM records WHERE turn_id = ?1"),
          delete_states(db, "DELETE FROM turn_states WHERE turn_id = ?1"),
          delete_turn(db, "DELETE FROM turns WHERE turn_id = ?1 AND state = 'finished'") {}

    SqliteStmt json_valid, find_turn, insert_turn, insert_state, update_state, touch_turn,
        update_request, update_label, insert_record, update_terminal, select_turn, select_states,
        select_records, select_recent, select_in_flight, select_queued, select_ended_before,
        select_oldest_finished, delete_records, delete_states, delete_turn;
};

class SqliteJournal final : public Journal {
public:
    SqliteJournal(std::string path, JournalClock clock, SqliteDb db)
        : path_(std::move(path)), clock_(std::move(clock)), db_(std::move(db)), stmts_(db_) {}

    void add_turn(const TurnEntry& entry, TurnState initial) override {
        run(fmt::format("adding turn '{}' to '{}'", entry.turn_id, path_), [&] {
            if (entry.turn_id.empty())
                throw JournalRefusal{JournalErrc::invalid_value,
                                     "the turn id is empty; give it an id"};
            if (initial == TurnState::finished)
                throw JournalRefusal{JournalErrc::invalid_value,
                                     "a turn cannot start out finished; add it queued, claimed or "
                                     "started and finish it with set_terminal"};
            require_json(entry.request_json, "the request");
            if (entry.kind != "turn" && entry.kind != "check")
                throw JournalRefusal{JournalErrc::invalid_value,
                                     fmt::format("the kind '{}' is neither 'turn' nor 'check'; "
                                                 "this is a radiald bug",
                                                 entry.kind)};
            SqliteTransaction tx(db_, SqliteTransaction::Mode::write);
            if (find(entry.turn_id))
                throw JournalRefusal{
                    JournalErrc::duplicate_turn,
                    fmt::format("turn '{}' already exists; turn ids must be unique",
                                entry.turn_id)};
            std::int64_t now = now_ms();
            {
                SqliteStmt::Scope s(stmts_.insert_turn);
                s->bind(1, entry.turn_id);
                s->bind(2, entry.label);
                s->bind(3, entry.runtime);
                s->bind(4, entry.image);
                s->bind(5, entry.record_type);
                s->bind(6, entry.request_json);
                s->bind(7, to_string(initial));
                s->bind(8, now);
                s->bind(9, entry.kind);
                s->step();
            }
            insert_state(entry.turn_id, initial, now);
            tx.commit();
        });
    }

    void set_state(std::string_view turn_id, TurnState state) override {
        run(fmt::format("setting the state of turn '{}' to '{}' in '{}'", turn_id, to_string(state),
                        path_),
            [&] {
                if (state == TurnState::finished)
                    throw JournalRefusal{JournalErrc::bad_transition,
                                         "a turn is finished only by its terminal record; use "
                                         "set_terminal"};
                SqliteTransaction tx(db_, SqliteTransaction::Mode::write);
                TurnRow row = existing(turn_id);
                if (state <= row.state)
                    throw JournalRefusal{
                        JournalErrc::bad_transition,
                        fmt::format("turn '{}' is already '{}' and states only move "
                                    "forward (queued, claimed, started); this is a "
                                    "radiald bug",
                                    turn_id, to_string(row.state))};
                std::int64_t now = now_ms();
                {
                    SqliteStmt::Scope s(stmts_.update_state);
                    s->bind(1, turn_id);
                    s->bind(2, to_string(state));
                    s->bind(3, now);
                    s->step();
                }
                insert_state(turn_id, state, now);
                tx.commit();
            });
    }

    std::uint64_t append_record(std::string_view turn_id, std::string_view type,
                                std::string_view payload_json) override {
        std::uint64_t seq = 0;
        run(fmt::format("appending a record to turn '{}' in '{}'", turn_id, path_), [&] {
            if (type.empty())
                throw JournalRefusal{JournalErrc::invalid_value,
                                     "the record type is empty; name it"};
            require_json(payload_json, "the payload");
            SqliteTransaction tx(db_, SqliteTransaction::Mode::write);
            existing(turn_id);
            std::int64_t now = now_ms();
            {
                // The sequence number is read and used inside this write transaction, so two
                // appends — from two threads or two processes — cannot get the same one; the
                // UNIQUE (turn_id, seq) constraint would refuse it if they did.
                SqliteStmt::Scope s(stmts_.insert_record);
                s->bind(1, turn_id);
                s->bind(2, type);
                s->bind(3, payload_json);
                s->bind(4, now);
                if (!s->step()) throw SqliteError(SQLITE_INTERNAL, "the insert returned no seq");
                seq = static_cast<std::uint64_t>(s->column_int(0));
                while (s->step()) {
                }
            }
            touch(turn_id, now);
            tx.commit();
        });
        return seq;
    }

    void redact_request(std::string_view turn_id, std::string_view image,
                        std::string_view request_json) override {
        run(fmt::format("masking the request of turn '{}' in '{}'", turn_id, path_), [&] {
            require_json(request_json, "the request");
            SqliteTransaction tx(db_, SqliteTransaction::Mode::write);
            existing(turn_id);
            {
                SqliteStmt::Scope s(stmts_.update_request);
                s->bind(1, turn_id);
                s->bind(2, image);
                s->bind(3, request_json);
                s->step();
            }
            tx.commit();
        });
    }

    void set_label(std::string_view turn_id, std::string_view label) override {
        run(fmt::format("setting the box of turn '{}' in '{}'", turn_id, path_), [&] {
            if (label.empty())
                throw JournalRefusal{JournalErrc::invalid_value, "the label is empty; give one"};
            SqliteTransaction tx(db_, SqliteTransaction::Mode::write);
            existing(turn_id);
            {
                SqliteStmt::Scope s(stmts_.update_label);
                s->bind(1, turn_id);
                s->bind(2, label);
                s->step();
            }
            tx.commit();
        });
    }

    void set_terminal(std::string_view turn_id, std::string_view status,
                      std::string_view terminal_json) override {
        run(fmt::format("writing the terminal record of turn '{}' in '{}'", turn_id, path_), [&] {
            if (status.empty())
                throw JournalRefusal{JournalErrc::invalid_value, "the status is empty; give one"};
            require_json(terminal_json, "the terminal record");
            SqliteTransaction tx(db_, SqliteTransaction::Mode::write);
            existing(turn_id);
            std::int64_t now = now_ms();
            {
                SqliteStmt::Scope s(stmts_.update_terminal);
                s->bind(1, turn_id);
                s->bind(2, status);
                s->bind(3, terminal_json);
                s->bind(4, now);
                s->step();
            }
            insert_state(turn_id, TurnState::finished, now);
            tx.commit();
        });
    }

    std::optional<TurnDetails> turn(std::string_view turn_id) override {
        std::optional<TurnDetails> out;
        run(fmt::format("reading turn '{}' from '{}'", turn_id, path_), [&] {
            // One read transaction: the turn, its states and its records from the same instant.
            SqliteTransaction tx(db_, SqliteTransaction::Mode::read);
            TurnDetails d;
            {
                SqliteStmt::Scope s(stmts_.select_turn);
                s->bind(1, turn_id);
                if (!s->step()) return;
                d.entry.turn_id = std::string(turn_id);
                d.entry.label = s->column_text(0);
                d.entry.runtime = s->column_text(1);
                d.entry.image = s->column_text(2);
                d.entry.record_type = s->column_text(3);
                d.entry.request_json = s->column_text(4);
                d.status = s->column_text(5);
                d.terminal_json = s->column_optional_text(6);
                d.entry.kind = s->column_text(7);
            }
            {
                SqliteStmt::Scope s(stmts_.select_states);
                s->bind(1, turn_id);
                while (s->step())
                    d.states.push_back({stored_state(s->column_text(0)), s->column_int(1)});
            }
            {
                SqliteStmt::Scope s(stmts_.select_records);
                s->bind(1, turn_id);
                while (s->step())
                    d.records.push_back({static_cast<std::uint64_t>(s->column_int(0)),
                                         s->column_text(1), s->column_text(2), s->column_int(3)});
            }
            tx.commit();
            out = std::move(d);
        });
        return out;
    }

    std::vector<TurnSummary> recent_turns(std::size_t limit) override {
        std::vector<TurnSummary> out;
        run(fmt::format("listing recent turns in '{}'", path_), [&] {
            SqliteStmt::Scope s(stmts_.select_recent);
            constexpr auto kMax =
                static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max());
            s->bind(1, static_cast<std::int64_t>(std::min(limit, kMax)));
            out = summaries(*s);
        });
        return out;
    }

    std::vector<TurnSummary> in_flight() override {
        std::vector<TurnSummary> out;
        run(fmt::format("listing in-flight turns in '{}'", path_), [&] {
            SqliteStmt::Scope s(stmts_.select_in_flight);
            out = summaries(*s);
        });
        return out;
    }

    std::vector<TurnSummary> queued() override {
        std::vector<TurnSummary> out;
        run(fmt::format("listing queued turns in '{}'", path_), [&] {
            SqliteStmt::Scope s(stmts_.select_queued);
            out = summaries(*s);
        });
        return out;
    }

    std::uint64_t prune(std::uint64_t max_age_ms, std::uint64_t max_bytes,
                        const KeepFn& keep) override {
        std::uint64_t removed = 0;
        run(fmt::format("pruning finished turns from '{}'", path_), [&] {
            SqliteTransaction tx(db_, SqliteTransaction::Mode::write);
            auto may_go = [&](const std::string& id) { return !keep || !keep(id); };
            if (max_age_ms > 0) {
                std::vector<std::string> ids;
                {
                    SqliteStmt::Scope s(stmts_.select_ended_before);
                    s->bind(1, now_ms() -
                                   static_cast<std::int64_t>(std::min<std::uint64_t>(
                                       max_age_ms, std::numeric_limits<std::int64_t>::max() / 2)));
                    while (s->step()) ids.push_back(s->column_text(0));
                }
                for (const auto& id : ids)
                    if (may_go(id)) remove_turn(id), ++removed;
            }
            // Pages in use, not the file's size: SQLite reuses the pages a removal frees.
            auto in_use = [&] {
                return static_cast<std::uint64_t>(db_.query_int("PRAGMA page_count") -
                                                  db_.query_int("PRAGMA freelist_count")) *
                       static_cast<std::uint64_t>(db_.query_int("PRAGMA page_size"));
            };
            if (max_bytes > 0 && in_use() > max_bytes) {
                std::vector<std::string> ids; // the oldest kPruneBatch, sorted once per call
                {
                    SqliteStmt::Scope s(stmts_.select_oldest_finished);
                    while (s->step()) ids.push_back(s->column_text(0));
                }
                std::size_t since_check = 0;
                for (const auto& id : ids) {
                    if (!may_go(id)) continue;
                    remove_turn(id);
                    ++removed;
                    if (++since_check == 16) {
                        since_check = 0;
                        if (in_use() <= max_bytes) break;
                    }
                }
            }
            tx.commit();
        });
        return removed;
    }

private:
    void remove_turn(const std::string& turn_id) {
        for (SqliteStmt* st :
             {&stmts_.delete_records, &stmts_.delete_states, &stmts_.delete_turn}) {
            SqliteStmt::Scope s(*st);
            s->bind(1, turn_id);
            s->step();
        }
    }

    struct TurnRow {
        TurnState state;
        std::string status;
    };

    // Runs one operation under the mutex and gives every failure the operation's context.
    template <class F>
    void run(const std::string& operation, F&& body) {
        std::lock_guard lock(mutex_);
        try {
            body();
        } catch (const JournalRefusal& r) {
            throw JournalError(r.code, fmt::format("{}: {}", operation, r.cause_and_fix));
        } catch (const SqliteError& e) {
            throw JournalError(JournalErrc::storage,
                               fmt::format("{}: {}; {}", operation, e.what(),
                                           fix_for_sqlite(e.primary_code(), e.system_errno())));
        }
    }

    // No clock given: the real one (docs/design.md §12.7).
    std::int64_t now_ms() const {
        return to_unix_ms(clock_ ? clock_() : std::chrono::system_clock::now());
    }

    // Refuses `text` unless SQLite's own JSON parser (the one the schema's CHECKs use) accepts it.
    void require_json(std::string_view text, std::string_view what) {
        SqliteStmt::Scope s(stmts_.json_valid);
        s->bind(1, text);
        if (!s->step() || s->column_int(0) != 1)
            throw JournalRefusal{JournalErrc::invalid_value,
                                 fmt::format("{} is not valid JSON; pass JSON text", what)};
    }

    std::optional<TurnRow> find(std::string_view turn_id) {
        SqliteStmt::Scope s(stmts_.find_turn);
        s->bind(1, turn_id);
        if (!s->step()) return std::nullopt;
        return TurnRow{stored_state(s->column_text(0)), s->column_text(1)};
    }

    // The turn's row; refuses an unknown turn and one that already has its terminal record.
    TurnRow existing(std::string_view turn_id) {
        std::optional<TurnRow> row = find(turn_id);
        if (!row)
            throw JournalRefusal{
                JournalErrc::unknown_turn,
                fmt::format("there is no turn '{}' in the journal; add it first", turn_id)};
        if (row->state == TurnState::finished)
            throw JournalRefusal{
                JournalErrc::turn_finished,
                fmt::format("turn '{}' already has its terminal record (status '{}'); "
                            "nothing is written to a turn after its terminal record",
                            turn_id, row->status)};
        return *row;
    }

    void insert_state(std::string_view turn_id, TurnState state, std::int64_t at_ms) {
        SqliteStmt::Scope s(stmts_.insert_state);
        s->bind(1, turn_id);
        s->bind(2, to_string(state));
        s->bind(3, at_ms);
        s->step();
    }

    void touch(std::string_view turn_id, std::int64_t at_ms) {
        SqliteStmt::Scope s(stmts_.touch_turn);
        s->bind(1, turn_id);
        s->bind(2, at_ms);
        s->step();
    }

    // A state read back from the file; the schema's CHECK makes anything else a damaged file.
    static TurnState stored_state(std::string_view text) {
        if (auto s = parse_state(text)) return *s;
        throw SqliteError(SQLITE_CORRUPT,
                          fmt::format("the file holds an unknown state '{}'", text));
    }

    static std::vector<TurnSummary> summaries(SqliteStmt& s) {
        std::vector<TurnSummary> out;
        while (s.step()) {
            TurnSummary t;
            t.turn_id = s.column_text(0);
            t.label = s.column_text(1);
            t.runtime = s.column_text(2);
            t.image = s.column_text(3);
            t.state = stored_state(s.column_text(4));
            t.status = s.column_text(5);
            t.created_at_ms = s.column_int(6);
            t.updated_at_ms = s.column_int(7);
            t.record_count = static_cast<std::uint64_t>(s.column_int(8));
            t.kind = s.column_text(9);
            out.push_back(std::move(t));
        }
        return out;
    }

    const std::string path_;
    const JournalClock clock_;
    std::mutex mutex_; // held for the whole of every public call: one call, one transaction
    SqliteDb db_;
    Statements stmts_; // after db_: statements are finalized before the connection closes
};

} // namespace

namespace {

bool on_read_only_file_system(const std::string& path) {
    struct statvfs fs {};
    return ::statvfs(std::filesystem::path(path).parent_path().c_str(), &fs) == 0 &&
           (fs.f_flag & ST_RDONLY) != 0;
}

// Less room than a journal's side files take (the -shm index alone is 32 KiB).
bool on_full_file_system(const std::string& path) {
    struct statvfs fs {};
    return ::statvfs(std::filesystem::path(path).parent_path().c_str(), &fs) == 0 &&
           static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize < 1024 * 1024;
}

template <class Open>
std::unique_ptr<Journal> open_reporting(const std::string& path, Open&& open) {
    const std::string operation = fmt::format("opening the journal '{}'", path);
    try {
        return open();
    } catch (const JournalRefusal& r) {
        throw JournalError(r.code, fmt::format("{}: {}", operation, r.cause_and_fix));
    } catch (const SqliteError& e) {
        // An existing journal on a read-only file system fails at its side files (-wal, -shm),
        // whose errno says only that they are missing: the file system says why.
        const int code = e.primary_code();
        const bool read_only =
            (code == SQLITE_CANTOPEN || code == SQLITE_IOERR || code == SQLITE_READONLY) &&
            on_read_only_file_system(path);
        throw JournalError(
            JournalErrc::storage,
            fmt::format("{}: {}; {}", operation, e.what(),
                        fix_for_sqlite(e.primary_code(), read_only ? EROFS : e.system_errno())));
    }
}

} // namespace

std::unique_ptr<Journal> open_sqlite_journal(const std::string& path, JournalClock clock) {
    return open_reporting(path, [&]() -> std::unique_ptr<Journal> {
        return std::make_unique<SqliteJournal>(path, std::move(clock), open_journal_file(path));
    });
}

std::unique_ptr<Journal> open_sqlite_journal_unchanged(const std::string& path,
                                                       JournalClock clock) {
    return open_reporting(path, [&]() -> std::unique_ptr<Journal> {
        std::optional<SqliteDb> db = open_journal_file_unchanged(path);
        if (!db) return nullptr;
        return std::make_unique<SqliteJournal>(path, std::move(clock), std::move(*db));
    });
}

std::unique_ptr<Journal> open_sqlite_journal_for_reading(const std::string& path,
                                                         JournalClock clock) {
    auto read_only = [&] {
        return open_reporting(path, [&]() -> std::unique_ptr<Journal> {
            return std::make_unique<SqliteJournal>(path, std::move(clock),
                                                   open_journal_file_read_only(path));
        });
    };
    if (on_read_only_file_system(path)) return read_only();
    try {
        return open_sqlite_journal(path, clock);
    } catch (const JournalError&) {
        // A full file system fails the read-write open at the side files it would make, which a
        // reader does not need: an operator must still see the turns when the disk filled up
        // (docs/design.md §11.5). Read as on a read-only one, where no radiald has it open; else
        // the read-write open's own error.
        if (!on_full_file_system(path)) throw;
        const std::exception_ptr first = std::current_exception();
        try {
            return read_only();
        } catch (const JournalError&) {
            std::rethrow_exception(first);
        }
    }
}

} // namespace radial::journal
