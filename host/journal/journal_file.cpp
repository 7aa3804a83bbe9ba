// host/journal/journal_file.cpp — see journal_file.h.
#include "journal/journal_file.h"

#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <radial/internal/unique_fd.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "journal/journal_sqlite.h"

namespace radial::journal {
namespace {

// Marks the file as a radiald journal ("RDLJ"), so a foreign SQLite file at the journal's path is
// refused instead of having tables added to it.
constexpr std::int64_t kApplicationId = 0x52444C4A;
// The write-ahead log is cut back to 4 MiB after a checkpoint, so the journal's retention
// (docs/design.md §11.6) bounds the files on disk, not only the pages in use.
constexpr const char* kLimitWal = "PRAGMA journal_size_limit = 4194304";
constexpr const char* kSetApplicationId = "PRAGMA application_id = 1380207690";
static_assert(kApplicationId == 1380207690, "kSetApplicationId spells kApplicationId in decimal");

// Schema version 2: every entry says what kind of request it is, "turn" or "check"
// (docs/design.md §4). Entries of a version-1 journal were all turns.
constexpr const char* kSchemaV2 = R"sql(
ALTER TABLE turns ADD COLUMN kind TEXT NOT NULL DEFAULT 'turn' CHECK (kind IN ('turn', 'check'));
)sql";

// Migration N takes the schema from version N-1 to N. A new version appends one entry here and
// bumps kJournalSchemaVersion; earlier entries never change, since journals in the field were
// written by them.
struct Migration {
    int to_version;
    const char* sql;
};
constexpr Migration kMigrations[] = {{1, kJournalSchemaV1}, {2, kSchemaV2}};
static_assert(std::size(kMigrations) == std::size_t{kJournalSchemaVersion},
              "one migration per schema version");

// PRAGMA user_version cannot take a bound parameter. The value is one of the compile-time
// constants above, never text from outside, so the SQL is still free of caller-supplied values.
constexpr const char* kSetUserVersion[] = {"PRAGMA user_version = 0", "PRAGMA user_version = 1",
                                           "PRAGMA user_version = 2"};
static_assert(std::size(kSetUserVersion) == std::size_t{kJournalSchemaVersion} + 1,
              "one user_version statement per schema version");

std::string errno_text(int err) { return std::generic_category().message(err); }

// mkdir -p with mode 0700 for each directory it creates; existing ones are left as they are.
void make_private_directories(const std::filesystem::path& dir) {
    if (dir.empty()) return;
    struct stat st {};
    if (::stat(dir.c_str(), &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            throw JournalRefusal{
                JournalErrc::storage,
                fmt::format("'{}' exists and is not a directory; move it aside or set "
                            "run.stateDir to a directory",
                            dir.string())};
        return;
    }
    make_private_directories(dir.parent_path());
    // EEXIST: another process created it between the stat and here, which is as good.
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
        int err = errno;
        throw JournalRefusal{
            JournalErrc::storage,
            fmt::format("cannot create directory '{}': {}; create it or set run.stateDir "
                        "to a writable directory",
                        dir.string(), errno_text(err))};
    }
}

// Removes a half-built journal (and SQLite's side files) unless it was linked into place.
class TempJournal {
public:
    explicit TempJournal(std::string path) : path_(std::move(path)) {}
    TempJournal(const TempJournal&) = delete;
    TempJournal& operator=(const TempJournal&) = delete;
    ~TempJournal() {
        for (const char* suffix : {"", "-journal", "-wal", "-shm"})
            ::unlink((path_ + suffix).c_str());
    }
    const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
};

void check_identity(SqliteDb& db, bool fresh);
void migrate(SqliteDb& db, bool fresh);

// Builds a complete, empty journal in a temporary file beside `path` and links it into place, so
// a journal file is either absent or holds a whole schema: an empty or schema-less file at the
// journal's path is then never something radiald left behind, and is refused as damage. Another
// process creating the same journal at once wins the link; its journal is used.
void create_journal(const std::string& path) {
    std::string tmpl = path + ".new-XXXXXX";
    int raw = ::mkostemp(tmpl.data(), O_CLOEXEC); // mode 0600
    if (raw < 0) {
        int err = errno;
        throw JournalRefusal{
            JournalErrc::storage,
            err == EROFS || err == ENOSPC || err == EDQUOT
                ? fmt::format("cannot create the file: {}; {}", errno_text(err),
                              fix_for_sqlite(SQLITE_CANTOPEN, err))
                : fmt::format("cannot create the file: {}; check that radiald's user may write "
                              "the directory of '{}' and that its file system has space",
                              errno_text(err), path)};
    }
    internal::UniqueFd fd(raw);
    TempJournal temp(tmpl);
    {
        SqliteDb db(temp.path());
        db.exec("PRAGMA synchronous = FULL");
        migrate(db, /*fresh=*/true);
    }
    if (::fsync(raw) != 0) {
        int err = errno;
        throw JournalRefusal{
            JournalErrc::storage,
            fmt::format("cannot sync the new file: {}; check the disk", errno_text(err))};
    }
    if (::link(temp.path().c_str(), path.c_str()) != 0 && errno != EEXIST) {
        int err = errno;
        throw JournalRefusal{
            JournalErrc::storage,
            fmt::format("cannot create the file: {}; check that radiald's user may write the "
                        "directory of '{}'",
                        errno_text(err), path)};
    }
    // The directory entry must survive a crash as well as the file.
    std::string dir = std::filesystem::path(path).parent_path().string();
    internal::UniqueFd dirfd(
        ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dirfd.valid()) ::fsync(dirfd.get());
}

// Refuses an existing journal file that cannot hold a journal: an empty one (truncated, or its
// history otherwise lost), before SQLite would quietly treat it as a new database.
void check_existing_file(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return; // opening it reports the error
    if (!S_ISREG(st.st_mode))
        throw JournalRefusal{
            JournalErrc::storage,
            "it is not a regular file; move it aside or set run.stateDir elsewhere"};
    if (st.st_size == 0)
        throw JournalRefusal{
            JournalErrc::storage,
            fmt::format("the file is empty (0 bytes), but radiald only ever puts a complete "
                        "journal there, so its history was lost (truncated?); restore it from a "
                        "backup, or move it aside (with any '{}-wal' beside it) to start an empty "
                        "journal, knowing that turn ids of the lost history may then be reused",
                        std::filesystem::path(path).filename().string())};
}

// Checks that the file is a journal this radiald can read — or, when `fresh` (the temporary file
// create_journal() just made), still empty; run before anything writes to it, and again inside the
// migration transaction.
void check_identity(SqliteDb& db, bool fresh) {
    std::int64_t app_id = db.query_int("PRAGMA application_id");
    std::int64_t version = db.query_int("PRAGMA user_version");
    if (app_id == 0 && version == 0) {
        if (db.query_int("SELECT count(*) FROM sqlite_schema") != 0)
            throw JournalRefusal{
                JournalErrc::storage,
                "the file is an SQLite database but not a radiald journal; move it aside "
                "or set run.stateDir elsewhere"};
        if (!fresh)
            throw JournalRefusal{
                JournalErrc::storage,
                "the file is an empty SQLite database, not a journal, and radiald only ever puts "
                "a complete journal there, so its history was lost; restore it from a backup, "
                "or move it aside to start an empty journal, knowing that turn ids of the lost "
                "history may then be reused"};
        return;
    }
    if (app_id != kApplicationId)
        throw JournalRefusal{
            JournalErrc::storage,
            fmt::format("the file is an SQLite database but not a radiald journal "
                        "(application_id {:#x}); move it aside or set run.stateDir "
                        "elsewhere",
                        app_id)};
    if (version > kJournalSchemaVersion)
        throw JournalRefusal{
            JournalErrc::newer_schema,
            fmt::format("it has schema version {}, this radiald understands up to {}; "
                        "upgrade radiald, or move the file aside to start an empty "
                        "journal",
                        version, kJournalSchemaVersion)};
}

void migrate(SqliteDb& db, bool fresh) {
    // A journal of this schema needs nothing, and is seen so without the write lock: a reader
    // (`radiald status`, `turns`) must not wait for a writer, as WAL lets it.
    if (!fresh) {
        check_identity(db, fresh);
        if (db.query_int("PRAGMA user_version") == kJournalSchemaVersion) return;
    }
    // IMMEDIATE: two processes migrating one journal at once must not both change the schema.
    SqliteTransaction tx(db, SqliteTransaction::Mode::write);
    check_identity(db, fresh);
    std::int64_t version = db.query_int("PRAGMA user_version");
    if (version == kJournalSchemaVersion) return; // nothing to do; the destructor ends the tx
    if (version == 0) db.exec(kSetApplicationId);
    for (const Migration& m : kMigrations) {
        if (m.to_version <= version) continue;
        db.exec(m.sql);
        db.exec(kSetUserVersion[m.to_version]);
    }
    tx.commit();
}

} // namespace

