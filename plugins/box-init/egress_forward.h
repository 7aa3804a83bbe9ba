/* plugins/box-init/egress_forward.h — the box's end of the egress broker (docs/design.md §9.7):
 * a loopback TCP endpoint inside the box whose connections radial-init carries, byte for byte, to
 * the broker's unix socket in /run/radial. The box has no network of its own; HTTP_PROXY names
 * this endpoint, so ordinary tools reach exactly what the broker lets through. */
#pragma once

#include <sys/types.h>

/* The variable that asks for the endpoint: the broker's socket path inside the box. Its port is
 * RADIAL_EGRESS_PORT, or 3128. */
#define RADIAL_EGRESS_SOCKET_ENV "RADIAL_EGRESS_SOCKET"
#define RADIAL_EGRESS_PORT_ENV "RADIAL_EGRESS_PORT"
/* The ports of the services the turn offers ("8080,9090"), set by radiald (docs/design.md §9.7,
 * "Between boxes"): with it, the forwarder also opens one control connection to the broker (a
 * 0x01 byte) and answers each 'P' + port (2 bytes, network order) naming one of these ports with
 * 'K' carrying a socket connected to 127.0.0.1:port, or 'E'. Descriptors go to the host only. */
#define RADIAL_OFFER_PORTS_ENV "RADIAL_OFFER_PORTS"

/* When RADIAL_EGRESS_SOCKET is set: binds 127.0.0.1:PORT (so connections queue from now on, before
 * the command runs) and forks the forwarder, which accepts and, per connection, forks a relay to
 * the socket (children reaped by the kernel). `close_fd` (-1: none) is closed in the forwarder.
 * Returns the forwarder's pid, 0 when the variable is not set, or -1 with a message written to
 * stderr (a bad port, the port taken, a failed fork). */
pid_t start_egress_forwarder(int close_fd);
