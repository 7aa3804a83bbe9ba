// host/session/instance_fingerprints.h — what every turn of a state directory was given, kept as
// keyed fingerprints (secret_fingerprints.h), so that a session's check also finds a secret that
// another session's turn or a one-shot turn left in a host path the session's box reads — a shared
// workspace, a mount (docs/design.md §13.12).
//
// Kept in <state_dir>/secret-fingerprints/ (root's, 0700): "key" (64 hex digits, random, made by
// the first writer) and one file per secret value, named by the value's keyed MAC and holding the
// fingerprints of that value's patterns and the id of the key they were made under (a value file
// whose key is gone or another is refused, never matched as nothing). A file is published whole and
// never replaced, so writers (the daemon, `radiald turn`, side by side) need no lock, and a value
// already there costs one stat(2). The turn's token is not kept: it is good for its own turn only,
// and every turn has one.
#pragma once

#include <string>
#include <vector>

#include "redaction/secret_set.h"
#include "session/secret_fingerprints.h"

namespace radial::session {

// Whether a secret is kept in the store (and so masked in every later turn and looked for in every
// session's snapshot): at least 16 bytes, and not one of the well-known variables of a process's
// environment (PATH, HOME, SHELL, LANG, LC_*, …). A request may name any variable as a secret;
// without this, one request naming SHELL would mask "/bin/bash" in every later turn and bar every
// snapshot holding it.
bool kept_in_store(const std::string& name, const std::string& value);

// The store's directory under `state_dir`.
std::string instance_fingerprints_dir(const std::string& state_dir);

// Keeps the fingerprints of every secret of `secrets` but the one named `skip` (the turn's token).
// Throws turn::TurnSetupError naming the directory when it cannot. [thread-safe]
void remember_secrets(const std::string& state_dir, const redaction::SecretSet& secrets,
                      const std::string& skip);

// What the store holds; an empty key and no fingerprints when nothing was ever kept. Throws
// turn::TurnSetupError naming the file that cannot be read or was not written by radiald.
struct InstanceFingerprints {
    std::string key;
    std::vector<SecretFingerprint> fingerprints;
};
InstanceFingerprints load_instance_fingerprints(const std::string& state_dir);

} // namespace radial::session
