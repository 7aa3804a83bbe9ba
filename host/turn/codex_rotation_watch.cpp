// host/turn/codex_rotation_watch.cpp — see codex_rotation_watch.h.
#include "turn/codex_rotation_watch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <utility>

#include "turn/box_user_env.h"
#include "turn/codex_auth.h"

namespace radial::turn {

CodexRotationWatch::CodexRotationWatch(const std::string& box_codex_dir, uid_t box_uid,
                                       std::string given, std::vector<std::string> forbidden)
    : dir_(box_codex_dir),
      box_uid_(box_uid),
      given_(std::move(given)),
      forbidden_(std::move(forbidden)),
      dirfd_(::open(box_codex_dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)),
      known_(codex_auth_secrets(given_, 1)) {
    if (!dirfd_)
        throw std::system_error(errno, std::generic_category(),
                                "watching the box's Codex credentials in '" + box_codex_dir + "'");
    // What the box was given is no rotation: only a change from here on is looked at.
    struct stat st {};
    if (::fstatat(dirfd_.get(), "auth.json", &st, AT_SYMLINK_NOFOLLOW) == 0)
        seen_ = {st.st_ino, st.st_size,
                 static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
                 static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec};
}

std::vector<std::string> CodexRotationWatch::new_tokens() {
    std::lock_guard lock(mutex_);
    const std::size_t given_count = codex_auth_secrets(given_, 1).size();
    if (known_.size() >= given_count + kMostLearned) return {};
    struct stat st {};
    if (::fstatat(dirfd_.get(), "auth.json", &st, AT_SYMLINK_NOFOLLOW) != 0) return {};
    const decltype(seen_) key{
        st.st_ino, st.st_size,
        static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
        static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec};
    if (key == seen_) return {};
    // A later change has another key, unless it lands in the same tick of the file system's
    // clock with the same size (a rewrite in place): a file changed a moment ago is read again
    // next time rather than taken as seen.
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    const std::int64_t now_ns = static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
    if (now_ns - std::get<3>(key) > 100'000'000) seen_ = key;
    std::string why;
    const auto text = read_box_codex_auth(dir_, box_uid_, why);
    if (!text || !codex_rotation_problem(given_, *text, forbidden_).empty()) return {};
    std::vector<std::string> fresh;
    for (auto& v : codex_auth_secrets(*text, kLearnedMinLength)) {
        if (known_.size() >= given_count + kMostLearned) break;
        if (std::find(known_.begin(), known_.end(), v) != known_.end()) continue;
        if (learned_bytes_ + v.size() > kMostLearnedBytes) break;
        learned_bytes_ += v.size();
        known_.push_back(v);
        fresh.push_back(std::move(v));
    }
    return fresh;
}

} // namespace radial::turn
