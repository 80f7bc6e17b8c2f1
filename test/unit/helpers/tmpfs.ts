/**
 * Test helpers for issue 13 (reliability): a small real tmpfs to fill up (ENOSPC), running a
 * command as another user (nobody, via setpriv), and a check that a state dir holds no orphaned
 * objects. Mounting needs root (CI runs as root); without it the helper fails saying so.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { manifestObjects } from './manifests';

/** A mounted tmpfs; `cleanup()` unmounts it (lazy) and removes the mount point; safe to call twice. */
export interface SmallFs {
  mnt: string;
  cleanup(): void;
}

/** Mount a tmpfs of `bytes` (rounded to pages by the kernel) at a new temp dir. @throws naming what is missing (root). */
export function mountTmpfs(bytes: number, prefix = 'ak-tmpfs-'): SmallFs {
  if (process.getuid?.() !== 0) {
    throw new Error('The disk-full tests need root (they mount a small tmpfs): run them as root, as CI does.');
  }
  const mnt = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0700`, 'tmpfs', mnt]);
  let done = false;
  return {
    mnt,
    cleanup: () => {
      if (done) return;
      done = true;
      try {
        execFileSync('umount', ['-l', mnt], { stdio: 'ignore' });
      } catch {
        /* already unmounted */
      }
      fs.rmSync(mnt, { recursive: true, force: true });
    },
  };
}

/** Fill the file system holding `dir` to the last byte with `ballast` (a file there); returns its size. */
export function fillUp(dir: string, ballast = path.join(dir, 'ballast')): number {
  const fd = fs.openSync(ballast, 'w');
  const chunk = Buffer.alloc(64 * 1024, 7);
  let n = 0;
  try {
    for (;;) {
      try {
        n += fs.writeSync(fd, chunk);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
        // the last partial page
        for (let k = 4096; k >= 1; k >>= 1) {
          try {
            n += fs.writeSync(fd, chunk.subarray(0, k));
          } catch {
            /* smaller */
          }
        }
        return n;
      }
    }
  } finally {
    fs.closeSync(fd);
  }
}

/** uid/gid of nobody. */
export const NOBODY = 65534;

/** `setpriv` prefix that runs a command as nobody (no groups). */
export const AS_NOBODY = ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups'];

/** Run `cmd args` as nobody; resolves exit code and output (never throws for a non-zero exit). */
export function runAsNobody(cmd: string, args: string[]): { code: number; out: string } {
  try {
    const out = execFileSync(AS_NOBODY[0], [...AS_NOBODY.slice(1), cmd, ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return { code: 0, out };
  } catch (e) {
    const x = e as { status?: number; stdout?: string; stderr?: string };
    return { code: x.status ?? 1, out: `${x.stdout ?? ''}${x.stderr ?? ''}` };
  }
}

/** Every object file under `<stateDir>/objects/<hh>/` (hash names). */
export function storedObjects(stateDir: string): string[] {
  const root = path.join(stateDir, 'objects');
  const out: string[] = [];
  for (const fo of fs.existsSync(root) ? fs.readdirSync(root) : []) {
    if (!/^[0-9a-f]{2}$/.test(fo)) continue;
    for (const n of fs.readdirSync(path.join(root, fo))) out.push(n);
  }
  return out.sort();
}

/** Temp objects left under `<stateDir>/objects/tmp/`. */
export function tempObjects(stateDir: string): string[] {
  const d = path.join(stateDir, 'objects', 'tmp');
  return fs.existsSync(d) ? fs.readdirSync(d) : [];
}

/**
 * Objects the state dir's restore points reference: every hash of every dir manifest (format 2: its
 * trees too) and every agent capture of every journal entry.
 */
export function referencedObjects(stateDir: string): Set<string> {
  const out = new Set<string>();
  const each = (root: string, fn: (file: string) => void): void => {
    if (!fs.existsSync(root)) return;
    for (const k of fs.readdirSync(root)) {
      const d = path.join(root, k);
      if (!fs.statSync(d).isDirectory()) continue;
      for (const n of fs.readdirSync(d))
        if (n.endsWith('.json') && !n.startsWith('.') && n !== 'target.json') fn(path.join(d, n));
    }
  };
  each(path.join(stateDir, 'dir'), (f) => {
    for (const o of manifestObjects(stateDir, f)) out.add(o.hash);
  });
  each(path.join(stateDir, 'journal'), (f) => {
    for (const a of (JSON.parse(fs.readFileSync(f, 'utf8')) as { agent?: Array<{ files: Array<{ hash: string }> }> })
      .agent ?? [])
      for (const x of a.files) out.add(x.hash);
  });
  return out;
}

/** Objects stored but referenced by no restore point (orphans). */
export function orphanObjects(stateDir: string): string[] {
  const refs = referencedObjects(stateDir);
  return storedObjects(stateDir).filter((h) => !refs.has(h));
}
