#!/bin/sh
# tests/conformance/guide_example_out_of_tree.sh BUILD_DIR SOURCE_DIR IMAGE [CMAKE CTEST] — the
# example plugin of docs/plugin-authors.md, taken from the page as written (extract_guide_example.sh),
# built as its reader builds it: against radial's developer package installed from BUILD_DIR into
# a temporary prefix, then its own CTest test, the conformance run against the Docker Engine with
# the local IMAGE (docs/design.md §5.11).
set -eu
build=${1:?usage: guide_example_out_of_tree.sh BUILD_DIR SOURCE_DIR IMAGE [CMAKE CTEST]}
source=${2:?usage: guide_example_out_of_tree.sh BUILD_DIR SOURCE_DIR IMAGE [CMAKE CTEST]}
image=${3:?usage: guide_example_out_of_tree.sh BUILD_DIR SOURCE_DIR IMAGE [CMAKE CTEST]}
cmake=${4:-cmake}
ctest=${5:-ctest}
work=$(mktemp -d /tmp/radial-guide-example-XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "== cmake --install $build --prefix $work/prefix --component dev"
"$cmake" --install "$build" --prefix "$work/prefix" --component dev > "$work/install.log"
echo "== extract the example from $source/docs/plugin-authors.md"
"$source/tests/conformance/extract_guide_example.sh" "$source/docs/plugin-authors.md" "$work/myrt"
test -f "$work/myrt/CMakeLists.txt"
echo "== configure against $work/prefix only"
generator=
command -v ninja >/dev/null 2>&1 && generator="-G Ninja"
# shellcheck disable=SC2086
"$cmake" -S "$work/myrt" -B "$work/build" $generator -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
      -DMYRT_TEST_IMAGE="$image"
echo "== build"
"$cmake" --build "$work/build" -j 2
echo "== ctest"
start=$(date +%s)
"$ctest" --test-dir "$work/build" --output-on-failure
echo "== the conformance run took $(( $(date +%s) - start )) s"
