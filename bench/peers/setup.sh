#!/usr/bin/env bash
# Creates .venv-peers (PyTorch, JAX on CPU, numpy from bench/peers/requirements.txt) for
# `make bench-peers`. Idempotent: a stamp records the hash of the list, so a second run with
# nothing changed returns at once. A failed install leaves no stamp, and the benchmark then
# reports the missing peer in its rows instead of timing it.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv="$root/.venv-peers"
reqs="$root/bench/peers/requirements.txt"
stamp="$venv/.tessel-peers-stamp"
want=$(sha256sum "$reqs" | cut -d' ' -f1)

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/python" ]; then
  exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
  echo "bench-peers setup: creating $venv"
  python3 -m venv "$venv"
fi
echo "bench-peers setup: installing $(grep -v '^#' "$reqs" | xargs) (torch's wheel is large; minutes)"
start=$(date +%s)
if "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$reqs"; then
  echo "$want" > "$stamp"
  echo "bench-peers setup: done in $(( $(date +%s) - start )) s"
else
  echo "bench-peers setup: pip failed; the peers that did not install are reported as such" >&2
fi
