/**
 * Tree objects of the `dir` backend (manifest format 2, like git's trees): one object per directory
 * in the shared object store, content-addressed (sha256 of its bytes), holding the directory's
 * entries; a subdirectory's entry names its tree by hash. A snapshot's manifest names the root tree.
 * A create re-serialises and stores only the trees of directories that changed (and their
 * ancestors); every other directory keeps its tree by hash, neither re-serialised nor re-read.
 *
 * A tree is JSON: an array of rows sorted by name, one per entry of the directory:
 *   [name, "f", mode, size, mtimeMs, ctimeMs, inode, sha256 of the content]
 *   [name, "l", mode, size, mtimeMs, ctimeMs, inode, link target]
 *   [name, "d", mode, 0, mtimeMs, ctimeMs, inode, tree hash, tree bytes, 1 when partial else 0]
 * (the stat fields make the trees the next create's stat cache, as the format-1 manifest was).
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { AgentKeepError } from '../../core/errors';
import { isErrno } from '../../core/fsutil';
import { packSetOf } from '../../core/packs';
import type { Entry } from './manifest';

/** One row of a tree object: [name, type, mode, size, mtimeMs, ctimeMs, inode, hash or link target, tree bytes?, partial?]. */
export type Row = [string, string, number, number, number, number, number, string, number?, number?];

const HASH = /^[0-9a-f]{64}$/;

/**
 * The JSON text of each entry's tree row, kept for entries a later scan reuses as they are (entries
 * are never changed once a scan returned them: a changed path gets a new entry object, a directory
 * with a new tree a copy), so an unchanged entry of a directory that changed is not serialised again.
 */
const rowJson = new WeakMap<Entry, string>();

/** The tree row of `e` as JSON (rowJson). */
function rowOf(e: Entry, name: string): string {
  let j = rowJson.get(e);
  if (j === undefined) {
    const row: Row =
      e.t === 'd'
        ? [name, 'd', e.m, 0, e.mt, e.ct, e.i, e.h as string, e.z ?? 0, e.x ? 1 : 0]
        : [name, e.t, e.m, e.s, e.mt, e.ct, e.i, (e.t === 'f' ? e.h : e.l) as string];
    j = JSON.stringify(row);
    rowJson.set(e, j);
  }
  return j;
}

/** The bytes of the tree of one directory whose entries are `kids` (in any order): its rows sorted by name, as one JSON array. */
export function treeBytesOf(kids: Entry[]): Buffer {
  const n = kids.length;
  const names = new Array<string>(n);
  let sorted = true;
  for (let k = 0; k < n; k++) {
    const p = kids[k].p;
    names[k] = p.slice(p.lastIndexOf('/') + 1);
    if (k && !(names[k - 1] < names[k])) sorted = false;
  }
  // (a scan gives each directory's entries sorted by name already: then nothing is sorted here)
  let order: number[] | undefined;
  if (!sorted) {
    order = names.map((_, k) => k);
    order.sort((a, b) => (names[a] < names[b] ? -1 : names[a] > names[b] ? 1 : 0));
  }
  const rows = new Array<string>(n);
  for (let k = 0; k < n; k++) {
    const j = order ? order[k] : k;
    rows[k] = rowOf(kids[j], names[j]);
  }
  return Buffer.from('[' + rows.join(',') + ']');
}

/** What buildTrees needs of a scan (scan.ts ScanResult). */
export interface TreeInput {
  entries: Entry[];
  parents: string[];
  dirty: Set<string>;
}

/** The root tree of a snapshot. */
export interface RootTree {
  tree: string;
  treeSize: number;
}

/**
 * Give every directory entry of a scan its tree: dirty directories (and their ancestors) get a new
 * tree, stored with `put`; the others keep the tree of their cached entry. Directory entries that
 * change are replaced in `scan.entries` by copies (cached entries are shared, never modified).
 * @param prevRoot the root tree of the stat cache's snapshot (format 2), if any
 * @returns the root tree, the bytes of all the snapshot's distinct trees, and of those its parent did not have
 */
