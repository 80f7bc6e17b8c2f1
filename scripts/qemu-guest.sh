#!/usr/bin/env bash
# Build the tiny QEMU test guest of the qemu backend's tests (test/unit/qemu-*.test.ts) into a cache
# dir (default test/.cache/qemu-guest, or $1): vmlinuz from the Debian cloud kernel package
# (apt-get download + dpkg-deb -x, no install), and initrd.gz, a busybox initramfs whose init
# (scripts/qemu-guest/init) prints "AK-TICK n" on the serial console. A second run only checks the
# cache. Needs busybox-static (and apt sources for the kernel package); see docs/qemu.md.
# With --with-qga it also builds initrd-qga.gz: the same busybox guest plus Debian's qemu-ga
# (scripts/qemu-ga.sh) with the libraries ldd names, util-linux flock, and the kernel's virtio
# console modules (from the same kernel package), started by scripts/qemu-guest/init-qga on the
# virtio-serial port org.qemu.guest_agent.0 (the guest-agent tests, docs/remote.md).
# Prints the cache dir on stdout.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
qga=0
if [ "${1:-}" = --with-qga ]; then qga=1; shift; fi
out="${1:-$here/../test/.cache/qemu-guest}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
init="$here/qemu-guest/init"
stamp="$(sha256sum "$init" | cut -c1-16)"
qga_stamp="$(cat "$here/qemu-guest/init-qga" "$0" | sha256sum | cut -c1-16)"
qga_done() { [ "$qga" = 0 ] || { [ -s "$out/initrd-qga.gz" ] && [ "$(cat "$out/stamp-qga" 2>/dev/null)" = "$qga_stamp" ]; }; }
if [ -s "$out/vmlinuz" ] && [ -s "$out/initrd.gz" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ] && qga_done; then
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
if [ ! -s "$out/initrd.gz" ] || [ "$(cat "$out/stamp" 2>/dev/null)" != "$stamp" ]; then
  root="$work/initrd"
  mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/tmp"
  cp "$bb" "$root/bin/busybox"
  ln -s busybox "$root/bin/sh"
  cp "$init" "$root/init"
  chmod 755 "$root/init" "$root/bin/busybox"
  (cd "$root" && find . | sort | "$bb" cpio -o -H newc 2>/dev/null | gzip -9) > "$out/initrd.gz.tmp"
  mv "$out/initrd.gz.tmp" "$out/initrd.gz"
  echo "$stamp" > "$out/stamp"
fi
if [ "$qga" = 1 ] && ! qga_done; then
  # the virtio console modules of the cached kernel (same package), kept in $out/modules
  mods=(virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci virtio_console)
  if [ ! -s "$out/modules/virtio_console.ko" ]; then
    pkg="$(cat "$out/kernel-package")"
    (cd "$work" && apt-get download "$pkg" >&2) || { apt-get update -qq >&2 && (cd "$work" && apt-get download "$pkg" >&2); }
    dpkg-deb -x "$work"/linux-image-*.deb "$work/km"
    mkdir -p "$out/modules"
    for m in "${mods[@]}"; do
      f="$(find "$work/km/lib/modules" -name "$m.ko*" | head -n1)"
      [ -n "$f" ] || { echo "qemu-guest.sh: module $m not in $pkg" >&2; exit 1; }
      case "$f" in *.xz) xz -dc "$f" > "$out/modules/$m.ko" ;; *.zst) zstd -dqc "$f" > "$out/modules/$m.ko" ;; *) cp "$f" "$out/modules/$m.ko" ;; esac
    done
  fi
  ga="$(bash "$here/qemu-ga.sh")"
  q="$work/initrd-qga"
  mkdir -p "$q/bin" "$q/proc" "$q/sys" "$q/dev" "$q/tmp" "$q/usr/sbin" "$q/usr/bin" "$q/modules"
  cp "$bb" "$q/bin/busybox"
  ln -s busybox "$q/bin/sh"
  cp "$here/qemu-guest/init-qga" "$q/init"
  cp "$ga" "$q/usr/sbin/qemu-ga"
  cp "$(command -v flock)" "$q/usr/bin/flock"
  cp "$out"/modules/*.ko "$q/modules/"
  # the shared libraries of qemu-ga and flock, at the paths ldd resolves them to
  for lib in $( (ldd "$ga"; ldd "$(command -v flock)") | grep -o '/[^ ]*' | sort -u); do
    mkdir -p "$q$(dirname "$lib")"
    cp -L "$lib" "$q$lib"
  done
  chmod 755 "$q/init" "$q/bin/busybox"
  (cd "$q" && find . | sort | "$bb" cpio -o -H newc 2>/dev/null | gzip -6) > "$out/initrd-qga.gz.tmp"
  mv "$out/initrd-qga.gz.tmp" "$out/initrd-qga.gz"
  echo "$qga_stamp" > "$out/stamp-qga"
fi
echo "$out"
