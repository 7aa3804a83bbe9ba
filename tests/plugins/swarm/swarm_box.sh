#!/bin/sh
# tests/plugins/swarm/swarm_box.sh — the engine's own view of the swarm runtime's boxes, for
# radial-conformance's --verify-gone and --cleanup, independent of the plugin's list_by_label: a
# box is a service labelled radial.label=<label>, and its task's container on this node, which must
# go with it (docs/design.md §13.7).
#
#   swarm_box.sh probe PREFIX    prints the label of every service or container of this node
#                                whose radial.label starts with PREFIX, once each
#   swarm_box.sh cleanup LABEL   removes the services, containers and secrets labelled LABEL
set -u
what=${1:?usage: swarm_box.sh probe PREFIX | cleanup LABEL}
arg=${2:?usage: swarm_box.sh probe PREFIX | cleanup LABEL}
key=radial.label
case $what in
probe)
    {
        for id in $(docker service ls -q --filter "label=$key"); do
            docker service inspect --format "{{index .Spec.Labels \"$key\"}}" "$id" 2>/dev/null
        done
        docker ps -a --filter "label=$key" --format "{{.Label \"$key\"}}"
    } | awk -v p="$arg" 'index($0, p) == 1' | sort -u
    exit 0
    ;;
cleanup)
    docker service ls -q --filter "label=$key=$arg" | xargs -r docker service rm >/dev/null
    docker ps -aq --filter "label=$key=$arg" | xargs -r docker rm -f >/dev/null
    docker secret ls -q --filter "label=$key=$arg" | xargs -r docker secret rm >/dev/null 2>&1
    exit 0
    ;;
*)
    echo "usage: swarm_box.sh probe PREFIX | cleanup LABEL" >&2
    exit 2
    ;;
esac
