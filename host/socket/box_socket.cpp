#include "socket/box_socket.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>

namespace radial::socket {
namespace fs = std::filesystem;

std::string turn_socket_path(const std::string& state_dir, const std::string& turn_id) {
    const fs::path turns = fs::path(state_dir) / "turns";
    fs::create_directories(turns);
    ::chmod(turns.c_str(), 0700);
    return (turns / turn_id / kSocketFile).string();
}

std::string turn_socket_path_problem(const std::string& state_dir, const std::string& turn_id) {
    const std::size_t bytes =
        (fs::path(state_dir) / "turns" / turn_id / "egress.sock").string().size();
    if (bytes <= kMaxUnixPathBytes) return {};
    const std::size_t over = bytes - kMaxUnixPathBytes;
    return fmt::format(
        "turn id '{}': the turn's unix sockets would be bound as '{}/turns/{}/egress.sock' ({} "
        "bytes), over the limit of {} bytes of a socket address; {}",
        turn_id, state_dir, turn_id, bytes, kMaxUnixPathBytes,
        turn_id.size() > over
            ? fmt::format("give an id of at most {} bytes (or leave it out: a generated one "
                          "fits), or choose a run.stateDir of at most {} bytes",
                          turn_id.size() - over, state_dir.size() - over)
            : fmt::format("choose a run.stateDir of at most {} bytes", state_dir.size() - over));
}

void place_turn_socket(const BoxSocket& s, ContainerSpec& spec) {
    if (s.transport == Transport::unix_socket) {
        const fs::path dir(s.unix_dir);
        if (s.any_uid) {
            ::chmod(dir.c_str(), 0711);
            ::chmod((dir / kSocketFile).c_str(), 0666);
        }
        // Read-only: a socket is reached through a read-only mount as through any, and the box
        // must not fill the state directory's disk through its socket directory.
        if (s.mount_dir) spec.mounts.push_back({dir.string(), kBoxSocketDir, true});
        spec.env.push_back(
            {kSocketEnv, fmt::format("unix://{}/{}", kBoxSocketDir, kSocketFile), false});
    } else {
        spec.host_ports.push_back(s.port);
        spec.env.push_back({kSocketEnv, fmt::format("tcp://{}:{}", s.box_host, s.port), false});
    }
    spec.env.push_back({kTokenEnv, s.token, true});
}

} // namespace radial::socket
