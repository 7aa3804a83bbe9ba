#include "turn/image_pin.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <mutex>
#include <radial/host/session_client.hpp>

#include "log/logger.h"
#include "turn/turn_request.h"

namespace radial::turn {

namespace {

constexpr std::string_view kPin = "@sha256:";

// Said once per process: every turn of a runtime without resolve_image would say the same.
std::once_flag g_no_resolver_said;

} // namespace

AllowedImage split_allowed_image(const std::string& entry) {
    const auto at = entry.rfind(kPin);
    if (at == std::string::npos) return {entry, {}};
    return {entry.substr(0, at), entry.substr(at + 1)};
}

std::vector<std::string> pinned_digests(const std::string& image, const config::HostConfig& cfg) {
    std::vector<std::string> out;
    for (const auto& entry : cfg.allowed_images) {
        const auto [pattern, digest] = split_allowed_image(entry);
        if (::fnmatch(pattern.c_str(), image.c_str(), 0) != 0) continue;
        if (digest.empty()) return {};
        out.push_back(digest);
    }
    return out;
}

std::string pin_image(ContainerSpec& spec, const std::string& requested,
                      const host::RuntimeClient& client, const config::HostConfig& cfg) {
    // A root filesystem directory (bubblewrap) has no digest to run.
    if (!spec.image.empty() && spec.image.front() == '/') return {};
    const std::vector<std::string> pins = pinned_digests(requested, cfg);
    const std::string& id = client.info().id;
    const std::string where = cfg.where("run.allowedImages");
    std::optional<host::SessionClient> sessions;
    try {
        sessions.emplace(host::SessionClient::of(client));
    } catch (const host::RuntimeError&) {
        // No session extension: no resolve_image either.
    }
    if (!sessions || !sessions->has_snapshots()) {
        if (!pins.empty())
            throw RequestError(fmt::format(
                "{}run.allowedImages pins image '{}' to a digest, but runtime '{}' cannot resolve "
                "an image to its digest (it offers no resolve_image); the turn is refused rather "
                "than run unchecked — select a runtime that does, or allow the image without a "
                "digest",
                where, requested, id));
        std::call_once(g_no_resolver_said, [&] {
            log::info("turn",
                      "runtime '{}' cannot resolve images to digests (no resolve_image): turns "
                      "run their image by name and record no imageDigest",
                      id);
        });
        return {};
    }
    std::string digest;
    try {
        digest = sessions->resolve_image(spec.image);
    } catch (const host::RuntimeError& e) {
        if (!pins.empty())
            throw RequestError(fmt::format(
                "{}run.allowedImages pins image '{}' to a digest, but runtime '{}' could not "
                "resolve it: {}; make the image present on the engine (docker pull) first",
                where, requested, id, e.what()));
        // Not present yet: the runtime may pull it (run.docker.pull), by name.
        log::info("turn",
                  "image '{}' is not resolved to a digest ({}); it runs by name and the "
                  "record carries no imageDigest",
                  requested, e.what());
        return {};
    }
    if (!pins.empty() && std::find(pins.begin(), pins.end(), digest) == pins.end())
        throw RequestError(fmt::format(
            "{}image '{}' is {}, which run.allowedImages does not pin it to ({}); use the pinned "
            "image, or have the operator pin this digest",
            where, requested, digest, fmt::join(pins, ", ")));
    spec.image = digest;
    return digest;
}

} // namespace radial::turn
