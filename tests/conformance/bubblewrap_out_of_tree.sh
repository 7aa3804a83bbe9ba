#!/bin/sh
# tests/conformance/bubblewrap_out_of_tree.sh BUILD_DIR SOURCE_DIR [CMAKE CTEST] — the bubblewrap runtime
# built exactly as a third party builds a plugin (docs/design.md §5.11): install radial's developer package
# from BUILD_DIR into a temporary prefix, configure the copy of examples/bubblewrap that it
# installs (share/radial-plugin-api/examples/bubblewrap) as a separate CMake project against that
# prefix, build it and run its CTest tests (the conformance run).
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
# The run support the example links, and the archive the pkg-config file names for it.
test -f "$work/prefix/include/radial/support/run_pump.h"
test -f "$work/prefix/lib/libradial-run-support.a"
run_support=$(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --variable=run_support_libs radial-plugin-api)
test -f "${run_support%% *}" || { echo "radial-plugin-api.pc names '$run_support'" >&2; exit 1; }
# The plugin side only: radiald's own client of the ABI (radial::host) is not public API.
if [ -e "$work/prefix/include/radial/host" ]; then
    echo "the dev component installs include/radial/host/, radiald's private ABI client" >&2
    exit 1
fi
# The harness's messages carry no path of the machine it was built on (its debug information
# does, and is stripped from what is shipped: look at the rest).
objcopy --strip-debug "$work/prefix/bin/radial-conformance" "$work/harness-nodebug"
for path in "$(cd "$build" && pwd -P)" "$(cd "$source" && pwd -P)"; do
    if grep -qaF "$path" "$work/harness-nodebug"; then
        echo "the installed radial-conformance contains the build machine's path '$path'" >&2
        exit 1
    fi
done
# The copy the package ships, not the source tree's: what an author starts from.
example="$work/prefix/share/radial-plugin-api/examples/bubblewrap"
test -f "$example/CMakeLists.txt"
test -x "$example/make-rootfs.sh"
echo "== configure $example against $work/prefix only"
generator=
command -v ninja >/dev/null 2>&1 && generator="-G Ninja"
# shellcheck disable=SC2086
"$cmake" -S "$example" -B "$work/build" $generator -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
echo "== build"
"$cmake" --build "$work/build" -j 2
echo "== ctest"
"$ctest" --test-dir "$work/build" --output-on-failure
