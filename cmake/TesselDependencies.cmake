# Finds Tessel's dependencies. Halide comes from the pinned PyPI wheel in .venv (Makefile passes
# Halide_DIR); the rest from Debian packages installed by cmake/setup.sh.
find_package(Halide 21 REQUIRED)
find_package(doctest REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED)
# libcrypto: SHA-256 of kernel-cache objects (codegen/KernelCache.h).
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
# libpq (Debian's libpq-dev): the tuning database and job queue on a PostgreSQL server
# (autoscheduler/PgConnection.h). The server itself is only needed by the tests (postgresql).
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBPQ REQUIRED IMPORTED_TARGET libpq)

# OpenBLAS is only a baseline and test oracle: never linked into generated kernels.
find_library(TESSEL_OPENBLAS openblas REQUIRED)
find_path(TESSEL_CBLAS_INCLUDE cblas.h PATH_SUFFIXES openblas REQUIRED)

# The CUDA toolkit is optional: it only provides ptxas to assemble and inspect generated PTX.
find_program(TESSEL_PTXAS ptxas HINTS /usr/local/cuda/bin ENV CUDA_HOME PATH_SUFFIXES bin)
if(TESSEL_PTXAS)
  message(STATUS "Tessel: CUDA checks enabled (ptxas: ${TESSEL_PTXAS})")
else()
  message(STATUS "Tessel: ptxas not found; CUDA PTX checks will be skipped")
  set(TESSEL_PTXAS "")
endif()
