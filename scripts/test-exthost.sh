#!/usr/bin/env bash
# Extension-host integration tests in code-server: build, install the host if needed, run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
node esbuild.mjs
bash scripts/setup-host.sh --with-chromium
exec npx tsx scripts/test-exthost.ts
