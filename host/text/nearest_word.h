// host/text/nearest_word.h — the known word a mistyped one was probably meant to be, for the
// "did you mean …?" of an unknown flag, command or runtime id.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace radial::text {

// The candidate nearest to `word` when it is close enough to be a typo of it: an edit distance
// of at most 2, counting a swap of neighbours ("imgae" for "image") as one edit, and less than
// half of `word`'s length. The first of equally near candidates wins; nullopt when none is close.
std::optional<std::string> nearest_word(const std::string& word,
                                        const std::vector<std::string>& candidates);

} // namespace radial::text
