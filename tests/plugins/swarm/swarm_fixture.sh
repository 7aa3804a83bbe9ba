#!/bin/sh
# The one-node swarm the swarm runtime's live tests need, as a CTest fixture.
#   swarm_fixture.sh setup   <state-file>  joins nothing: initialises a swarm on 127.0.0.1 only
#                                          when the engine is in none, and records whether it did
#   swarm_fixture.sh cleanup <state-file>  leaves the swarm only when setup initialised it and no
#                                          service is left in it (someone else may be using it)
# Swarm mode is engine-wide state shared with everyone using this engine; a one-node swarm does not
# change plain `docker run`, so initialising one is harmless, but leaving one we did not create
# (or one that now runs someone else's services) is not: the cleanup never does either.
set -eu
action=${1:?setup or cleanup}
state=${2:?state file}
docker=${DOCKER:-docker}

node_state() { "$docker" info --format '{{.Swarm.LocalNodeState}}'; }

case "$action" in
setup)
    s=$(node_state)
    if [ "$s" = active ]; then
        if [ "$("$docker" info --format '{{.Swarm.ControlAvailable}}')" != true ]; then
            echo "swarm_fixture: this engine is a swarm worker, not a manager; the swarm live tests need a manager" >&2
            exit 1
        fi
        echo preexisting >"$state"
        echo "swarm_fixture: using the swarm this engine is already in"
        exit 0
    fi
    if [ "$s" != inactive ]; then
        echo "swarm_fixture: the engine's swarm state is '$s'; wait for it to settle or fix it by hand" >&2
        exit 1
    fi
    # hermetic-ok: swarm mode is engine-wide; we create it only when absent and record that we did
    if "$docker" swarm init --advertise-addr 127.0.0.1 --listen-addr 127.0.0.1:2377 >/dev/null; then
        echo ours >"$state"
        echo "swarm_fixture: initialised a one-node swarm on 127.0.0.1"
    elif [ "$(node_state)" = active ]; then
        echo preexisting >"$state" # another test set-up won the race
    else
        exit 1
    fi
    ;;
cleanup)
    [ -f "$state" ] || exit 0
    owner=$(cat "$state")
    rm -f "$state"
    [ "$owner" = ours ] || exit 0
    [ "$(node_state)" = active ] || exit 0
    # hermetic-ok: deciding whether to leave the swarm is about the whole swarm, not our services
    left=$("$docker" service ls -q | wc -l)
    if [ "$left" -ne 0 ]; then
        echo "swarm_fixture: $left service(s) still run in the swarm this set-up created; leaving it in place" >&2
        exit 0
    fi
    # hermetic-ok: leaves only the swarm this fixture initialised, and only when it runs nothing
    "$docker" swarm leave --force >/dev/null
    echo "swarm_fixture: left the swarm this set-up initialised"
    ;;
*)
    echo "usage: $0 setup|cleanup <state-file>" >&2
    exit 2
    ;;
esac
