// host/socket/socket_error.h — the one exception type the turn socket throws (docs/design.md
// §9).
#pragma once

#include <stdexcept>

namespace radial::socket {

// Thrown when a turn socket cannot be set up: invalid options, a path over the sun_path limit
// (docs/design.md §17, C-10), a failed bind/chown/chmod, or the OS CSPRNG failing. what() follows
// the project's error text rule — "what was being done: cause; fix" — and never contains the bearer
// token.
class SocketError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Thrown by a record sink when a record could not be stored because the host's storage is full or
// failing: the turn socket answers 507 Insufficient Storage, so the harness knows the record was
// not kept (and may retry or give up), where any other failure is a 500.
class StorageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A StorageError whose message is for the box: the record was refused because the turn used up
// its share (docs/design.md §9.6). The 507 carries what() — it names the key, never a host path.
class RecordQuotaError : public StorageError {
public:
    using StorageError::StorageError;
};

} // namespace radial::socket
