// host/turn/image_pin.h — an image run by its content digest (docs/design.md §6.5): resolved
// when the turn starts, so the image a turn runs cannot change under it between the allowlist's
// check and the box, and recorded (`imageDigest`) so a turn can be traced to exactly what ran.
#pragma once

#include <optional>
#include <radial/container_spec.hpp>
#include <radial/host/runtime_client.hpp>
#include <string>
#include <vector>

#include "config/host_config.h"

namespace radial::turn {

// An entry of run.allowedImages split into its shell pattern and the digest it pins the image
// to: "radial/busybox:*@sha256:<64 hex>" -> {"radial/busybox:*", "sha256:<64 hex>"}; an entry
// without "@sha256:" pins nothing (digest empty). [thread-safe]
struct AllowedImage {
    std::string pattern;
    std::string digest;
};
AllowedImage split_allowed_image(const std::string& entry);

// The digests run.allowedImages pins `image` to: empty when an entry without a digest admits it
// (then any digest, or none, will do), else those of every pinned entry whose pattern it
// matches. [thread-safe]
std::vector<std::string> pinned_digests(const std::string& image, const config::HostConfig& cfg);

// Resolves spec.image (`requested`, as the request named it) to its content digest through the
// runtime's session extension where it offers resolve_image, checks it against
// pinned_digests(), puts the digest in spec.image and returns it. Returns "" and leaves the spec
// when the runtime cannot resolve images (said once in the log) or the image is not local (the
// runtime may pull it; said per turn) — unless the image is pinned, which is then refused:
// a pin never fails open. Throws RequestError naming run.allowedImages and the fix.
// [thread-safe]
std::string pin_image(ContainerSpec& spec, const std::string& requested,
                      const host::RuntimeClient& client, const config::HostConfig& cfg);

} // namespace radial::turn
