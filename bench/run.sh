#!/bin/sh
# Runs tessel_bench with OpenBLAS at its best: its OpenMP build (Debian libopenblas0-openmp),
# so its threads and the OpenMP bias+GELU pass share one pool, and no core-type or L2 size
# override, so it picks its own kernel. Only the benchmark process sees these changes.
# Usage: bench/run.sh BUILD_DIR [tessel_bench arguments...]
build=${1:?usage: bench/run.sh BUILD_DIR [args...]}
shift
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
openmp_dir=/usr/lib/x86_64-linux-gnu/openblas-openmp
if [ -e "$openmp_dir/libopenblas.so.0" ]; then
    LD_LIBRARY_PATH="$openmp_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export LD_LIBRARY_PATH
else
    echo "bench/run.sh: $openmp_dir not found; OpenBLAS will be the default (pthread) build" >&2
fi
exec "$build/bench/tessel_bench" "$@"
