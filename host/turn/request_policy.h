// host/turn/request_policy.h — what a turn request may ask for (the operator's policy and the
// host's fixed limits). One set of checks for every entry point: `radiald turn`, `radiald submit`
// and the daemon when it claims a turn all reach them through build_container_spec(), so a request
// submit accepts is one the run accepts, and a request changed after submit is checked again.
#pragma once

#include <radial/internal/names.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/host_config.h"

namespace radial::turn {

struct TurnRequest;

// Why a request may not set the variable `name` in its box: radiald sets it there for every turn
// (the turn socket and its token, docs/design.md §3.3; the egress broker's socket), or, for a
// turn with egress (`with_egress`), the proxy variables that lead its tools to the broker (§9.7).
// nullopt when the request may set it. [thread-safe]
std::optional<std::string> reserved_env_problem(std::string_view name, bool with_egress);

// Whether the turn gets an egress broker: it names egress destinations, or offers services
// (docs/design.md §9.7, "Between boxes"). [thread-safe]
bool brokered(const TurnRequest& req);

// The kernel refuses one argument or environment string longer than this (MAX_ARG_STRLEN,
// 32 pages of 4 KiB), in bytes including its NUL.
inline constexpr std::size_t kMaxArgStringBytes = 32 * 4096;

// Bytes of the exec budget kept for the runtime's own flags and environment (docker run's
// options, the client's passthrough variables).
inline constexpr std::size_t kArgReserveBytes = 64 * 1024;

// The longest record type, in bytes (radial/internal/names.h, with is_record_type).
using internal::kMaxRecordTypeBytes;

// Host paths no request may name, whatever run.workspaceRoots says: "/", /proc, /sys, /dev, /etc,
// /boot, the engine's data roots, radiald's state directory and run.protectedPaths. A source is
// refused when it is one of them, lies under one, or contains one. [thread-safe]
std::vector<std::string> protected_host_paths(const config::HostConfig& cfg);

// Why `resolved` (a checked_host_source() result) may no longer be mounted: a symbolic link is on
// its path now (none was when it was resolved, so one was put there since, to point dockerd's
// mount at another tree), or it is gone. Empty when it is still reached as it was. Reads the file
// system. [thread-safe]
std::string moved_host_source(const std::string& resolved);

// Checks a host path a request names (the workspace, a mount source) and returns its resolved
// form (symlinks and ".." resolved), which is what the box gets; a link put on that path after the
// check is caught by moved_host_source() just before the box is asked for. `key` names it in
// errors ("workspace", "mounts[0].source"). Throws RequestError when it does not exist, is not a
// directory (`directory`) or not a regular file or directory, resolves to or around a protected
// path, lies outside run.workspaceRoots, or contains ':' or ','. Reads the file system.
// [thread-safe]
std::string checked_host_source(const std::string& key, const std::string& path, bool directory,
                                const config::HostConfig& cfg);

// Checks a mount target in the box and returns it normalised ("/work/../proc" is "/proc").
// Throws RequestError for a relative path, '/' itself, one under /proc, /sys, /dev or
// /run/radial, one of the box user's files radiald provides (/etc/passwd, /etc/group, the home
// /home/radial and its .codex, docs/design.md §8.7), or one containing ':' or ','. [thread-safe]
std::string checked_box_target(const std::string& key, const std::string& target);

// The box paths radiald provides to the box user (its passwd, group, home and .codex,
// docs/design.md §8.7), which no request's mount may target. [thread-safe]
const std::vector<std::string>& reserved_box_targets();

// True when `image` is a valid image reference: [domain[:port]/]name[:tag][@digest], the grammar
// of the docker distribution library. [thread-safe]
bool valid_image_reference(const std::string& image);

// Checks the image and returns what the runtime gets. `image` must match one of
// run.allowedImages (shell patterns, fnmatch(3)) and be a valid reference — or, for a runtime
// whose image is a root filesystem directory, an absolute host path, which is checked as a
// directory by checked_host_source() and returned resolved. Throws RequestError naming the key.
// [thread-safe]
std::string check_image(const std::string& image, const config::HostConfig& cfg);

// Throws RequestError unless `type` is 1..kMaxRecordTypeBytes of [A-Za-z0-9._:/-]: the only
// record types a box can post in a JSON string to its turn socket. [thread-safe]
void check_record_type(const std::string& type);

// Throws RequestError naming the first text of the request that is not well-formed UTF-8 — an
// argv word, an env name or value, a secret's value, the image, the workspace, a mount's source
// or target, the workdir — and the offset of its first bad byte: the record, the journal and the
// engine's API all carry text as JSON strings, which cannot hold such bytes exactly, so they are
// refused rather than altered (docs/design.md §7.5). [thread-safe]
void check_request_text(const TurnRequest& req);

// Throws RequestError for an argv element or env value with a NUL byte, one string over
// kMaxArgStringBytes, or argv and env together over what one exec may carry (the kernel's
// ARG_MAX less kArgReserveBytes). [thread-safe]
void check_exec_size(const TurnRequest& req);

} // namespace radial::turn
