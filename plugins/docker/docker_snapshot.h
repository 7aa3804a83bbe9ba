// plugins/docker/docker_snapshot.h — session snapshots under the docker runtime (radial/session.h
// 1.1, docs/design.md §13.12): image digests, the box's changes read from its overlay upper
// directory, commits to local images, and their removal.
#pragma once

#include <cstdint>
#include <radial/plugin/session.hpp>
#include <string>
#include <string_view>

#include "docker_engine.h"

namespace radial::docker {

// The image's id ("sha256:<hex>": the digest of its configuration, which names its layers).
// Throws Error(RADIAL_E_NOT_FOUND) naming the image when the engine does not have it.
std::string docker_image_digest(const DockerEngine& engine, std::string_view image);

// Gives the session box's changes since `since_ms` (walk_upper_dir over the container's
// overlay2 upper directory). Throws Error(RADIAL_E_UNSUPPORTED) naming why when the box's
// changes are not where the host can read them: gVisor (ociRuntime runsc) keeps them in its own
// overlay, and storage drivers other than overlay2 are not read.
void docker_session_changes(const DockerEngine& engine, std::string_view label,
                            std::uint64_t since_ms, radial::plugin::ChangeSink& sink);

// Throws Error(RADIAL_E_REFUSED) naming the biggest files when the regular files of the session
// box's changes (size_upper_dir: apparent sizes) come to more than `max_bytes` (0: no bound) or
// to the free bytes of the file system of its upper directory (the engine's data root, where a
// commit writes); Error(RADIAL_E_UNSUPPORTED) as docker_session_changes; Error(RADIAL_E_NOT_FOUND)
// when the box is gone. Reads names and sizes, never contents; thread-safe.
void check_docker_snapshot_size(const DockerEngine& engine, std::string_view label,
                                std::uint64_t max_bytes);

// Commits the session's box to `image` ("repository:tag"), whose configuration is the base
// image's (command, entrypoint, environment) with radial's box label cleared, so that a box made
// from it is labelled only by whoever makes it. An existing image of that name is reused. Returns
// the image's id.
std::string snapshot_docker_session(const DockerEngine& engine, const radial::plugin::Host& host,
                                    std::string_view label, std::string_view image);

} // namespace radial::docker
