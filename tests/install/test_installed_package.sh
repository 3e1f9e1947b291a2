#!/bin/sh
# Installs Tessel from BUILD_DIR into a fresh prefix, then configures, builds and runs
# examples/gelu_consumer and examples/small_model against that prefix in clean directories:
# find_package(Tessel) and tessel_add_kernel_library as another project uses them.
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
out=$("$work/consumer/gelu_consumer")
echo "$out"
# The consumer calls at M = 3: the variant serving it must be the one the build's plan states.
plan="$work/consumer/tessel_gelu_layer/gelu_layer.plan.txt"
expected=$(sed -n 's/^dispatch at K=17 M=3: \(.*\);$/\1/p' "$plan")
if [ -z "$expected" ]; then
  echo "no dispatch for K=17 M=3 in $plan" >&2
  cat "$plan" >&2
  exit 1
fi
case "$out" in
  *"$expected ["*) ;;
  *) echo "the library dispatched otherwise than its plan says ($expected)" >&2; exit 1 ;;
esac
if ldd "$work/consumer/gelu_consumer" | grep -qi halide; then
  echo "gelu_consumer links libHalide; it must not" >&2
  exit 1
fi

# The small model: prompt and decode loop over KV caches in its own memory, checked against its
# plain C++ reference (the program's exit code).
"$cmake" -S "$source/examples/small_model" -B "$work/model" -G Ninja \
  -DCMAKE_MAKE_PROGRAM="$ninja" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release \
  -DTessel_DIR="$work/prefix/lib/cmake/Tessel" >/dev/null
"$cmake" --build "$work/model" >/dev/null
"$work/model/small_model"
