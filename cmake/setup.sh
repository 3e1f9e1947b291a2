#!/usr/bin/env bash
# Installs what Tessel needs and is missing: Debian packages (cmake/apt-packages.txt) and the
# project-local .venv with the pinned Halide, CMake and Ninja (cmake/requirements.txt).
# Idempotent and fast when nothing changed: a stamp records the hash of both lists.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
stamp="$venv/.tessel-setup-stamp"
want=$(cat "$root/cmake/apt-packages.txt" "$root/cmake/requirements.txt" | sha256sum | cut -d' ' -f1)

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/cmake" ]; then
  exit 0
fi

pkgs=$(grep -v '^#' "$root/cmake/apt-packages.txt" | grep -v '^$')
missing=()
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "tessel setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null || {
    $sudo_cmd apt-get update -q >/dev/null
    $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
  }
fi

if [ ! -x "$venv/bin/python" ]; then
  echo "tessel setup: creating $venv"
  python3 -m venv "$venv"
fi
echo "tessel setup: installing pinned Python toolchain (Halide, CMake, Ninja)"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$root/cmake/requirements.txt"
echo "$want" > "$stamp"