export async function buildTrees(
  scan: TreeInput,
  prevRoot: RootTree | undefined,
  put: (bytes: Buffer) => Promise<{ hash: string }>,
): Promise<RootTree & { treeBytes: number; addedTreeBytes: number }> {
  const { entries, parents } = scan;
  const dirty = new Set(scan.dirty);
  const dirIndex = new Map<string, number>();
  for (let k = 0; k < entries.length; k++) {
    const e = entries[k];
    if (e.t !== 'd') continue;
    dirIndex.set(e.p, k);
    if (!e.h) dirty.add(e.p); // no tree yet (a new directory, or a format-1 parent)
  }
  if (!prevRoot) dirty.add('');
  // A directory whose tree changes changes its parent's: mark the ancestors.
  for (const d of [...dirty]) {
    let p = d;
    while (p) {
      const k = dirIndex.get(p);
      p = k === undefined ? '' : parents[k];
      if (dirty.has(p)) break;
      dirty.add(p);
    }
  }
  const kids = new Map<string, number[]>();
  for (const d of dirty) kids.set(d, []);
  for (let k = 0; k < entries.length; k++) kids.get(parents[k])?.push(k);
  // Deepest first: entries are in level order, so a higher index is never shallower.
  const order = [...dirty]
    .filter((d) => dirIndex.has(d))
    .sort((a, b) => (dirIndex.get(b) ?? 0) - (dirIndex.get(a) ?? 0));
  let addedTreeBytes = 0;
  const store = async (d: string): Promise<RootTree> => {
    const bytes = treeBytesOf((kids.get(d) ?? []).map((k) => entries[k]));
    const { hash } = await put(bytes);
    return { tree: hash, treeSize: bytes.length };
  };
  for (const d of order) {
    const k = dirIndex.get(d) as number;
    const e = entries[k];
    const t = await store(d);
    if (e.h !== t.tree || e.z !== t.treeSize) {
      entries[k] = { ...e, h: t.tree, z: t.treeSize };
      addedTreeBytes += t.treeSize;
    }
  }
  const root = await store('');
  if (!prevRoot || prevRoot.tree !== root.tree) addedTreeBytes += root.treeSize;
  // All distinct trees of the snapshot (shared subtrees once).
  const seen = new Set<string>([root.tree]);
  let treeBytes = root.treeSize;
  for (const e of entries) {
    if (e.t !== 'd' || !e.h || seen.has(e.h)) continue;
    seen.add(e.h);
    treeBytes += e.z ?? 0;
  }
  return { ...root, treeBytes, addedTreeBytes };
}

function bad(what: string, why: string): AgentKeepError {
  return new AgentKeepError(
    'CorruptSnapshot',
    `The snapshot data ${what} is damaged (${why.replace(/\s+/g, ' ').trim()}).`,
    'Pick another restore point, or delete this one.',
  );
}

/** Read and check one tree object's rows (`parsed`, when given, caches by hash). @throws CorruptSnapshot naming `what`. */
function treeRows(objectsDir: string, hash: string, what: string, parsed?: Map<string, Row[]>): Row[] {
  const hit = parsed?.get(hash);
  if (hit) return hit;
  if (!HASH.test(hash)) throw bad(what, `bad tree hash ${JSON.stringify(hash)}`);
  let text: string;
  try {
    text = readFileSync(path.join(objectsDir, hash.slice(0, 2), hash), 'utf8');
  } catch (e) {
    if (!isErrno(e, 'ENOENT')) throw e;
    // not a file of its own: in a pack (a create that stored many objects at once, core/packs.ts)
    let packed: Buffer | undefined;
    try {
      packed = packSetOf(objectsDir).readSync(hash); // checked against its sha256
    } catch (err) {
      if (err instanceof AgentKeepError && err.kind === 'CorruptSnapshot')
        throw bad(what, `tree object ${hash.slice(0, 12)}… is damaged (its bytes do not match its sha256)`);
      throw err;
    }
    if (!packed) throw bad(what, `tree object ${hash.slice(0, 12)}… is missing`);
    text = packed.toString('utf8');
  }
  let rows: Row[];
  try {
    rows = JSON.parse(text) as Row[];
  } catch (e) {
    throw bad(what, `tree ${hash.slice(0, 12)}…: ${(e as Error).message}`);
  }
  if (!Array.isArray(rows)) throw bad(what, `tree ${hash.slice(0, 12)}… is not a list`);
  parsed?.set(hash, rows);
  return rows;
}

