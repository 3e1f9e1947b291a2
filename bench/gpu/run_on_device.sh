#!/bin/bash
# Runs the prebuilt GPU benchmark on the GPU machine. Usage (from the repository root there):
#   bash build-cuda/bench/gpu/dist/run_on_device.sh [--repeats N] [--schedule NAME]
# The binary needs the driver's libcuda and loads libcublas with dlopen: this script finds a
# libcublas (the CUDA toolkit's, or the one PyTorch's pip package carries) and puts it on
# LD_LIBRARY_PATH. Output goes to stdout and, when $OUT is set, to $OUT/gpu_bench.txt.
set -u
here=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv 2>&1 | head -3
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
         $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, "cublas", "lib") for p in nvidia.__path__))' 2>/dev/null) \
         $(find / -xdev -name 'libcublas.so.1[23]' -printf '%h\n' 2>/dev/null | head -3); do
  if ls "$d"/libcublas.so.1[23] >/dev/null 2>&1; then export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; echo "cuBLAS from $d"; break; fi
done
log=${OUT:-/tmp}/gpu_bench.txt
"$here/tessel_gpu_bench" "$@" 2>&1 | tee "$log"
exit "${PIPESTATUS[0]}"
