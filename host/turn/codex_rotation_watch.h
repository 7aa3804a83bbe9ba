// host/turn/codex_rotation_watch.h — the Codex tokens a harness refreshes in its box while the
// turn runs, learned as the turn's secrets (docs/design.md §8.7): the file the box rotates is
// looked at before each piece of output, record and receipt is masked, so a token the harness
// wrote there is masked wherever the box prints it afterwards.
#pragma once

#include <radial/internal/unique_fd.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace radial::turn {

class CodexRotationWatch {
public:
    // At most this many values are learned over a turn: a box that rewrites the file without end
    // cannot make radiald recompile its secrets without end.
    static constexpr std::size_t kMostLearned = 64;
    // A learned value is the box's choice within a token's shape, and joins the filter of every
    // log line radiald writes: a floor well above the shortest secret keeps a box from masking
    // ordinary words there. Real tokens are JWTs and refresh tokens, far longer.
    static constexpr std::size_t kLearnedMinLength = 20;
    // And at most this many bytes of them: each growth compiles the turn's secrets again, so the
    // cost a box can cause is bounded by bytes, not only by count.
    static constexpr std::size_t kMostLearnedBytes = 64 << 10;

    // Watches auth.json in `box_codex_dir` (the host side of the box's ~/.codex, which the box user
    // `box_uid` controls). `given` is what the turn copied in; `forbidden` the turn's other
    // secrets (a file holding one is no rotation: codex_rotation_problem). Throws
    // std::system_error naming the directory when it cannot be opened.
    CodexRotationWatch(const std::string& box_codex_dir, uid_t box_uid, std::string given,
                       std::vector<std::string> forbidden);

    // The token values of the box's auth.json that were not in `given` and not returned before,
    // when the file changed since the last call (its inode, size or times) and is a rotation of
    // `given` read as a file of the box user's (read_box_codex_auth); empty otherwise. A
    // directory that cannot be looked at, or a file that is no rotation, gives nothing: the
    // write-back refuses such a file too. [thread-safe]
    std::vector<std::string> new_tokens();

private:
    std::mutex mutex_;
    std::string dir_;
    uid_t box_uid_;
    std::string given_;
    std::vector<std::string> forbidden_;
    internal::UniqueFd dirfd_;
    std::tuple<ino_t, off_t, std::int64_t, std::int64_t> seen_{};
    std::vector<std::string> known_; // given's tokens, then every value learned
    std::size_t learned_bytes_ = 0;
};

} // namespace radial::turn