/**
 * The rows of tree object `hash` (loose or packed, checked against its sha256 when packed), parsed
 * but not checked row by row (streamCreate checks them as rowEntry does).
 * @throws AgentKeepError CorruptSnapshot naming `what` when it is missing, damaged or not a list.
 */
export function readTreeRows(objectsDir: string, hash: string, what: string): Row[] {
  return treeRows(objectsDir, hash, what);
}

/**
 * The entry of one row of the tree of directory `dir`. Each type's entry is built as one object
 * literal with all its keys, so the entries of a snapshot share a few compact shapes (no shape
 * transitions, no spare property slots: at 100,000 entries this is memory, issue 14). `prefix` is
 * `dir + '/'` ('' for the root), made once per tree: the path is prefix + name (measured: 306 -> 275
 * bytes per entry read, and half the time, against a path made per entry from `dir`).
 * @throws CorruptSnapshot naming `what`.
 */
function rowEntry(dir: string, prefix: string, r: Row, what: string): Entry {
  const [name, t, m, s, mt, ct, i, ref] = r;
  if (typeof name !== 'string' || !name || name === '.' || name === '..' || name.includes('/'))
    throw bad(what, `bad name ${JSON.stringify(name)} in ${dir || '/'}`);
  const p = prefix + name;
  if (typeof m !== 'number' || typeof ref !== 'string') throw bad(what, `bad entry ${p}`);
  if (t === 'f') {
    if (!HASH.test(ref)) throw bad(what, `bad entry ${p}`);
    return { p, t: 'f', m, s, mt, ct, i, h: ref };
  }
  if (t === 'l') return { p, t: 'l', m, s, mt, ct, i, l: ref };
  if (t === 'd') {
    if (!HASH.test(ref)) throw bad(what, `bad entry ${p}`);
    return r[9]
      ? { p, t: 'd', m, s, mt, ct, i, h: ref, z: r[8] ?? 0, x: 1 }
      : { p, t: 'd', m, s, mt, ct, i, h: ref, z: r[8] ?? 0 };
  }
  throw bad(what, `bad entry ${p}`);
}

/**
 * Read a snapshot's entries from its root tree, level by level (the order a scan gives them).
 * Each tree's rows are dropped once its entries are made (a tree named twice, a directory copied in
 * the tree, is read twice), so reading never holds the rows of the whole snapshot next to its
 * entries (issue 14: the peak memory of a create at 100,000 files).
 * @param objectsDir the object store (`<stateDir>/objects`)
 * @throws AgentKeepError CorruptSnapshot naming the manifest when a tree is missing or damaged.
 */
export function readTreeEntries(objectsDir: string, root: string, what: string): Entry[] {
  const out: Entry[] = [];
  const spans = new Map<string, TreeSpan>();
  let level: Array<[string, string]> = [['', root]];
  while (level.length) {
    const next: Array<[string, string]> = [];
    for (const [dir, hash] of level) {
      const prefix = dir ? dir + '/' : '';
      const start = out.length;
      for (const r of treeRows(objectsDir, hash, what)) {
        const e = rowEntry(dir, prefix, r, what);
        if (e.t === 'd') next.push([e.p, e.h as string]);
        out.push(e);
      }
      spans.set(dir, { h: hash, a: start, b: out.length });
    }
    level = next;
  }
  treeSpans.set(out, spans);
  return out;
}

