#!/usr/bin/env bash
# Installs the pinned libraries of the shipped adapters (adapters/, docs/adapters.md) into DIR,
# nothing global: DIR/python (pip --target, from adapters/requirements.txt) and DIR/node
# (npm ci, from adapters/node/package*.json). `locksim real` looks in target/adapters by
# default (or --adapter-libs DIR, or LOCKSIM_ADAPTER_LIBS). A second run with the same pins is
# quick: a stamp of the pins' hash skips it.
#
#   scripts/install-adapters.sh target/adapters
set -euo pipefail
dir=${1:?usage: scripts/install-adapters.sh DIR}
src="$(cd "$(dirname "$0")/../adapters" && pwd)"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
stamp="$dir/.pins"
pins=$({ cat "$src/requirements.txt" "$src/node/package.json"; cat "$src/node/package-lock.json" 2>/dev/null || true; } | sha256sum | cut -d' ' -f1)
if [[ -f $stamp && $(cat "$stamp") == "$pins" && -d $dir/python && -d $dir/node ]]; then
  echo "adapter libraries in $dir are up to date"
  exit 0
fi
rm -rf "$dir/python" "$dir/node"
python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
  --target "$dir/python" -r "$src/requirements.txt"
mkdir -p "$dir/node"
cp "$src/node/package.json" "$dir/node/"
if [[ -f $src/node/package-lock.json ]]; then
  cp "$src/node/package-lock.json" "$dir/node/"
  npm ci --prefix "$dir/node" --silent --no-audit --no-fund
else
  npm install --prefix "$dir/node" --silent --no-audit --no-fund
fi
mkdir -p "$dir/node/node_modules"
echo "$pins" > "$stamp"
echo "adapter libraries installed in $dir"