static_assert(kBusyTimeoutMs == 5000, "the SQLITE_BUSY fix below says 5 s");

std::string_view fix_for_sqlite(int primary_code, int system_errno) noexcept {
    // SQLite keeps the last errno of its I/O layer until the next I/O failure: it says why only
    // for an I/O, open or full failure, never for a later busy, constraint or damage.
    const bool io = primary_code == SQLITE_IOERR || primary_code == SQLITE_CANTOPEN ||
                    primary_code == SQLITE_FULL || primary_code == SQLITE_READONLY;
    switch (io ? system_errno : 0) {
        case ENOSPC:
        case EDQUOT:
            return "the file system is full (or the user's quota spent); free space and retry";
        case EROFS:
            return "the state directory's file system is read-only; remount it read-write or "
                   "choose another run.stateDir";
        default: break;
    }
    switch (primary_code) {
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
            return "another process held the journal locked for more than 5 s; check for a second "
                   "radiald using the same state directory";
        case SQLITE_FULL: return "the file system is full; free space and retry";
        case SQLITE_READONLY:
        case SQLITE_CANTOPEN:
        case SQLITE_PERM:
        case SQLITE_AUTH:
            return "check that radiald's user owns the journal and its directory and may write "
                   "them";
        case SQLITE_NOTADB:
        case SQLITE_CORRUPT:
            return "the file is damaged or not a journal; move it aside so radiald starts a new "
                   "one";
        case SQLITE_IOERR: return "check the disk and the kernel log for I/O errors";
        default: return "this is a radiald bug; report it with the journal file";
    }
}

