#!/usr/bin/env bash
# Grows the checked-in corpus (fuzz/corpus/) from a fuzzing run's corpora:
#   fuzz/merge_corpus.sh FUZZ_BUILD_DIR        (make fuzz-corpus)
# libFuzzer's -merge=1 keeps only the inputs that add coverage to what fuzz/corpus already has.
# The four TSL targets share fuzz/corpus/tsl, merged under fuzz_lower (which runs the parser,
# the passes, fusion and the lowering, so it sees every one's coverage); the other targets keep
# a corpus each. Commit the new files: `make test`'s fuzz smoke replays them first.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
mkdir -p "$here/corpus/tsl"
runs=()
for t in lower fusion simplify parse; do [ -d "$build/corpus/$t" ] && runs+=("$build/corpus/$t"); done
[ ${#runs[@]} -gt 0 ] && "$build/fuzz_lower" -merge=1 -max_len=4096 -timeout=10 -rss_limit_mb=2048 "$here/corpus/tsl" "${runs[@]}"
for t in schedule_json runtime job_row entry; do
  [ -d "$build/corpus/$t" ] || continue
  mkdir -p "$here/corpus/$t"
  "$build/fuzz_$t" -merge=1 -max_len=4096 -timeout=10 "$here/corpus/$t" "$build/corpus/$t"
done
