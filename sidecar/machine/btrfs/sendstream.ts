/**
 * What changed between two read-only snapshots of one subvolume lineage, from the btrfs send stream
 * (`btrfs send --no-data -p FROM TO | btrfs receive --dump`): the kernel compares the two trees
 * (btrfs_compare_trees) and emits one command per changed inode or name, so the work is proportional
 * to the changes, not to the tree. The stream only says where to look: every name operation
 * (mkfile, mkdir, link, unlink, rmdir, rename, ...) marks its parent directory, whose listings are then
 * compared; every attribute operation (update_extent, truncate, chmod, chown, utimes, xattrs, ...)
 * marks its path, which is then lstat'ed in both trees. Paths not named by the stream are identical
 * (same inode item). The result is the same as a full stat walk of both trees (btrfs/index.ts
 * compareTrees; a test checks that on random changes), and the caller falls back to that walk when
 * anything here fails (an unknown command, a name that looks like a send orphan `o<ino>-<gen>-<n>`
 * but exists in a tree).
 * Sources: btrfs-progs 6.2 cmds/receive-dump.c (line format, print_path_escaped), kernel fs/btrfs/send.c.
 */
import { spawn } from 'node:child_process';
import { promises as fs, type Stats } from 'node:fs';
import * as path from 'node:path';
import { isTempName } from '../../core/fsutil';
import type { MachineChanges, PathFilter } from '../types';

/** Commands that add, remove or rename a name: their parent directories are compared. */
const NAME_OPS = new Set([
  'mkfile',
  'mkdir',
  'mknod',
  'mkfifo',
  'mksock',
  'symlink',
  'link',
  'unlink',
  'rmdir',
  'rename',
]);
/** Commands that change an inode's content or attributes: the path itself is compared. */
const ATTR_OPS = new Set([
  'write',
  'update_extent',
  'clone',
  'truncate',
  'chmod',
  'chown',
  'utimes',
  'set_xattr',
  'remove_xattr',
  'fallocate',
  'fileattr',
  'enable_verity',
  'encoded_write',
]);
const ORPHAN = /^o\d+-\d+-\d+$/;

/** Split a dump line into tokens: whitespace separates, a backslash escapes (print_path_escaped). */
export function dumpTokens(line: string): string[] {
  const out: string[] = [];
  let cur: number[] = [];
  let open = false;
  const flush = (): void => {
    if (open) out.push(Buffer.from(cur).toString('utf8'));
    cur = [];
    open = false;
  };
  const bytes = Buffer.from(line, 'utf8');
  const ESC: Record<string, number> = { a: 7, b: 8, e: 27, f: 12, n: 10, r: 13, t: 9, v: 11, ' ': 32, '\\': 92 };
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i];
    if (c === 32 || c === 9) {
      flush();
      continue;
    }
    open = true;
    if (c !== 92 || i + 1 >= bytes.length) {
      cur.push(c);
      continue;
    }
    const n = String.fromCharCode(bytes[i + 1]);
    const oct = /^[0-7]{3}$/.exec(String.fromCharCode(bytes[i + 1], bytes[i + 2] ?? 0, bytes[i + 3] ?? 0));
    if (oct) {
      cur.push(parseInt(oct[0], 8));
      i += 3;
    } else if (n in ESC) {
      cur.push(ESC[n]);
      i += 1;
    } else cur.push(c);
  }
  flush();
  return out;
}

/** Run `btrfs send --no-data -q -p from to | btrfs receive --dump`; resolves with the dump text. */
function dump(from: string, to: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const send = spawn('btrfs', ['send', '-q', '--no-data', '-p', from, to], { stdio: ['ignore', 'pipe', 'pipe'] });
    const recv = spawn('btrfs', ['receive', '--dump'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let left = 2;
    let failed: Error | undefined;
    const done = (code: number | null, who: string): void => {
      if (code !== 0) failed ??= new Error(`btrfs ${who} exited ${code}: ${err.trim()}`);
      if (--left === 0) {
        if (failed) reject(failed);
        else resolve(out);
      }
    };
    send.on('error', reject);
    recv.on('error', reject);
    send.stderr.on('data', (d: Buffer) => (err += d.toString()));
    recv.stderr.on('data', (d: Buffer) => (err += d.toString()));
    recv.stdout.on('data', (d: Buffer) => (out += d.toString()));
    send.stdout.pipe(recv.stdin);
    recv.stdin.on('error', () => undefined);
    send.on('close', (c) => done(c, 'send'));
    recv.on('close', (c) => done(c, 'receive --dump'));
  });
}

/** Directories whose listings differ and paths whose attributes differ, per the send stream. */
export async function touchedBySend(from: string, to: string): Promise<{ dirs: Set<string>; paths: Set<string> }> {
  const text = await dump(from, to);
  const prefix = `./${path.basename(to)}`;
  const rel = (p: string): string => {
    if (p === prefix || p === `${prefix}/`) return '';
    if (!p.startsWith(`${prefix}/`)) throw new Error(`unexpected path in the send stream: ${p}`);
    return p.slice(prefix.length + 1).replace(/\/+$/, '');
  };
  const parent = (p: string): string => (p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : '');
  const orphans = new Set<string>();
  const hasOrphan = (p: string): boolean => {
    const parts = p.split('/');
    const i = parts.findIndex((x) => ORPHAN.test(x));
    if (i >= 0) orphans.add(parts.slice(0, i + 1).join('/'));
    return i >= 0;
  };
  const dirs = new Set<string>();
  const paths = new Set<string>();
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const [op, p, ...kv] = dumpTokens(line);
    if (op === 'snapshot' || op === 'subvol' || op === 'end') continue;
    if (p === undefined) throw new Error(`unexpected send stream line: ${line}`);
    if (NAME_OPS.has(op)) {
      const r = rel(p);
      if (!hasOrphan(r)) dirs.add(parent(r));
      if (op === 'rename') {
        const d = kv.find((x) => x.startsWith('dest='));
        if (!d) throw new Error(`rename without dest: ${line}`);
        const dr = rel(d.slice(5));
        if (!hasOrphan(dr)) dirs.add(parent(dr));
      }
    } else if (ATTR_OPS.has(op)) {
      const r = rel(p);
      if (!hasOrphan(r)) paths.add(r);
    } else throw new Error(`unknown send stream command "${op}"`);
  }
  // A real name that merely looks like an orphan would hide its changes: let the caller walk instead.
  for (const o of orphans) {
    for (const root of [from, to]) {
      if (
        await fs.lstat(path.join(root, o)).then(
          () => true,
          () => false,
        )
      )
        throw new Error(`a path named like a send orphan exists: ${o}`);
    }
  }
  return { dirs, paths };
}

