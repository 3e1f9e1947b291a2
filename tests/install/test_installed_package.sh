#!/bin/sh
# Installs Tessel from BUILD_DIR into a fresh prefix, then configures, builds and runs
# examples/gelu_consumer against that prefix in a clean directory: find_package(Tessel) and
# tessel_add_kernel_library as another project uses them.
# Usage: test_installed_package.sh CMAKE NINJA CXX SOURCE_DIR BUILD_DIR
set -eu
cmake=$1 ninja=$2 cxx=$3 source=$4 build=$5
work=$(mktemp -d "${TMPDIR:-/tmp}/tessel-install-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$cmake" --install "$build" --prefix "$work/prefix" >/dev/null
"$cmake" -S "$source/examples/gelu_consumer" -B "$work/consumer" -G Ninja \
  -DCMAKE_MAKE_PROGRAM="$ninja" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release \
  -DTessel_DIR="$work/prefix/lib/cmake/Tessel" >/dev/null
"$cmake" --build "$work/consumer" >/dev/null
"$work/consumer/gelu_consumer"
if ldd "$work/consumer/gelu_consumer" | grep -qi halide; then
  echo "gelu_consumer links libHalide; it must not" >&2
  exit 1
fi
