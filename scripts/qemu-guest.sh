#!/usr/bin/env bash
# Build the tiny QEMU test guest of the qemu backend's tests (test/unit/qemu-*.test.ts) into a cache
# dir (default test/.cache/qemu-guest, or $1): vmlinuz from the Debian cloud kernel package
# (apt-get download + dpkg-deb -x, no install), and initrd.gz, a busybox initramfs whose init
# (scripts/qemu-guest/init) prints "AK-TICK n" on the serial console. A second run only checks the
# cache. Needs busybox-static (and apt sources for the kernel package); see docs/qemu.md.
# Prints the cache dir on stdout.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/../test/.cache/qemu-guest}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
init="$here/qemu-guest/init"
stamp="$(sha256sum "$init" | cut -c1-16)"
if [ -s "$out/vmlinuz" ] && [ -s "$out/initrd.gz" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "$out"; exit 0
fi
bb="$(command -v busybox || true)"
if [ -z "$bb" ] || ! file -L "$bb" 2>/dev/null | grep -q 'statically linked'; then
  [ -x /bin/busybox ] && bb=/bin/busybox
fi
[ -n "$bb" ] || { echo "qemu-guest.sh: busybox not found: apt-get install busybox-static" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [ ! -s "$out/vmlinuz" ]; then
  # The kernel the cloud metapackage currently points at (falls back to the newest one apt lists).
  pick() {
    pkg="$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')"
    if [ -z "$pkg" ]; then
      pkg="$(apt-cache search --names-only '^linux-image-[0-9.]+-[0-9]+-cloud-amd64$' | awk '{print $1}' | sort -V | tail -n1)"
    fi
  }
  pick
  if [ -z "$pkg" ]; then apt-get update -qq >&2 || true; pick; fi
  [ -n "$pkg" ] || { echo "qemu-guest.sh: no linux-image-*-cloud-amd64 package known to apt: run apt-get update" >&2; exit 1; }
  (cd "$work" && apt-get download "$pkg" >&2) || {
    apt-get update -qq >&2 && (cd "$work" && apt-get download "$pkg" >&2)
  }
  dpkg-deb -x "$work"/linux-image-*.deb "$work/k"
  cp "$(ls "$work"/k/boot/vmlinuz-* | head -n1)" "$out/vmlinuz.tmp"
  mv "$out/vmlinuz.tmp" "$out/vmlinuz"
  echo "$pkg" > "$out/kernel-package"
fi
root="$work/initrd"
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/tmp"
cp "$bb" "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
cp "$init" "$root/init"
chmod 755 "$root/init" "$root/bin/busybox"
(cd "$root" && find . | sort | "$bb" cpio -o -H newc 2>/dev/null | gzip -9) > "$out/initrd.gz.tmp"
mv "$out/initrd.gz.tmp" "$out/initrd.gz"
echo "$stamp" > "$out/stamp"
echo "$out"
