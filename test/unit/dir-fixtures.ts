/**
 * Helpers for the dir-backend and core tests (not a test file itself): real temp trees, a full
 * description of a tree (types, modes, bytes, link targets) to compare before/after a restore.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** Repository root (for spawning child processes with tsx). */
export const REPO_ROOT = path.resolve(__dirname, '..', '..');

/** A fresh temp dir with `tree/` and `state/` inside; `cleanup()` removes it. */
export function tempSetup(prefix = 'ak-test-'): {
  base: string;
  tree: string;
  state: string;
  target: string;
  cleanup: () => void;
} {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const tree = path.join(base, 'tree');
  const state = path.join(base, 'state');
  fs.mkdirSync(tree);
  return {
    base,
    tree,
    state,
    target: `dir:${tree}`,
    cleanup: () => {
      // make everything writable first (tests create read-only dirs)
      const walk = (p: string): void => {
        let st: fs.Stats;
        try {
          st = fs.lstatSync(p);
        } catch {
          return;
        }
        if (st.isDirectory()) {
          fs.chmodSync(p, 0o755);
          for (const n of fs.readdirSync(p)) walk(path.join(p, n));
        }
      };
      walk(base);
      fs.rmSync(base, { recursive: true, force: true });
    },
  };
}

/** Write a file (creating parents) with an optional mode. */
export function put(root: string, rel: string, content: string | Buffer, mode?: number): void {
  const p = path.join(root, rel);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, content);
  if (mode !== undefined) fs.chmodSync(p, mode);
}

/** Description of one path: type, permission bits, sha256 of bytes (files) or link target. */
export interface Described {
  type: 'file' | 'dir' | 'symlink' | 'other';
  mode: number;
  content?: string;
  link?: string;
}

/** Every path under root (not following symlinks) with its description. */
export function describeTree(root: string): Record<string, Described> {
  const out: Record<string, Described> = {};
  const walk = (rel: string): void => {
    const abs = rel ? path.join(root, rel) : root;
    for (const n of fs.readdirSync(abs).sort()) {
      const r = rel ? `${rel}/${n}` : n;
      const p = path.join(root, r);
      const st = fs.lstatSync(p);
      const mode = st.mode & 0o7777;
      if (st.isSymbolicLink()) out[r] = { type: 'symlink', mode: 0, link: fs.readlinkSync(p) };
      else if (st.isDirectory()) {
        out[r] = { type: 'dir', mode };
        walk(r);
      } else if (st.isFile())
        out[r] = { type: 'file', mode, content: createHash('sha256').update(fs.readFileSync(p)).digest('hex') };
      else out[r] = { type: 'other', mode };
    }
  };
  walk('');
  return out;
}

/** Leftover temp files of a restore (`.name.ak-tmp-xxxx`) anywhere under root. */
export function tempLeftovers(root: string): string[] {
  return Object.keys(describeTree(root)).filter((p) => /\.ak-tmp-[0-9a-f]{12}$/.test(p));
}

/** Deterministic pseudo-random bytes (binary content that does not compress). */
export function pseudoRandom(size: number, seed = 1): Buffer {
  const buf = Buffer.alloc(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    buf.writeUInt32LE(x >>> 0, Math.min(i, size - 4));
  }
  return buf;
}

/** A realistic Hermes home at `home`. */
export function makeHermesHome(home: string): void {
  put(home, 'config.yaml', 'memory:\n  memory_char_limit: 2200\n  user_char_limit: 1375\n');
  put(home, '.env', 'OPENROUTER_API_KEY=sk-test-not-real\n', 0o600);
  put(home, 'memories/MEMORY.md', 'Project uses Node 20.\n§\nDeploy with ./deploy.sh staging.\n');
  put(home, 'memories/USER.md', 'User prefers concise answers.\n');
  put(home, 'SOUL.md', 'You are a careful agent.\n');
  put(home, 'skills/devops/deploy-staging/SKILL.md', '---\nname: deploy-staging\n---\nRun the deploy.\n');
  put(home, 'sessions/2026-01-01.jsonl', '{"role":"user","content":"hi"}\n');
}
