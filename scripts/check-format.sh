#!/usr/bin/env bash
# Fails (exit 1) naming every C/C++ source under git that clang-format (the repo's .clang-format)
# would change; `scripts/check-format.sh --fix` rewrites them instead. Run by CTest as
# `clang_format_clean`, so CI refuses an unformatted tree.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

fix=0
case "${1:-}" in
    --fix) fix=1 ;;
    "") ;;
    -h | --help) echo "usage: scripts/check-format.sh [--fix]"; exit 0 ;;
    *) echo "check-format: unknown argument '$1'" >&2; exit 2 ;;
esac

command -v clang-format >/dev/null || { echo "check-format: clang-format not found (scripts/setup.sh installs it)" >&2; exit 1; }
# Tracked files, plus new ones not yet committed, so a change is checked before it is committed.
mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.c' '*.h' '*.cpp' '*.hpp' \
    | while read -r f; do [[ -f "$f" ]] && echo "$f"; done)
if ((fix)); then
    clang-format -i "${files[@]}"
    exit 0
fi
# One clang-format for every file (a process per file took seven times as long); only when
# something is not clean, file by file to name each.
bad=()
if ! clang-format --dry-run -Werror "${files[@]}" >/dev/null 2>&1; then
    for f in "${files[@]}"; do
        clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
    done
    ((${#bad[@]} > 0)) || bad=("(clang-format failed on the whole set; run it by hand)")
fi
if ((${#bad[@]} > 0)); then
    printf 'check-format: not clang-format clean: %s\n' "${bad[@]}" >&2
    echo "check-format: run scripts/check-format.sh --fix" >&2
    exit 1
fi
echo "check-format: ${#files[@]} files clean"
