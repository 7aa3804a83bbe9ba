#!/bin/sh
# tests/conformance/bubblewrap_out_of_tree.sh BUILD_DIR SOURCE_DIR [CMAKE CTEST] — the bubblewrap runtime
# built exactly as a third party builds a plugin (docs/design.md §5.11): install radial's developer package
# from BUILD_DIR into a temporary prefix, configure examples/bubblewrap as a separate CMake
# project against that prefix, build it and run its CTest tests (the conformance run).
set -eu
build=${1:?usage: bubblewrap_out_of_tree.sh BUILD_DIR SOURCE_DIR}
source=${2:?usage: bubblewrap_out_of_tree.sh BUILD_DIR SOURCE_DIR}
cmake=${3:-cmake}
ctest=${4:-ctest}
work=$(mktemp -d /tmp/radial-bwrap-oot-XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "== cmake --install $build --prefix $work/prefix --component dev"
"$cmake" --install "$build" --prefix "$work/prefix" --component dev > "$work/install.log"
test -x "$work/prefix/bin/radial-conformance"
test -f "$work/prefix/lib/cmake/RadialPluginApi/RadialPluginApiConfig.cmake"
test -f "$work/prefix/lib/pkgconfig/radial-plugin-api.pc"
echo "== configure $source/examples/bubblewrap against $work/prefix only"
generator=
command -v ninja >/dev/null 2>&1 && generator="-G Ninja"
# shellcheck disable=SC2086
"$cmake" -S "$source/examples/bubblewrap" -B "$work/build" $generator -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
echo "== build"
"$cmake" --build "$work/build" -j 2
echo "== ctest"
"$ctest" --test-dir "$work/build" --output-on-failure
