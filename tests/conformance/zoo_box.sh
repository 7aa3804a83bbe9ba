#!/bin/sh
# tests/conformance/zoo_box.sh — the zoo's independent view of its boxes, for the harness's
# --verify-gone and --cleanup: each zoo box is a file in the plugin's boxDir, named after its label
# and holding its process group id, until the plugin removes the box.
#
#   zoo_box.sh probe DIR PREFIX    prints the label of every box whose label starts with PREFIX
#   zoo_box.sh cleanup DIR LABEL   kills the box's process group, if it is still a child of the
#                                  harness that runs this (our parent), and removes its file
set -u
what=${1:?usage: zoo_box.sh probe|cleanup DIR PREFIX|LABEL}
dir=${2:?usage: zoo_box.sh probe|cleanup DIR PREFIX|LABEL}
arg=${3:?usage: zoo_box.sh probe|cleanup DIR PREFIX|LABEL}
case $what in
probe)
    [ -d "$dir" ] || exit 0
    for f in "$dir/$arg"*; do
        [ -e "$f" ] && basename "$f"
    done
    exit 0
    ;;
cleanup)
    f=$dir/$arg
    [ -f "$f" ] || exit 0
    pgid=$(cat "$f")
    # Only a process the harness itself started (the zoo spawns boxes from the harness's
    # process): a recycled pid belongs to someone else and is left alone.
    # This script runs under the harness's `sh -c`, which may or may not exec it.
    ppid_of() { sed 's/.*) [A-Za-z] \([0-9]*\) .*/\1/' "/proc/$1/stat" 2>/dev/null; }
    if [ -n "$pgid" ] && [ -r "/proc/$pgid/stat" ]; then
        parent=$(ppid_of "$pgid")
        if [ "$parent" = "$PPID" ] || [ "$parent" = "$(ppid_of "$PPID")" ]; then
            kill -9 "-$pgid" 2>/dev/null
        fi
    fi
    rm -f "$f"
    ;;
*)
    echo "zoo_box.sh: unknown command '$what'" >&2
    exit 2
    ;;
esac
