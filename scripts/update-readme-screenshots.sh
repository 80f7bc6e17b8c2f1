#!/usr/bin/env bash
# `npm run screenshots`: regenerates the three README screenshots from the e2e run (scripts/test-e2e.sh:
# code-server + chromium, the demo agent) and copies them to docs/images/, where README.md shows them:
#   keep-or-rollback.png -> docs/images/snapshot-and-run.png   (Snapshot & run: Keep / Roll back / Compare)
#   agent-view.png       -> docs/images/agent-view.png         (the Agent view: restore points and memory)
#   memory-detail.png    -> docs/images/memory-inspector.png   (the memory inspector: findings, provenance)
# With ImageMagick installed (apt-get install imagemagick) the copies are reduced to 256 colours (about
# a third of the size, no visible change for these UI shots); without it they are copied as they are.
# Usage: scripts/update-readme-screenshots.sh [--reuse]   (--reuse: take the PNGs of the last e2e run in
# test-results/screenshots/, or $SHOTS, instead of running it again)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
SHOTS="${SHOTS:-test-results/screenshots}"
OUT=docs/images
PAIRS=("keep-or-rollback.png:snapshot-and-run.png" "agent-view.png:agent-view.png" "memory-detail.png:memory-inspector.png")

if [ "${1:-}" != "--reuse" ]; then
  SHOTS="$SHOTS" bash scripts/test-e2e.sh
fi
for p in "${PAIRS[@]}"; do
  if [ ! -s "$SHOTS/${p%%:*}" ]; then
    echo "screenshots: $SHOTS/${p%%:*} is missing: run without --reuse (it runs scripts/test-e2e.sh)" >&2
    exit 1
  fi
done

# the real ImageMagick, not a stand-in of the same name
quantize=0
if command -v convert >/dev/null && convert -version 2>/dev/null | grep -q '^Version: ImageMagick'; then quantize=1; fi
[ "$quantize" = 1 ] || echo "screenshots: ImageMagick not installed: copying the PNGs as they are (apt-get install imagemagick makes them smaller)"

mkdir -p "$OUT"
for p in "${PAIRS[@]}"; do
  src="$SHOTS/${p%%:*}"
  dst="$OUT/${p##*:}"
  if [ "$quantize" = 1 ]; then
    convert "$src" -strip +dither -colors 256 "PNG8:$dst.tmp"
  else
    cp "$src" "$dst.tmp"
  fi
  mv "$dst.tmp" "$dst"
  echo "screenshots: $dst ($(wc -c <"$dst") bytes) from $src"
done
