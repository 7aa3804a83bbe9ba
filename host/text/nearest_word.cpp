#include "text/nearest_word.h"

#include <algorithm>
#include <string_view>

namespace radial::text {
namespace {

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of
// neighbours each count one.
std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i)
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

} // namespace

std::optional<std::string> nearest_word(const std::string& word,
                                        const std::vector<std::string>& candidates) {
    std::optional<std::string> best;
    std::size_t best_distance = 3;
    for (const auto& c : candidates) {
        const std::size_t d = edit_distance(word, c);
        if (d < best_distance && d * 2 < word.size()) {
            best = c;
            best_distance = d;
        }
    }
    return best;
}

} // namespace radial::text
