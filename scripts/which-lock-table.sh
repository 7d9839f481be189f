#!/usr/bin/env bash
# Regenerates the "which lock should I use" table of the docs book (docs/which-lock.md) from one
# campaign over every registered algorithm: the text between the `which-lock` markers in that
# page is replaced by the output of `locksim campaign --all-algorithms --markdown` (nothing is
# typed by hand).
#
#   scripts/which-lock-table.sh [LOCKSIM] [SEEDS]
#
# LOCKSIM: the locksim binary (default target/release/locksim, built if missing);
# SEEDS: seeds per cell (default 300, as the default campaign). Exits non-zero, leaving
# docs/which-lock.md untouched, when the campaign fails or the markers are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-target/release/locksim}"
seeds="${2:-300}"
page=docs/which-lock.md
if [ ! -x "$bin" ]; then
  cargo build --release -p locksim-cli
fi
grep -q '^<!-- which-lock:begin' "$page" && grep -q '^<!-- which-lock:end' "$page" || {
  echo "error: $page lacks the <!-- which-lock:begin --> / <!-- which-lock:end --> markers" >&2
  exit 2
}
table="$(mktemp)"
trap 'rm -f "$table" "$table.page"' EXIT
"$bin" campaign --all-algorithms --seeds "$seeds" --markdown >"$table"
awk -v table="$table" '
  /^<!-- which-lock:begin/ { print; while ((getline line < table) > 0) print line; skip = 1; next }
  /^<!-- which-lock:end/ { skip = 0 }
  !skip { print }
' "$page" >"$table.page"
mv "$table.page" "$page"
echo "$page: which-lock table regenerated ($seeds seeds per cell)" >&2
