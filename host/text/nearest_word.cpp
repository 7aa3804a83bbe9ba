#include "text/nearest_word.h"

#include <radial/names.hpp>

namespace radial::text {

std::optional<std::string> nearest_word(const std::string& word,
                                        const std::vector<std::string>& candidates) {
    return nearest_name(word, candidates);
}

} // namespace radial::text
