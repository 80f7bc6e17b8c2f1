#!/usr/bin/env bash
# Fetch Debian's qemu-guest-agent (the real qemu-ga) into a cache dir (default test/.cache/qemu-ga, or
# $1) without installing it: apt-get download + dpkg-deb -x. The guest-agent tests run this binary on
# this machine with `-m unix-listen -p SOCK`, so the memory suites talk the QGA protocol to a real
# agent whose "guest" is this machine (test/unit/helpers/qga.ts). Its libraries (glib, libnuma,
# liburing, libudev) are on a Debian 12 host already; the script checks with ldd. A second run only
# checks the cache. Prints the path of qemu-ga on stdout.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/../test/.cache/qemu-ga}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
bin="$out/x/usr/sbin/qemu-ga"
if [ ! -x "$bin" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && apt-get download qemu-guest-agent >&2) || {
    apt-get update -qq >&2 && (cd "$work" && apt-get download qemu-guest-agent >&2)
  }
  rm -rf "$out/x"
  dpkg-deb -x "$work"/qemu-guest-agent_*.deb "$out/x"
  dpkg-deb -f "$work"/qemu-guest-agent_*.deb Version > "$out/version"
fi
if ldd "$bin" | grep -q 'not found'; then
  echo "qemu-ga.sh: $bin misses libraries: $(ldd "$bin" | grep 'not found' | tr -s ' \t' ' ')" >&2
  echo "qemu-ga.sh: apt-get install libglib2.0-0 libnuma1 liburing2 libudev1" >&2
  exit 1
fi
echo "$bin"
