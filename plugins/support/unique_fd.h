// plugins/support/unique_fd.h — kept only for plugins/docker, which is being rewritten: the one fd
// owner is radial::internal::UniqueFd (<radial/internal/unique_fd.h>, docs/design.md §2.3, §14.6).
// Remove this header once plugins/docker includes that one.
#pragma once

#include <radial/internal/unique_fd.h>

namespace radial::plugin_support {
using UniqueFd = radial::internal::UniqueFd;
} // namespace radial::plugin_support
