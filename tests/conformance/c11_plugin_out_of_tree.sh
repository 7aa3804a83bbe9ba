#!/bin/sh
# tests/conformance/c11_plugin_out_of_tree.sh BUILD_DIR SOURCE_DIR [CMAKE] — a plain C11 plugin
# built as a third party without CMake or C++ would: install the developer package from BUILD_DIR
# into a temporary prefix, compile tests/conformance/c11_plugin.c with `cc` and nothing but the
# pkg-config file's flags, and run the installed harness's checks that need no box.
set -eu
build=${1:?usage: c11_plugin_out_of_tree.sh BUILD_DIR SOURCE_DIR [CMAKE]}
source=${2:?usage: c11_plugin_out_of_tree.sh BUILD_DIR SOURCE_DIR [CMAKE]}
cmake=${3:-cmake}
work=$(mktemp -d /tmp/radial-c11-oot-XXXXXX)
trap 'rm -rf "$work"' EXIT
"$cmake" --install "$build" --prefix "$work/prefix" --component dev > "$work/install.log"
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
pc() { pkg-config "$@" radial-plugin-api; }
echo "== cc $(pc --cflags) $(pc --variable=plugin_cflags) -Wall -Wextra -Werror -pedantic ..."
# shellcheck disable=SC2046
cc $(pc --cflags) $(pc --variable=plugin_cflags) -Wall -Wextra -Werror -pedantic -fPIC -shared \
   -o "$work/c11.so" "$source/tests/conformance/c11_plugin.c" $(pc --variable=plugin_ldflags)
checks=plugin_loads:descriptor_header:descriptor_functions:descriptor_identity:abi_negotiation
checks=$checks:create_with_config:create_rejects_unknown_key:preflight:capabilities_reported
checks=$checks:dispositions_complete:exports_only_entry
"$(pc --variable=conformance)" --plugin "$work/c11.so" \
    "--gtest_filter=$(echo "Conformance.$checks" | sed 's/:/:Conformance./g')" > "$work/out" 2>&1 \
    || { cat "$work/out"; exit 1; }
cat "$work/out"
grep -qF "radial-conformance: PASS c11 0.0.1 (12 checks, 0 skipped; absent optional calls: preflight, capabilities, get_extension, tcp_route, inspect)" "$work/out"
