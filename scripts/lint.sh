#!/usr/bin/env bash
# `npm run lint`: the typecheck (tsc), ESLint (eslint.config.mjs: typescript-eslint, the layer rules),
# the import cycle check (scripts/check-import-cycles.ts) and Prettier's format check (.prettierrc.json;
# `npm run format` fixes it). Runs every step even when one fails, so one run shows every problem;
# exits non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
failed=()
step() { # name, command...
  local name=$1; shift
  echo "--- $name: $*"
  "$@" || failed+=("$name")
}
step tsc npx tsc -p . --noEmit
step eslint npx eslint .
step cycles npx tsx scripts/check-import-cycles.ts
step prettier npx prettier --check --log-level warn .
if [ ${#failed[@]} -gt 0 ]; then
  echo "lint: failed: ${failed[*]}"
  exit 1
fi
echo "lint: tsc, eslint, cycles and prettier are clean"
