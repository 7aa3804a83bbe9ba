// host/daemon/turn_file.h — a turn request written by the operator as TOML (docs/design.md §12.1),
// read by `radiald submit`. Every key is checked here, before anything is enqueued, and every
// refusal names the file, line, column and key.
//
//   id = "build-42"                      # optional: a-z, 0-9, '-' (default: generated)
//   kind = "check"                       # optional: "turn" (default) or "check" (no secrets)
//   image = "radial/busybox:latest"
//   argv = ["sh", "-c", "make test"]
//   workdir = "/src"                     # optional, absolute in the box
//   workspace = "ws"                     # optional host directory mounted read-write at /work
//   timeout = "10m"                      # optional duration
//   recordType = "result"                # optional: the one record type the turn socket accepts
//   mode = "read-only"                   # optional: or "workspace-write" (default: run.mode)
//   workspaceMount = "same-path"         # optional: or "/work" (default: run.workspaceMount)
//   secrets = ["GH_TOKEN"]               # names; values come from radiald's environment at run
//                                        # time; a check may name none
//   [env]
//   CI = "1"
//   [[mounts]]
//   source = "/srv/cache"                # relative paths are taken from the file's directory
//   target = "/cache"
//   readOnly = true
#pragma once

#include <stdexcept>
#include <string>

#include "daemon/spooled_request.h"

namespace radial::daemon {

// A turn file that cannot be submitted. what(): "<file>:<line>:<col>: <key>: <problem>; <fix>", or
// "<file>: <key>: …" for a key that is missing.
class TurnFileError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Reads and checks `path`. Relative workspace and mount sources become absolute against the file's
// directory, and must exist. The result's turn_id is empty when the file names none. Throws
// TurnFileError; nothing else but std::bad_alloc. [thread-safe]
SpooledRequest read_turn_file(const std::string& path);

} // namespace radial::daemon
