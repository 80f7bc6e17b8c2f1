#!/usr/bin/env bash
# End-to-end screenshots in code-server + chromium: build, install the host if needed, run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
node esbuild.mjs
bash scripts/setup-host.sh --with-chromium
exec npx tsx scripts/test-e2e.ts
