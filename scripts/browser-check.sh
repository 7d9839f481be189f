#!/usr/bin/env bash
# Opens a rendered trace in headless Chromium and checks that the page drew its diagram:
#   - the page's script marks the root element data-render="ok" only after the first frame
#     was drawn without an exception (an exception marks it "error"), and data-selftest="ok"
#     after driving zoom, pan, hover and a violation's button with synthetic input;
#   - Chromium's log shows no console message at all (the page logs none; an uncaught
#     exception logs "Uncaught …");
#   - a screenshot is written and is a PNG.
# The same for the page of `locksim check --html` (why a history is not linearizable: its
# self-test steps through the linearization with the keyboard and a click) on the shared
# Jepsen/Porcupine histories when they are there, and for the S3 section of the run page
# (every trace of traces/ with an S3 violation has one; its self-test runs after the
# diagram's).
# The same for the page of `locksim sweep --report` (plots and a table; its self-test hovers
# every row of the table).
# Then it checks the check: copies of the page with a deliberately broken script must fail.
#
# Usage: scripts/browser-check.sh [TRACE] [SCREENSHOT.png]
#   TRACE defaults to the Redlock GC-pause double grant of traces/ (and then every other
#   trace there is checked too, without screenshots); the screenshot goes to
#   target/browser-check/page.png unless given. Needs Debian's chromium and a release build
#   of locksim (built if missing). Exit 0 when the page is clean, 1 when it is not.
set -euo pipefail
cd "$(dirname "$0")/.."

TRACE=${1:-traces/k5-pause-redlock-s1-732b5201.json}
OUT=target/browser-check
SHOT=${2:-$OUT/page.png}
mkdir -p "$OUT"
BROWSER=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$BROWSER" ]; then
  echo "browser-check: no chromium on PATH (apt-get install -y chromium)" >&2
  exit 1
fi
LOCKSIM=target/release/locksim
[ -x "$LOCKSIM" ] || cargo build --release -q -p locksim-cli

# check PAGE [SHOT]: 0 when PAGE rendered cleanly (and SHOT, if given, was written).
check() {
  local page=$1 shot=${2:-} profile dom problems=0
  profile=$(mktemp -d)
  local flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
    --disable-background-networking --disable-component-update --disable-sync
    --user-data-dir="$profile" --enable-logging=stderr --v=0
    --window-size=1500,1000 --hide-scrollbars)
  # With the messages on ("#messages"), so every drawing path runs, and the page's self-test
  # ("#selftest": synthetic wheel, drag, hover and button input).
  dom=$("$BROWSER" "${flags[@]}" --dump-dom "file://$PWD/$page#messages,selftest" 2>"$OUT/console.log" || true)
  # The root element's opening tag, not the script's text, must carry the marks.
  local tag
  tag=$(grep -Eo '^<html[^>]*>' <<<"$dom" || echo 'no <html> in the DOM dump')
  if ! grep -Eq ' data-render="ok"' <<<"$tag"; then
    echo "  $page: the page did not mark itself rendered: $tag"
    problems=1
  elif ! grep -Eq ' data-selftest="ok"' <<<"$tag"; then
    echo "  $page: the page's self-test of zoom, pan, hover and focus failed: $tag"
    problems=1
  fi
  if grep -q ':CONSOLE' "$OUT/console.log"; then
    echo "  $page: console messages:"
    grep ':CONSOLE' "$OUT/console.log" | sed 's/^/    /'
    problems=1
  fi
  if [ -n "$shot" ]; then
    rm -f "$shot"
    "$BROWSER" "${flags[@]}" --screenshot="$shot" "file://$PWD/$page" 2>/dev/null >/dev/null || true
    if [ "$(head -c 8 "$shot" 2>/dev/null | od -An -tx1 | tr -d ' \n')" != "89504e470d0a1a0a" ]; then
      echo "  $page: no screenshot"
      problems=1
    fi
  fi
  rm -rf "$profile"
  return $problems
}

"$LOCKSIM" render "$TRACE" -o "$OUT/page.html" >/dev/null 2>"$OUT/render.log" || {
  cat "$OUT/render.log" >&2
  exit 1
}
start=$(date +%s%N)
if check "$OUT/page.html" "$SHOT"; then
  echo "browser-check: $OUT/page.html rendered without errors; screenshot $SHOT ($(( ($(date +%s%N) - start) / 1000000 )) ms for both loads)"
else
  echo "browser-check: FAILED for $OUT/page.html"
  exit 1
fi

