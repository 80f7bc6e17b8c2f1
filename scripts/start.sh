#!/usr/bin/env bash
# `npm start`: build, install the code-server host on first use, then run scripts/start.ts
# (demo agent under .demo/, code-server on 127.0.0.1:${PORT:-8080}, prints the URL; Ctrl+C stops).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
node esbuild.mjs
bash scripts/setup-host.sh
exec npx tsx scripts/start.ts
