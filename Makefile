# Thin wrapper: every target first runs the idempotent set-up, then CMake/Ninja from .venv.
BUILD ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
VENV := .venv
CMAKE := $(VENV)/bin/cmake
CTEST := $(VENV)/bin/ctest

BUILD_ASAN ?= build-asan
# Extra CMake options for the first configure, e.g. CMAKE_ARGS=-DTESSEL_WERROR=ON (what CI sets).
CMAKE_ARGS ?=

.PHONY: all setup configure build demo check format test test-asan bench bench-memory bench-peers install fuzz fuzz-corpus soak clean

all: build

setup:
	@./cmake/setup.sh

$(BUILD)/build.ninja: CMakeLists.txt | setup
	@$(CMAKE) -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DCMAKE_MAKE_PROGRAM=$(abspath $(VENV)/bin/ninja) \
	  -DHalide_DIR=$$(./cmake/halide-prefix.sh) $(CMAKE_ARGS) >/dev/null

configure: setup $(BUILD)/build.ninja

build: configure
	@$(CMAKE) --build $(BUILD) -j $(JOBS)

demo: build
	@$(BUILD)/apps/tessel demo

# The unit tier: quick tests of one concept each (under 3 minutes after a build).
check: build
	@$(CTEST) --test-dir $(BUILD) --output-on-failure -j $(JOBS) -L unit

# The tree's C and C++ in .clang-format's style.
format:
	@git ls-files '*.c' '*.cpp' '*.h' | xargs clang-format -i

# Everything CI runs: the unit and integration tiers and the fuzz smoke runs (not perf, not the
# long soak).
test: build
	@$(CTEST) --test-dir $(BUILD) --output-on-failure -j $(JOBS) -LE 'perf|soak'

# The long soak: 10^6 calls of a generated library from two threads, 10^5 JIT calls (tests/soak).
soak: build
	@$(CTEST) --test-dir $(BUILD) --output-on-failure -L soak

# The suite under AddressSanitizer and UBSan, in a build folder of its own. Tessel's code (the
# libraries, the tessel and tessel-measure programs, the tests) is instrumented; Halide's library
# and the kernels it JIT-compiles are not. Leak checking is off: LLVM's JIT keeps its code alive.
# The fuzz targets are left out (they are ASan/UBSan builds already); measuring children run
# without their address-space limit (ASan's shadow memory needs terabytes of address space).
test-asan: setup
	@$(CMAKE) -S . -B $(BUILD_ASAN) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DTESSEL_SANITIZE=address,undefined -DTESSEL_FUZZ=OFF \
	  -DCMAKE_MAKE_PROGRAM=$(abspath $(VENV)/bin/ninja) \
	  -DHalide_DIR=$$(./cmake/halide-prefix.sh) >/dev/null
	@$(CMAKE) --build $(BUILD_ASAN) -j $(JOBS)
	@ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  $(CTEST) --test-dir $(BUILD_ASAN) --output-on-failure -j $(JOBS) -LE 'perf|fuzz'

# libFuzzer campaign: every target for FUZZ_SECONDS each (fuzz/README.md).
FUZZ_SECONDS ?= 60
fuzz: build
	@./fuzz/run.sh $(BUILD)/fuzz $(FUZZ_SECONDS)

# Keeps what a fuzzing run found that adds coverage in fuzz/corpus/ (commit it: the smoke in
# `make test` replays it).
fuzz-corpus:
	@./fuzz/merge_corpus.sh $(BUILD)/fuzz

bench: build
	@./bench/run.sh $(BUILD) $(BENCH_ARGS)

# Memory plans, rematerialization (attention fwd+bwd at S = 512..4096) and concurrent waves.
bench-memory: build
	@env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(BUILD)/bench/tessel_memory_bench $(BENCH_ARGS)

# Tessel and OpenBLAS beside torch eager, torch.compile (max-autotune), jax.jit and numpy on the
# suite shapes, alternated in the same rounds and checked against float64 (bench/peers/README.md).
# Installs PyTorch, JAX and numpy into .venv-peers first (several GB). Never part of `make test`.
# Then attention (bench/attention_shapes.txt) against torch SDPA and jax dot_product_attention,
# and the transformer block (bench/block_shapes.txt) against torch eager, torch.compile and jax.jit.
bench-peers: build
	@./bench/peers/setup.sh
	@.venv-peers/bin/python bench/peers/run_peers.py --build $(BUILD) $(BENCH_ARGS)
	@.venv-peers/bin/python bench/peers/attention_peers.py --build $(BUILD) $(ATTENTION_ARGS)
	@.venv-peers/bin/python bench/peers/attention_peers.py --build $(BUILD) --train $(ATTENTION_ARGS)
	@.venv-peers/bin/python bench/peers/block_peers.py --build $(BUILD) $(BLOCK_ARGS)

# The tessel command and the CMake package (find_package(Tessel), tessel_add_kernel_library).
PREFIX ?= $(HOME)/.local
install: build
	@$(CMAKE) --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
