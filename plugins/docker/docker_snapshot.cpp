#include "docker_snapshot.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>

#include "docker_argv.h"
#include "oci_runtime_profile.h"
#include "upper_dir_walk.h"

namespace radial::docker {
namespace {

using radial::plugin::Error;

// A commit of a large tree takes its time; the engine pauses the box meanwhile.
constexpr std::chrono::minutes kCommitBudget{10};

std::string box_id(const DockerEngine& engine, std::string_view label) {
    const auto ids = engine.ids_with_label(label);
    if (ids.empty())
        throw Error(RADIAL_E_NOT_FOUND, "label",
                    "session box '" + std::string(label) +
                        "' is gone (its idle timeout or maximum lifetime passed, or it was "
                        "removed)");
    return ids.front();
}

std::string id_of(const nlohmann::json& image, std::string_view name) {
    if (image.contains("Id") && image["Id"].is_string()) return image["Id"].get<std::string>();
    throw Error(RADIAL_E_INTERNAL,
                "inspecting image '" + std::string(name) + "': the engine's answer has no Id");
}

} // namespace

std::string docker_image_digest(const DockerEngine& engine, std::string_view image) {
    auto j = engine.image_json(image);
    if (!j)
        throw Error(RADIAL_E_NOT_FOUND, "image",
                    "image '" + std::string(image) +
                        "' is not present on the engine, so it has no digest yet; build or load "
                        "it (docker build, docker load)");
    return id_of(*j, image);
}

namespace {

// The host path of the session box's overlay upper directory (its own changes).
std::string upper_dir_of(const DockerEngine& engine, std::string_view label) {
    const auto& oci = engine.settings().oci_runtime;
    if (oci_runtime_profile(oci).binary == std::string_view("runsc"))
        throw Error(RADIAL_E_UNSUPPORTED, "ociRuntime",
                    "session box '" + std::string(label) + "' runs under gVisor (ociRuntime '" +
                        oci +
                        "'), which keeps the box's file changes in its own overlay where the "
                        "host cannot check them; snapshots need ociRuntime runc");
    const auto box = engine.container_json(box_id(engine, label), label);
    const auto& driver = box.value("GraphDriver", nlohmann::json::object());
    const std::string name = driver.value("Name", "");
    const auto& data = driver.value("Data", nlohmann::json::object());
    if (name != "overlay2" || !data.is_object() || !data.contains("UpperDir") ||
        !data["UpperDir"].is_string())
        throw Error(RADIAL_E_UNSUPPORTED,
                    "the engine keeps session box '" + std::string(label) + "' on storage '" +
                        (name.empty() ? std::string("(unnamed)") : name) +
                        "'; only overlay2's changes can be checked for snapshots (dockerd "
                        "--storage-driver overlay2)");
    return data["UpperDir"].get<std::string>();
}

std::string biggest_files(const UpperDirSize& size) {
    std::string out;
    for (const auto& [path, bytes] : size.biggest)
        out += (out.empty() ? "" : ", ") + path + " (" + std::to_string(bytes) + " bytes)";
    return out;
}

} // namespace

void docker_session_changes(const DockerEngine& engine, std::string_view label,
                            std::uint64_t since_ms, radial::plugin::ChangeSink& sink) {
    walk_upper_dir(upper_dir_of(engine, label), since_ms, sink);
}

void check_docker_snapshot_size(const DockerEngine& engine, std::string_view label,
                                std::uint64_t max_bytes) {
    const std::string upper = upper_dir_of(engine, label);
    const UpperDirSize size = size_upper_dir(upper);
    const std::string what =
        "a commit of session box '" + std::string(label) + "' writes about " +
        std::to_string(size.bytes) + " bytes: its " + std::to_string(size.entries) +
        " changed entries' headers, names, link targets and attributes, and its files by their "
        "apparent size (a sparse file's holes count: a commit writes them out as zeros)";
    if (max_bytes != 0 && size.bytes > max_bytes)
        throw Error(RADIAL_E_REFUSED, "max_bytes",
                    what + ", more than the " + std::to_string(max_bytes) +
                        " a snapshot may write; the biggest: " + biggest_files(size));
    // The commit writes its layer beside the box's own, under the engine's data root: the free
    // space of the upper directory's file system is what it may fill.
    struct statvfs fs {};
    if (::statvfs(upper.c_str(), &fs) != 0)
        throw Error(RADIAL_E_UNAVAILABLE, "reading the free space of the engine's data root at '" +
                                              upper + "': " + std::strerror(errno));
    const std::uint64_t free_bytes =
        static_cast<std::uint64_t>(fs.f_bavail) * static_cast<std::uint64_t>(fs.f_frsize);
    if (size.bytes >= free_bytes)
        throw Error(RADIAL_E_REFUSED, "",
                    what + ", more than the " + std::to_string(free_bytes) +
                        " bytes free on the file system of the engine's data root; the biggest: " +
                        biggest_files(size));
}

std::string snapshot_docker_session(const DockerEngine& engine, const radial::plugin::Host& host,
                                    std::string_view label, std::string_view image) {
    if (auto existing = engine.image_json(image)) return id_of(*existing, image);
    const std::string id = box_id(engine, label);
    const auto box = engine.container_json(id, label);
    const std::string base = box.value("Image", "");
    auto base_image = engine.image_json(base);
    nlohmann::json config = nlohmann::json::object();
    if (base_image && base_image->contains("Config") && (*base_image)["Config"].is_object())
        config = (*base_image)["Config"];
    // The engine fills what the configuration leaves unset from the box's own (its entrypoint,
    // radial-init's mount point; its user, the session's leased ids; its labels): set each.
    if (!config.contains("Labels") || !config["Labels"].is_object())
        config["Labels"] = nlohmann::json::object();
    config["Labels"][std::string(kLabelKey)] = "";
    for (const char* list : {"Entrypoint", "Cmd"})
        if (!config.contains(list) || !config[list].is_array())
            config[list] = nlohmann::json::array();
    if (!config.contains("User") || !config["User"].is_string() ||
        config["User"].get<std::string>().empty())
        config["User"] = "0";
    const std::string ref(image);
    const auto colon = ref.rfind(':');
    if (colon == std::string::npos || colon == 0 || ref.find('/', colon) != std::string::npos)
        throw Error(RADIAL_E_INVALID, "image",
                    "snapshot name '" + ref + "' is not 'repository:tag'");
    const std::string made =
        engine.commit(id, label, ref.substr(0, colon), ref.substr(colon + 1), config,
                      std::chrono::duration_cast<std::chrono::milliseconds>(kCommitBudget));
    host.info("committed session box '" + std::string(label) + "' to image '" + ref + "' (" + made +
              ")");
    return made;
}

} // namespace radial::docker
