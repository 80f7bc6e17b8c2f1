/**
 * Test helper: a real btrfs filesystem on a loop device (truncate + mkfs.btrfs + mount -o loop),
 * made and removed by the tests. Needs root, a free loop device and btrfs-progs (CI runs as root and
 * .ci/run installs btrfs-progs); anything missing fails with a message saying what to do.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** A mounted scratch btrfs. `cleanup()` unmounts (lazy) and detaches the loop device; safe to call twice. */
export interface LoopBtrfs {
  /** Temp dir holding the image and the mount point. */
  base: string;
  /** Mount point (the filesystem's top-level subvolume). */
  mnt: string;
  /** `btrfs subvolume create <mnt>/<rel>`; returns the absolute path. */
  subvolume(rel: string): string;
  cleanup(): void;
}

const run = (cmd: string, args: string[]): string =>
  execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/**
 * Make and mount a `sizeMiB` btrfs (default 300 MiB; sparse, so it costs only what is written).
 * @throws Error naming the missing piece (root, btrfs-progs, loop device).
 */
export function mountLoopBtrfs(sizeMiB = 300): LoopBtrfs {
  if (process.getuid?.() !== 0) {
    throw new Error(
      'The btrfs tests need root (they mount a loop device): run them as root, as CI does (sudo npx mocha test/unit/btrfs*.test.ts).',
    );
  }
  try {
    run('mkfs.btrfs', ['--version']);
  } catch {
    throw new Error('The btrfs tests need btrfs-progs: apt install btrfs-progs.');
  }
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'ak-btrfs-'));
  const img = path.join(base, 'fs.img');
  const mnt = path.join(base, 'mnt');
  fs.mkdirSync(mnt);
  let mounted = false;
  const cleanup = (): void => {
    if (mounted) {
      let dev = '';
      try {
        dev = run('losetup', ['-j', img]).split(':')[0].trim();
      } catch {
        /* no loop device bound */
      }
      try {
        run('umount', ['-l', mnt]);
      } catch {
        /* already unmounted */
      }
      if (dev) {
        try {
          run('losetup', ['-d', dev]);
        } catch {
          /* autoclear already detached it */
        }
      }
      mounted = false;
    }
    fs.rmSync(base, { recursive: true, force: true });
  };
  try {
    fs.writeFileSync(img, '');
    fs.truncateSync(img, sizeMiB * 1024 * 1024);
    run('mkfs.btrfs', ['-q', '-f', img]);
    try {
      run('mount', ['-o', 'loop', img, mnt]);
    } catch (e) {
      throw new Error(
        `Cannot mount a loop btrfs (${(e as Error).message.trim()}): the btrfs tests need a free loop device (/dev/loop*, modprobe loop) and the btrfs module.`,
      );
    }
    mounted = true;
  } catch (e) {
    cleanup();
    throw e;
  }
  return {
    base,
    mnt,
    subvolume(rel: string): string {
      const p = path.join(mnt, rel);
      run('btrfs', ['subvolume', 'create', p]);
      return p;
    },
    cleanup,
  };
}
