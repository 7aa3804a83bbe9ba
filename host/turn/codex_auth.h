// host/turn/codex_auth.h — managed Codex auth's file on the host (run.codexAuth, docs/design.md
// §8.7): read for each turn, and the credentials a harness rotated in the box's scratch home
// written back when the turn ends, so the next turn starts from the newest refresh token.
//
// Both hold a lock on the operator's file's directory (flock): a write-back is never interleaved
// with another turn reading the file or writing its own back. A write-back replaces the file only
// if the box changed it, the new file is a Codex auth file, and the operator's file still holds
// what this turn was given (compare and swap): a turn never undoes a newer rotation.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace radial::turn {

// The operator's credentials file's contents, read under the directory's shared lock; nullopt
// with `error` set (naming the path and the cause) when it cannot be read or has a key twice in
// an object (has_duplicate_keys). [thread-safe]
std::optional<std::string> read_codex_auth(const std::string& path, std::string& error);

// The shortest token a rotation may bring: a JWT or refresh token is far longer, and a shorter
// one could be an ordinary word (masked in every later turn's output and radiald's log) or a part
// of a redaction marker ("REDACTED"), which every later turn would refuse as a secret.
inline constexpr std::size_t kRotatedTokenMinLength = 20;

// Whether an object in the JSON `text` has a key twice (a reader keeps only one value of it).
// [thread-safe]
bool has_duplicate_keys(std::string_view text);

// Whether `text` is a Codex auth file: a JSON object holding a "tokens" object or an
// "OPENAI_API_KEY" string. [thread-safe]
bool valid_codex_auth(std::string_view text);

// The box's auth.json in `box_codex_dir` (the host side of the box's ~/.codex), read as a file the
// box user wrote and nothing else: no link followed, no fifo waited on, no second name of a host
// file, at most 1 MiB. nullopt with `why` set when it is none of that. [thread-safe]
std::optional<std::string> read_box_codex_auth(const std::string& box_codex_dir, uid_t box_uid,
                                               std::string& why);

// What write_back_codex_auth did.
enum class CodexWriteBack {
    unchanged, // the box left the file as it was given
    written,   // the operator's file now holds the box's
    invalid,   // the box's file is gone, not a regular file of the box user's, or not valid
    conflict,  // the operator's file changed during the turn: kept, the box's dropped
    failed,    // reading or writing the operator's file failed
};

struct CodexWriteBackResult {
    CodexWriteBack outcome = CodexWriteBack::unchanged;
    std::string detail; // why, for the log: never the file's contents
};

// Why `box` is not a token rotation of `given`, or "" when it is one. A rotation keeps the file's
// shape and account_id: no key twice in an object, the same keys with values of the same types,
// at most 64 KiB (or twice the given size), and the same values everywhere but the strings under
// "tokens" other than "account_id", and "last_refresh" (which may be added). A changed token is
// kRotatedTokenMinLength to 16384 bytes of base64 and JWT characters (A-Z a-z 0-9 . _ ~ + / = -),
// a changed last_refresh an RFC 3339 time,
// and no string in the file holds any of `forbidden` (the turn's other secrets). Anything else a
// box wrote (another account_id, an API key, keys of its own, padding, a secret of its turn to
// carry to the next) would reach every later turn and the operator's own harness
// (docs/design.md §8.7). The tokens themselves are not verified: only their issuer could, so a box
// can still choose token-shaped strings. [thread-safe]
std::string codex_rotation_problem(std::string_view given, std::string_view box,
                                   const std::vector<std::string>& forbidden = {});

// After the box is gone: reads auth.json from `box_codex_dir` (the host side of the box's
// ~/.codex) without following links, and when it differs from `given` (what the turn copied in),
// is a regular file of `box_uid`'s of at most 1 MiB with one name, is valid_codex_auth and a
// rotation of `given` (codex_rotation_problem),
// replaces the operator's file at `path` with it — the JSON as judged, written again, never the
// box's bytes — atomically (a temporary file beside it with the
// file's owner and mode, fsynced, renamed over it, the directory fsynced) — under the exclusive
// lock, and only if the file still holds `given`. [thread-safe]
CodexWriteBackResult write_back_codex_auth(const std::string& box_codex_dir, uid_t box_uid,
                                           const std::string& path, std::string_view given,
                                           const std::vector<std::string>& forbidden = {});

// One log line for `r` about turn `turn_id`: info when written, a warning when the box's file was
// not taken or the operator's kept, nothing when unchanged. Never the contents. [thread-safe]
void log_codex_write_back(const std::string& turn_id, const CodexWriteBackResult& r);

} // namespace radial::turn
