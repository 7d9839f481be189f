#!/usr/bin/env bash
# Installs the pinned libraries of locksim's shipped adapters into DIR:
#   DIR/python             (PYTHONPATH for the Python adapters), from adapters/requirements.txt
#   DIR/node/node_modules  (NODE_PATH for the Node.js adapters), from adapters/node/package-lock.json
#   DIR/rust/bin/NAME      (the Rust adapters, built from adapters/NAME/Cargo.lock with --locked)
# Usage: scripts/install-adapters.sh DIR     (locksim's default DIR: target/adapters)
# Idempotent: DIR/.stamp holds a hash of the pins and of the interpreters' versions; when it
# matches, nothing is done.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
adapters="$(cd "$(dirname "$0")/../adapters" && pwd)"
mkdir -p "$1"
dir="$(cd "$1" && pwd)"

hash="$( { cat "$adapters/requirements.txt" "$adapters/node/package.json" \
              "$adapters/node/package-lock.json"
           cat "$adapters"/redlock-rs/Cargo.toml "$adapters"/redlock-rs/Cargo.lock \
               "$adapters"/redlock-rs/src/*.rs
           python3 -c 'import sys; print(sys.version)'
           node --version; cargo --version; } | sha256sum | cut -d' ' -f1)"
if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$hash" ]; then
    echo "adapter libraries already installed in $dir"
    exit 0
fi
rm -f "$dir/.stamp"

echo "installing the Python adapters' libraries into $dir/python" >&2
rm -rf "$dir/python"
PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
    python3 -m pip install --quiet --target "$dir/python" -r "$adapters/requirements.txt"

echo "installing the Node.js adapters' libraries into $dir/node" >&2
mkdir -p "$dir/node"
cp "$adapters/node/package.json" "$adapters/node/package-lock.json" "$dir/node/"
npm ci --prefix "$dir/node" --silent --no-audit --no-fund

echo "building the Rust adapters into $dir/rust/bin" >&2
mkdir -p "$dir/rust/bin"
for name in redlock-rs; do
    cargo build --quiet --release --locked --manifest-path "$adapters/$name/Cargo.toml" \
        --target-dir "$dir/rust/target"
    cp "$dir/rust/target/release/locksim-adapter-$name" "$dir/rust/bin/$name"
done

echo "$hash" > "$dir/.stamp"
echo "adapter libraries installed in $dir"