# Every trace of the corpus draws cleanly too (no screenshots).
if [ $# -eq 0 ]; then
  failed=0
  for t in traces/*.json; do
    page="$OUT/$(basename "$t" .json).html"
    "$LOCKSIM" render "$t" -o "$page" >/dev/null 2>"$OUT/render.log" || { cat "$OUT/render.log" >&2; failed=1; continue; }
    check "$page" || failed=1
  done
  if [ $failed -ne 0 ]; then
    echo "browser-check: FAILED for a page of traces/"
    exit 1
  fi
  echo "browser-check: the pages of all $(ls traces/*.json | wc -l) traces in traces/ rendered without errors"
fi

# The page of `locksim check --html`, on two failing histories and a passing one.
HIST=${LOCKSIM_HISTORIES:-../shared/data/histories}
if [ -d "$HIST" ]; then
  # Both runs include a history that is not linearizable, so `check` exits 1 (as Jepsen's
  # checker fails); any other code (0: nothing found, 2: bad input, 3: undecided) is an error.
  check_html() {
    local rc=0
    "$LOCKSIM" check "$@" >/dev/null || rc=$?
    if [[ $rc -ne 1 ]]; then
      echo "browser-check: locksim check $* exited $rc, expected 1 (not linearizable)"
      exit 1
    fi
  }
  check_html --model etcd --html "$OUT/check.html" --force "$HIST/etcd/etcd_001.log" \
    "$HIST/etcd/etcd_007.log"
  check_html --model kv --html "$OUT/check-kv.html" --force "$HIST/kv/c10-bad.txt"
  for page in "$OUT/check.html" "$OUT/check-kv.html"; do
    if ! check "$page" "${page%.html}.png"; then
      echo "browser-check: FAILED for $page"
      exit 1
    fi
  done
  echo "browser-check: the pages of locksim check --html rendered without errors; screenshots $OUT/check.png, $OUT/check-kv.png"
  # A broken step function must be caught by the page's self-test.
  sed 's/View.prototype.go = function (s) {/View.prototype.go = function (s) { return;/' \
    "$OUT/check.html" >"$OUT/broken-check.html"
  if cmp -s "$OUT/check.html" "$OUT/broken-check.html"; then
    echo "browser-check: could not break the check page (the script changed?)"
    exit 1
  fi
  if check "$OUT/broken-check.html" >"$OUT/broken-check.log"; then
    echo "browser-check: FAILED: a broken check page passed the check"
    exit 1
  fi
  echo "browser-check: a broken check page is caught:"
  sed 's/^/  /' "$OUT/broken-check.log"
else
  echo "browser-check: $HIST is missing: the page of locksim check --html is not checked"
fi

# The S3 section of a run page: a broken step function there must be caught too.
S3TRACE=$(ls traces/*-s3-*.json | sed -n 1p)
"$LOCKSIM" render "$S3TRACE" -o "$OUT/s3.html" >/dev/null 2>"$OUT/render.log" || { cat "$OUT/render.log" >&2; exit 1; }
check "$OUT/s3.html" "$OUT/s3.png" || { echo "browser-check: FAILED for $OUT/s3.html"; exit 1; }
sed 's/View.prototype.go = function (s) {/View.prototype.go = function (s) { return;/' \
  "$OUT/s3.html" >"$OUT/broken-s3.html"
if cmp -s "$OUT/s3.html" "$OUT/broken-s3.html" || check "$OUT/broken-s3.html" >"$OUT/broken-s3.log"; then
  echo "browser-check: FAILED: a run page with a broken S3 section passed the check"
  exit 1
fi
echo "browser-check: $S3TRACE's S3 section rendered (screenshot $OUT/s3.png), and a broken one is caught:"
sed 's/^/  /' "$OUT/broken-s3.log"

# The page of `locksim sweep --report`: plots (inline SVG) and a table whose hover read-out
# the self-test drives; a copy whose hover does nothing must fail.
rm -rf "$OUT/sweep.html" "$OUT/sweep-files"
"$LOCKSIM" sweep --algo redlock,central-fencing --faults pause --vary pause_max=100ms..3s:4 \
  --set ttl=1s --seeds 20 --report "$OUT/sweep.html" >/dev/null 2>"$OUT/sweep.log" || { cat "$OUT/sweep.log" >&2; exit 1; }
check "$OUT/sweep.html" "$OUT/sweep.png" || { echo "browser-check: FAILED for $OUT/sweep.html"; exit 1; }
sed "s/row.classList.add('hover');/;/" "$OUT/sweep.html" >"$OUT/broken-sweep.html"
if cmp -s "$OUT/sweep.html" "$OUT/broken-sweep.html" || check "$OUT/broken-sweep.html" >"$OUT/broken-sweep.log"; then
  echo "browser-check: FAILED: a sweep page with a broken hover passed the check"
  exit 1
fi
echo "browser-check: the sweep page rendered (screenshot $OUT/sweep.png), and a broken one is caught:"
sed 's/^/  /' "$OUT/broken-sweep.log"

# The check must see a broken page: (1) a call to a function that does not exist, (2) a
# hover that finds nothing (no exception; the self-test must notice).
n=0
for breakage in 's/function draw() {/function draw() { callToAFunctionThatDoesNotExist();/' \
  's/function hit(x, yy) {/function hit(x, yy) { return null;/'; do
  n=$((n + 1))
  sed "$breakage" "$OUT/page.html" >"$OUT/broken$n.html"
  if cmp -s "$OUT/page.html" "$OUT/broken$n.html"; then
    echo "browser-check: could not break the page with '$breakage' (the script changed?)"
    exit 1
  fi
  if check "$OUT/broken$n.html" >"$OUT/broken$n.log"; then
    echo "browser-check: FAILED: a broken page passed the check ($breakage)"
    exit 1
  fi
  echo "browser-check: a broken page is caught ($breakage):"
  sed 's/^/  /' "$OUT/broken$n.log"
done