namespace {

// An existing journal file, opened and its identity checked before anything writes to it
// (switching to WAL does): a newer or foreign file stays untouched.
SqliteDb open_existing(const std::string& path) {
    check_existing_file(path);
    SqliteDb db(path);
    sqlite3_busy_timeout(db.get(), kBusyTimeoutMs);
    // Defensive: no writable_schema or journal_mode=OFF tricks through this connection.
    sqlite3_db_config(db.get(), SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
    // trusted_schema stays on: the schema's CHECKs call json_valid(), which SQLite 3.40 does not
    // mark innocuous. The file is 0600 in radiald's own directory, so its schema is radiald's.
    check_identity(db, /*fresh=*/false);
    return db;
}

bool journal_missing(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) != 0 && errno == ENOENT;
}

} // namespace

std::optional<SqliteDb> open_journal_file_unchanged(const std::string& path) {
    if (journal_missing(path)) return std::nullopt;
    SqliteDb db = open_existing(path);
    if (db.query_int("PRAGMA user_version") != kJournalSchemaVersion) return std::nullopt;
    if (db.query_text("PRAGMA journal_mode") != "wal") return std::nullopt;
    db.exec("PRAGMA synchronous = FULL");
    db.exec("PRAGMA foreign_keys = ON");
    db.exec(kLimitWal);
    return db;
}

