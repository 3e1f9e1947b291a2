#!/usr/bin/env bash
# Runs Tessel's libFuzzer targets: fuzz/run.sh FUZZ_BUILD_DIR SECONDS [TARGET...]
# (targets: parse simplify fusion lower schedule_json runtime job_row entry; default all). Each runs SECONDS on
# its growing corpus in FUZZ_BUILD_DIR/corpus/TARGET, seeded from the checked-in corpus
# fuzz/corpus/ (tsl/ for the four TSL targets; it grows with `make fuzz-corpus`), the seeds
# (fuzz/seeds for the TSL targets, fuzz/seeds_TARGET for the others) and the regression
# reproducers in tests/fuzz/reproducers/{tsl,TARGET} (so a reproducer that crashes again fails at once).
# Crashes are written to FUZZ_BUILD_DIR/artifacts/. Waits while /tmp/tessel-bench.lock exists
# (someone benchmarks).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=$(cd "$1" && pwd)
seconds=$2
shift 2
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(parse simplify fusion lower schedule_json runtime job_row entry)
mkdir -p "$build/artifacts"
for t in "${targets[@]}"; do
  while [ -e /tmp/tessel-bench.lock ]; do
    echo "fuzz: /tmp/tessel-bench.lock exists (a benchmark is running); waiting" >&2
    sleep 30
  done
  corpus="$build/corpus/$t"
  mkdir -p "$corpus"
  inputs=()
  [ -d "$here/corpus/$t" ] && inputs+=("$here/corpus/$t")
  case $t in
    parse|simplify|fusion|lower)
      inputs+=("$here/corpus/tsl" "$here/seeds" "$root/tests/fuzz/reproducers/tsl"); dict=(-dict="$here/tsl.dict") ;;
    schedule_json|job_row) inputs+=("$here/seeds_$t"); dict=(-dict="$here/json.dict") ;;
    *) dict=() ;;
  esac
  [ -d "$root/tests/fuzz/reproducers/$t" ] && inputs+=("$root/tests/fuzz/reproducers/$t")
  echo "fuzz: $t for ${seconds}s (corpus $corpus)" >&2
  "$build/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
    "${dict[@]}" -artifact_prefix="$build/artifacts/$t-" -print_final_stats=1 \
    "$corpus" "${inputs[@]}"
done
