#!/bin/sh
# tests/conformance/extract_guide_example.sh GUIDE OUT_DIR — writes the example plugin of
# docs/plugin-authors.md to OUT_DIR, exactly as the page shows it (docs/design.md §5.11): every
# fenced code block whose opening line names a file ("```cpp file=myrt.cpp") becomes that file.
# Fails when the page names no file, or names one twice. Prints the files it wrote.
set -eu
guide=${1:?usage: extract_guide_example.sh GUIDE OUT_DIR}
out=${2:?usage: extract_guide_example.sh GUIDE OUT_DIR}
mkdir -p "$out"
awk -v out="$out" '
    !inside && /^```[A-Za-z0-9+-]* +file=[A-Za-z0-9._-]+ *$/ {
        name = $0
        sub(/.*file=/, "", name)
        sub(/ *$/, "", name)
        if (name in seen) { printf "%s: file=%s is named twice\n", FILENAME, name > "/dev/stderr"; exit 2 }
        seen[name] = 1
        files++
        path = out "/" name
        printf "" > path
        inside = 1
        print path
        next
    }
    inside && /^```[ \t]*$/ { close(path); inside = 0; next }
    inside { print >> path }
    END {
        if (inside) { printf "%s: the block of %s is not closed\n", FILENAME, name > "/dev/stderr"; exit 2 }
        if (files == 0) { printf "%s: no fenced block names a file (```cpp file=NAME)\n", FILENAME > "/dev/stderr"; exit 2 }
    }
' "$guide"