namespace {

// Whether a connection has the journal open: each holds a read lock on the -shm file's "DMS" byte
// (SQLite's unix VFS: offset 128) for as long as it is open. Asked two ways, either answer "held"
// taken: /proc/locks, which lists this process's own locks too (F_GETLK does not), matched by
// inode alone (on btrfs a subvolume's stat(2) device is not the one /proc/locks prints; another
// file of that inode number only makes the answer "held", the safe one); and F_GETLK, which sees
// processes of other PID namespaces that /proc/locks hides. Unknown counts as held.
bool held_open(const std::string& path) {
    const internal::UniqueFd fd(::open((path + "-shm").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) return errno != ENOENT;
    struct stat shm {};
    if (::fstat(fd.get(), &shm) != 0) return true;
    if (std::ifstream locks("/proc/locks"); locks) {
        // "1: POSIX  ADVISORY  READ 1234 fd:01:5678 128 128" (END may be "EOF"); a blocked
        // request's line reads "1: -> …" and holds nothing.
        const std::string inode = ":" + std::to_string(shm.st_ino);
        for (std::string line; std::getline(locks, line);) {
            std::istringstream in(line);
            std::string id, kind, advisory, mode, pid, where, start, end;
            if (!(in >> id >> kind) || kind == "->") continue;
            if (!(in >> advisory >> mode >> pid >> where >> start >> end) ||
                !where.ends_with(inode))
                continue;
            try {
                if (std::stoull(start) <= 128 && (end == "EOF" || std::stoull(end) >= 128))
                    return true;
            } catch (const std::exception&) {
                return true; // a line not read as expected: taken as a holder
            }
        }
    }
    struct flock probe {};
    probe.l_type = F_WRLCK;
    probe.l_whence = SEEK_SET;
    probe.l_start = 128;
    probe.l_len = 1;
    if (::fcntl(fd.get(), F_GETLK, &probe) != 0) return true;
    return probe.l_type != F_UNLCK;
}

} // namespace

SqliteDb open_journal_file_read_only(const std::string& path) {
    const std::string remount =
        "the state directory's file system is read-only; remount it read-write once (any radiald "
        "command then brings the journal up to date), and it can be read read-only after";
    // Its side files are there while a connection has it open (or was killed with it open): a
    // read-only mount of a directory a radiald writes through another path (a bind mount, a
    // unit's ReadOnlyPaths=) must not be read as if nothing changed it, nor without the commits
    // its write-ahead log holds.
    const std::string name = std::filesystem::path(path).filename().string();
    // Left behind by a connection that is gone (a writer whose open failed on a full disk) with
    // no commit in its log, they hold nothing the file does not: read without them.
    struct stat wal {};
    const bool left_empty =
        (::stat((path + "-wal").c_str(), &wal) != 0 || wal.st_size == 0) && !held_open(path);
    for (const char* side : {"-wal", "-shm"}) {
        struct stat st {};
        if (!left_empty && ::stat((path + side).c_str(), &st) == 0)
            throw JournalRefusal{
                JournalErrc::storage,
                fmt::format("'{}{}' is there: a radiald has the journal open through a path it "
                            "may write (read it through that path), or one was killed with it "
                            "open and its last commits wait in the write-ahead log; {}",
                            name, side, remount)};
    }
    check_existing_file(path);
    SqliteDb db(path, SqliteDb::ImmutableReadOnly{});
    sqlite3_db_config(db.get(), SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
    check_identity(db, /*fresh=*/false);
    if (const auto version = db.query_int("PRAGMA user_version"); version != kJournalSchemaVersion)
        throw JournalRefusal{JournalErrc::storage,
                             fmt::format("its schema is version {}, and this radiald reads "
                                         "version {} after migrating it; {}",
                                         version, kJournalSchemaVersion, remount)};
    return db;
}

namespace {

SqliteDb open_journal_file_once(const std::string& path) {
    if (journal_missing(path)) create_journal(path);
    SqliteDb db = open_existing(path);
    std::string mode = db.query_text("PRAGMA journal_mode = WAL");
    if (mode != "wal")
        throw JournalRefusal{
            JournalErrc::storage,
            fmt::format("the file system refused write-ahead logging (journal mode "
                        "stays '{}'); put run.stateDir on a local file system",
                        mode)};
    // FULL: in WAL mode NORMAL may lose the last commits on power loss; "started" must survive.
    db.exec("PRAGMA synchronous = FULL");
    db.exec("PRAGMA foreign_keys = ON");
    db.exec(kLimitWal);
    migrate(db, /*fresh=*/false);
    return db;
}

} // namespace

SqliteDb open_journal_file(const std::string& path) {
    make_private_directories(std::filesystem::path(path).parent_path());
    // SQLite answers SQLITE_BUSY at once, without its busy handler, where waiting could deadlock
    // (processes switching a new journal to WAL or migrating it together): the open is tried
    // again, for as long as the busy timeout, so "held locked for more than 5 s" stays true.
    // Real time: the lock is held by other processes (docs/design.md §12.7).
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
    for (std::chrono::milliseconds pause{2};;
         pause = std::min(pause * 2, std::chrono::milliseconds(100))) {
        try {
            return open_journal_file_once(path);
        } catch (const SqliteError& e) {
            const int primary = e.primary_code();
            if ((primary != SQLITE_BUSY && primary != SQLITE_LOCKED) ||
                std::chrono::steady_clock::now() + pause >= give_up)
                throw;
        }
        std::this_thread::sleep_for(pause);
    }
}

} // namespace radial::journal
