#!/usr/bin/env bash
# tests/packaging/check_docs.sh RADIALD SOURCE_DIR — radiald(8) and the bash completion keep up
# with the CLI: every command `radiald --help` lists is documented in the manual page and completed,
# every long option of every command is completed and named in the manual page, and the page
# formats without a warning.
set -euo pipefail
radiald=${1:?usage: check_docs.sh RADIALD SOURCE_DIR}
source_dir=${2:?usage: check_docs.sh RADIALD SOURCE_DIR}
man="$source_dir/packaging/radiald.8"
completion="$source_dir/packaging/radiald.bash-completion"
failed=0
fail() {
    echo "check_docs: $*" >&2
    failed=1
}

subcommands() { "$radiald" "$@" --help | sed -n '/^Subcommands:/,$p' | awk 'NR > 1 && /^  [a-z]/ { print $1 }'; }
long_options() { "$radiald" "$@" --help | grep -oE '^ +(-[a-z],)?--[a-z-]+' | grep -oE -- '--[a-z-]+' | grep -v -- '--help'; }

commands="$(subcommands)"
[[ -n "$commands" ]] || fail "'radiald --help' lists no commands"
completed="$(sed -n 's/^ *local commands="\(.*\)"$/\1/p' "$completion")"
for c in $commands; do
    grep -q "^\.B $c\$\|^\.B $c " "$man" || fail "radiald.8 does not document the command '$c' (a '.B $c' line)"
    [[ " $completed " == *" $c "* ]] || fail "the bash completion does not complete the command '$c'"
    for o in $(long_options "$c"); do
        grep -q -- "${o//-/\\\\-}\|$o" "$man" || fail "radiald.8 does not name '$c $o'"
        grep -q -- "$o" "$completion" || fail "the bash completion does not complete '$c $o'"
    done
done
for c in $(subcommands config); do
    grep -q "config $c" "$man" || fail "radiald.8 does not document 'config $c'"
done
for o in $(long_options); do
    grep -q -- "${o//-/\\\\-}" "$man" || fail "radiald.8 does not name the global option '$o'"
    grep -q -- "$o" "$completion" || fail "the bash completion does not complete the global option '$o'"
done

if command -v groff >/dev/null 2>&1; then
    warnings="$(groff -man -ww -z -Tutf8 "$man" 2>&1)"
    [[ -z "$warnings" ]] || fail "radiald.8 formats with warnings: $warnings"
fi
bash -n "$completion" || fail "the bash completion does not parse"

# The completion function itself, with bash-completion's two helpers stubbed (that package need
# not be installed): completions for a command line given as words, the last one being completed.
complete_line() {
    bash -c '
        _init_completion() { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
        _filedir() { COMPREPLY=(FILES); }
        source "$0"
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _radiald
        echo "${COMPREPLY[*]}"' "$completion" "$@"
}
expect_completion() { # expect_completion "EXPECTED" WORD...
    local want=$1 got
    shift
    got="$(complete_line "$@")"
    [[ "$got" == "$want" ]] || fail "completing '$*': got '$got', want '$want'"
}
expect_completion "config" radiald co
expect_completion "check --help" radiald config ""
expect_completion "--config" radiald config check --c
expect_completion "text json" radiald --log-format ""
expect_completion "config" radiald --log-format json co
expect_completion "FILES" radiald run --config ""
expect_completion "FILES" radiald submit ""
expect_completion "--json" radiald status --j
expect_completion "--image" radiald turn --im
# Each command's own options, completed after that command (not only named somewhere in the
# file): `check --mode` was in --help and completed only after `turn`.
for c in $commands; do
    [[ -z "$(subcommands "$c")" ]] || continue # those with subcommands: below
    offered=" $(complete_line radiald "$c" --) "
    for o in $(long_options "$c"); do
        [[ "$offered" == *" $o "* ]] || fail "the bash completion does not offer '$o' after '$c'"
    done
done
for c in $commands; do
    for sub in $(subcommands "$c"); do
        offered=" $(complete_line radiald "$c" "$sub" --) "
        for o in $(long_options "$c" "$sub"); do
            [[ "$offered" == *" $o "* ]] ||
                fail "the bash completion does not offer '$o' after '$c $sub'"
        done
    done
done
exit "$failed"
