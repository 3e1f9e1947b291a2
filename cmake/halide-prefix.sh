#!/usr/bin/env bash
# Prints the directory holding HalideConfig.cmake inside the project's .venv.
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/.venv/bin/python" -c 'import halide, os; print(os.path.join(os.path.dirname(halide.__file__), "lib64", "cmake", "Halide"))'