type Kind = 'f' | 'd' | 'l';
const kindOf = (st: Stats): Kind | undefined =>
  st.isFile() ? 'f' : st.isDirectory() ? 'd' : st.isSymbolicLink() ? 'l' : undefined;

/**
 * Changes from snapshot `from` to snapshot `to` (added = only in `to`), both read-only snapshots of
 * one subvolume lineage, guided by the send stream. Same result and the same rules as a full stat
 * walk (btrfs/index.ts compareTrees): entries compared by type, mode, size, mtime, ctime, inode and
 * link target; directories by type and mode; sockets, FIFOs, devices and our temp files left out;
 * paths `skip` accepts (and what is below them) left out.
 * @throws Error when the stream cannot be read or understood (the caller walks instead).
 */
export async function compareBySend(from: string, to: string, skip?: PathFilter): Promise<MachineChanges> {
  const { dirs, paths } = await touchedBySend(from, to);
  const added = new Set<string>();
  const removed = new Set<string>();
  const changed = new Set<string>();
  const skipped = (p: string): boolean => {
    if (!skip || !p) return false;
    for (let i = p.indexOf('/'); i > 0; i = p.indexOf('/', i + 1)) if (skip(p.slice(0, i))) return true;
    return skip(p);
  };
  const lst = (root: string, p: string): Promise<Stats | undefined> =>
    fs.lstat(p ? path.join(root, p) : root).catch(() => undefined);
  const names = async (root: string, p: string): Promise<string[]> => {
    const abs = p ? path.join(root, p) : root;
    if (
      !(await fs.lstat(abs).then(
        (st) => st.isDirectory(),
        () => false,
      ))
    )
      return []; // never list through a symlink
    return fs.readdir(abs).catch(() => [] as string[]);
  };
  const join = (d: string, n: string): string => (d ? `${d}/${n}` : n);
  const ok = (p: string, st: Stats | undefined): st is Stats =>
    !!st && !!kindOf(st) && !isTempName(path.posix.basename(p)) && !skipped(p);

  /** `p` and everything below it in `root` into `into`. */
  const enumerate = async (root: string, p: string, into: Set<string>): Promise<void> => {
    const st = await lst(root, p);
    if (!ok(p, st)) return;
    if (p) into.add(p);
    if (st.isDirectory()) for (const n of await names(root, p)) await enumerate(root, join(p, n), into);
  };
  /** Compare the entries of directory `d` in both trees (recursing into subtrees that differ). */
  const compareDir = async (d: string, deep: boolean): Promise<void> => {
    const [a, b] = await Promise.all([names(from, d), names(to, d)]);
    const inB = new Set(b);
    for (const n of a) if (!inB.has(n)) await enumerate(from, join(d, n), removed);
    const inA = new Set(a);
    for (const n of b) {
      if (!inA.has(n)) await enumerate(to, join(d, n), added);
      else await comparePath(join(d, n), deep);
    }
  };
  /** Compare one path in both trees; a directory that is another inode is compared in full. */
  const comparePath = async (p: string, deep: boolean): Promise<void> => {
    if (skipped(p)) return;
    const [a, b] = await Promise.all([lst(from, p), lst(to, p)]);
    const okA = ok(p, a);
    const okB = ok(p, b);
    if (!okA && !okB) return;
    if (!okA) return enumerate(to, p, added);
    if (!okB) return enumerate(from, p, removed);
    const ka = kindOf(a);
    const kb = kindOf(b);
    if (ka !== kb) {
      if (p) changed.add(p);
      if (ka === 'd') for (const n of await names(from, p)) await enumerate(from, join(p, n), removed);
      if (kb === 'd') for (const n of await names(to, p)) await enumerate(to, join(p, n), added);
      return;
    }
    const mode = (a.mode & 0o7777) !== (b.mode & 0o7777);
    if (ka === 'd') {
      if (mode && p) changed.add(p);
      if (deep || a.ino !== b.ino) await compareDir(p, true);
      return;
    }
    const link = ka === 'l' && (await fs.readlink(path.join(from, p))) !== (await fs.readlink(path.join(to, p)));
    if (mode || link || a.size !== b.size || a.mtimeMs !== b.mtimeMs || a.ctimeMs !== b.ctimeMs || a.ino !== b.ino)
      changed.add(p);
  };

  for (const d of dirs) if (!skipped(d)) await compareDir(d, false);
  for (const p of paths) await comparePath(p, false);
  const sorted = (s: Set<string>): string[] => [...s].sort();
  return { added: sorted(added), removed: sorted(removed), changed: sorted(changed) };
}