/** Where the entries of one directory's tree are in a list readTreeEntries read: `[a, b)`, from tree `h`. */
interface TreeSpan {
  h: string;
  a: number;
  b: number;
}

/**
 * The entry lists readTreeEntries read -> per directory the span of its tree's entries (each tree's
 * entries are consecutive: level order). So a restore whose check read the snapshot's trees
 * (MachineBackend.verify) compares them without reading and parsing them again (treeDifference).
 * Keyed by the list itself: a list changed or rebuilt since is not found. One entry per directory.
 */
const treeSpans = new WeakMap<Entry[], Map<string, TreeSpan>>();

/** Directory ('' = the root) -> its entries, for entries in level order with their directories (a scan's `parents`). */
export function childrenByDir(entries: Entry[], parents?: string[]): Map<string, Entry[]> {
  const out = new Map<string, Entry[]>();
  for (let k = 0; k < entries.length; k++) {
    const e = entries[k];
    const d = parents ? parents[k] : e.p.slice(0, Math.max(0, e.p.lastIndexOf('/')));
    const list = out.get(d);
    if (list) list.push(e);
    else out.set(d, [e]);
  }
  return out;
}

/**
 * The entries a restore from snapshot `root` (a root tree) over the current state `cur` (a format-2
 * snapshot just taken, with its entries and `kids`, childrenByDir) has to look at: both sides of
 * every directory whose tree differs, and whole subtrees present on one side only. A directory with
 * the same tree on both sides (same names, types, modes, contents, times and inodes below it) is
 * skipped without reading its tree. Level order, as readTreeEntries.
 * @throws AgentKeepError CorruptSnapshot naming `what` when a tree is missing or damaged.
 */
export function treeDifference(
  objectsDir: string,
  root: string,
  cur: { tree: string; kids: Map<string, Entry[]> },
  what: string,
  read?: Entry[],
): { want: Entry[]; cur: Entry[] } {
  const want: Entry[] = [];
  const have: Entry[] = [];
  if (root === cur.tree) return { want, cur: have };
  const parsed = new Map<string, Row[]>();
  // the snapshot's entries as readTreeEntries read them (`read`, with their spans): a tree found
  // there (same directory, same hash) is not read again (its rows were checked when read)
  const spans = read ? treeSpans.get(read) : undefined;
  const allBelow = (d: string): void => {
    for (const c of cur.kids.get(d) ?? []) {
      have.push(c);
      if (c.t === 'd') allBelow(c.p);
    }
  };
  let level: Array<[string, string]> = [['', root]];
  while (level.length) {
    const next: Array<[string, string]> = [];
    for (const [dir, hash] of level) {
      const curKids = cur.kids.get(dir) ?? [];
      const byPath = new Map(curKids.map((c) => [c.p, c]));
      const wanted = new Set<string>();
      const prefix = dir ? dir + '/' : '';
      const span = spans?.get(dir);
      const known = read && span && span.h === hash ? read.slice(span.a, span.b) : undefined;
      const entries = known ?? treeRows(objectsDir, hash, what, parsed).map((r) => rowEntry(dir, prefix, r, what));
      for (const e of entries) {
        want.push(e);
        if (e.t !== 'd') continue;
        wanted.add(e.p);
        const c = byPath.get(e.p);
        if (!(c && c.t === 'd' && c.h === e.h)) next.push([e.p, e.h as string]);
      }
      for (const c of curKids) {
        have.push(c);
        // A directory on both sides is looked into at the next level if its tree differs; one that
        // is not a directory in the snapshot goes with everything below it.
        if (c.t === 'd' && !wanted.has(c.p)) allBelow(c.p);
      }
    }
    level = next;
  }
  return { want, cur: have };
}
