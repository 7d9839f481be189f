#!/usr/bin/env bash
# Opens a rendered trace in headless Chromium and checks that the page drew its diagram:
#   - the page's script marks the root element data-render="ok" only after the first frame
#     was drawn without an exception (an exception marks it "error");
#   - Chromium's log shows no console message at all (the page logs none; an uncaught
#     exception logs "Uncaught …");
#   - a screenshot is written and is a PNG.
# Then it checks the check: a copy of the page with a deliberately broken script must fail.
#
# Usage: scripts/browser-check.sh [TRACE] [SCREENSHOT.png]
#   TRACE defaults to the Redlock GC-pause double grant of traces/; the screenshot goes to
#   target/browser-check/page.png unless given. Needs Debian's chromium and a release build
#   of locksim (built if missing). Exit 0 when the page is clean, 1 when it is not.
set -euo pipefail
cd "$(dirname "$0")/.."

TRACE=${1:-traces/k5-pause-redlock-s1-c29d6548.json}
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

# check PAGE SHOT: 0 when PAGE rendered cleanly and SHOT was written.
check() {
  local page=$1 shot=$2 profile dom problems=0
  profile=$(mktemp -d)
  local flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
    --disable-background-networking --disable-component-update --disable-sync
    --user-data-dir="$profile" --enable-logging=stderr --v=0
    --window-size=1500,1000 --hide-scrollbars)
  # With the messages on ("#messages"), so every drawing path runs.
  dom=$("$BROWSER" "${flags[@]}" --dump-dom "file://$PWD/$page#messages" 2>"$OUT/console.log" || true)
  # The root element's opening tag, not the script's text, must carry the mark.
  if ! grep -Eq '^<html[^>]* data-render="ok"' <<<"$dom"; then
    echo "  $page: the page did not mark itself rendered: $(grep -Eo '^<html[^>]*>' <<<"$dom" || echo 'no <html> in the DOM dump')"
    problems=1
  fi
  if grep -q ':CONSOLE' "$OUT/console.log"; then
    echo "  $page: console messages:"
    grep ':CONSOLE' "$OUT/console.log" | sed 's/^/    /'
    problems=1
  fi
  rm -f "$shot"
  "$BROWSER" "${flags[@]}" --screenshot="$shot" "file://$PWD/$page" 2>/dev/null >/dev/null || true
  if [ "$(head -c 8 "$shot" 2>/dev/null | od -An -tx1 | tr -d ' \n')" != "89504e470d0a1a0a" ]; then
    echo "  $page: no screenshot"
    problems=1
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

# The check must see a broken script: inject a call to a function that does not exist.
sed 's/function draw() {/function draw() { callToAFunctionThatDoesNotExist();/' \
  "$OUT/page.html" >"$OUT/broken.html"
grep -q callToAFunctionThatDoesNotExist "$OUT/broken.html" || {
  echo "browser-check: could not break the page's script (the draw function was renamed?)"
  exit 1
}
if check "$OUT/broken.html" "$OUT/broken.png" >"$OUT/broken.log"; then
  echo "browser-check: FAILED: a page with a broken script passed the check"
  exit 1
fi
echo "browser-check: a page with a broken script is caught:"
sed 's/^/  /' "$OUT/broken.log"
