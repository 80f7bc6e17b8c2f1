#!/usr/bin/env bash
# System packages the unit tests use for real parts: btrfs-progs (a btrfs on a loop device),
# qemu-system-x86 + qemu-utils + busybox-static (a tiny real QEMU guest; scripts/qemu-guest.sh fetches
# the Debian kernel package), openssl (the Proxmox contract simulator's self-signed certificate),
# python3 (real SQLite WAL databases and pickles in the memory tests) and openssh-server (a private sshd
# on 127.0.0.1 for the memory stores over SSH; started by the tests, never as a service) and neovim
# (a second LSP client: test/unit/nvim-lsp.test.ts runs nvim --headless) and python3-faiss (the real
# FAISS library writes the index.faiss files memory lint reads: test/unit/memory-lint-vectors.test.ts). Installed
# with apt-get when running as root; otherwise the script names them and exits 1.
set -euo pipefail
missing=()
have() { command -v "$1" >/dev/null 2>&1; }
have mkfs.btrfs || missing+=(btrfs-progs)
have qemu-system-x86_64 || missing+=(qemu-system-x86)
have qemu-img || missing+=(qemu-utils)
[ -x /bin/busybox ] || [ -x /usr/bin/busybox ] || missing+=(busybox-static)
have openssl || missing+=(openssl)
have python3 || missing+=(python3)
have flock || missing+=(util-linux)
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
have ssh-keygen || missing+=(openssh-client)
have nvim || missing+=(neovim)
python3 -c 'import faiss' 2>/dev/null || /usr/bin/python3 -c 'import faiss' 2>/dev/null || missing+=(python3-faiss)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && have apt-get; then
  echo "setup-test-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq -o DPkg::Lock::Timeout=600 "${missing[@]}" >/dev/null
else
  echo "setup-test-deps: missing system packages: ${missing[*]} (the unit tests use a real btrfs, a real QEMU guest, openssl, python3 (with faiss), sshd and Neovim)." >&2
  echo "Fix: sudo apt-get install -y ${missing[*]}   (the btrfs and QEMU tests also need root for loop devices)" >&2
  exit 1
fi
