/**
 * The full-walk create, streamed directory by directory (issue 14: the peak memory of a create at
 * 100,000 files). scanTree (scan.ts) + buildTrees (tree.ts) hold every entry of the parent snapshot
 * and of the new one as JS objects (about 275 bytes each) plus arrays of all of them; this walk holds
 * only the directories it is working on: it reads the previous snapshot's tree of a directory when it
 * lists that directory (its stat cache), lstats its names at once on this thread (one lstat(2) each:
 * no array of every path of a level, no stat worker; measured no slower than scanTree's level-wide
 * lstat on the stat workers, BENCHMARKS.md), hashes what changed per batch of about BATCH names, and
 * as soon as every child of a directory is done writes its tree (only when it changed: an unchanged
 * directory keeps its tree by hash, never re-serialised) and drops its rows. Of a directory whose
 * previous names are reused only its changed children are held. What it keeps to the end is
 * O(directories): the distinct tree hashes (for the manifest's treeBytes), and O(changed): hashes of
 * new contents. Measured: ~1 MB of live heap at 100,000 files (gc() every 20 ms), against ~30 MB.
 *
 * The snapshot it makes is the one scanTree + buildTrees make from the same tree and parent, tree
 * object for tree object (test/unit/dir-stream.test.ts), with the same rules: the stat cache with the
 * racy window (RACY_MS), a directory whose own stat is unchanged not listed again (its previous
 * names lstat'd), entries that vanish during the walk left out only when a fresh listing of their
 * directory confirms it, our temp files and special files left out (the directory marked `x`),
 * names that are not UTF-8 failing with the mv hint, ENAMETOOLONG as "name too long". The one
 * difference: a previous tree that is missing or damaged makes only that directory be read without
 * a stat cache (scanTree's caller drops the whole parent then); the result is the same snapshot.
 */
import * as fs from 'node:fs';
import { AgentKeepError } from '../../core/errors';
import { isErrno, isTempName, mapLimit, throwIfAborted } from '../../core/fsutil';
import { RACY_MS, type Entry } from './manifest';
import { checkNamesUtf8, fileError, goneFromDir, rootModeOf } from './scan';
import { readTreeRows, type Row } from './tree';

/** Options of streamCreate. */
export interface StreamOptions {
  /** The object store (`<stateDir>/objects`), where the previous snapshot's trees are read. */
  objectsDir: string;
  /** The previous snapshot (format 2): its root tree and the time its scan started (the stat cache). */
  prev?: { tree: string; scanStartMs: number };
  /** Hash (and store) a file the stat cache does not cover: its hash, the bytes newly stored, its size as stored. */
  hashFile: (abs: string, size: number) => Promise<{ hash: string; newBytes: number; size?: number }>;
  /** Store a tree object's bytes. */
  put: (bytes: Buffer) => Promise<{ hash: string }>;
  /** As ScanOptions.known: the hash of a file a caller knows the content of (the restore record). */
  known?: (e: Entry) => string | undefined;
  /** Parallel hash jobs (default 8). */
  concurrency?: number;
  onScan?: (done: number) => void;
  onHash?: (done: number, total: number) => void;
  signal?: AbortSignal;
  abortWhat?: string;
}

/** What a streamed create made: the manifest's facts and what DirBackend.create reports. */
export interface StreamResult {
  tree: string;
  treeSize: number;
  /** Bytes of all the snapshot's distinct trees (shared subtrees once). */
  treeBytes: number;
  /** Bytes of the objects this snapshot names that its parent did not (contents and trees; the size-cap bound). */
  added: number;
  rootMode: number;
  scanStartMs: number;
  /** Sum of the file sizes. */
  bytes: number;
  newBytes: number;
  /** Entries of the snapshot (directories, files, symlinks; the root not counted). */
  files: number;
  hashed: number;
  skipped: number;
  /** Our own temp files found and left out, target-relative (DirBackend's strayTemps). */
  temps: string[];
}

const HASH = /^[0-9a-f]{64}$/;

/**
 * A directory being worked on, until its tree is written. A directory listed afresh keeps its rows
 * (`rows`); one whose previous names are reused keeps only what changed (`changes`): its previous
 * rows are read again from its tree if it turns out dirty, so the rows of unchanged directories (most
 * of them after a small change) die young instead of being held for a batch.
 */
interface Dir {
  rel: string;
  up: Dir | undefined;
  /** Index of this directory's row among its parent's children. */
  at: number;
  /** This directory's row in its parent (the previous one when its stat is unchanged, else a fresh one). */
  row: Row;
  /** Whether `row` is the previous snapshot's row as is (its stat unchanged). */
  kept: boolean;
  /** The previous tree of this path when it was a directory there (its rows are the stat cache). */
  prevTree: string | undefined;
  prevSize: number;
  /** Listed afresh: every child's row, listing order (undefined = left out). */
  rows: Array<Row | undefined> | undefined;
  /** Previous names reused: child index -> its new row (undefined = left out), for changed children only. */
  changes: Map<number, Row | undefined> | undefined;
  /** Subdirectories not done yet, plus 1 until this directory's batch is processed. */
  pending: number;
  dirty: boolean;
  partial: boolean;
}

/** A directory to list: its row in its parent, and whether its previous names may be reused. */
interface ToList {
  rel: string;
  up: Dir | undefined;
  at: number;
  row: Row;
  kept: boolean;
  prev: Row | undefined;
  names: boolean;
}

/**
 * Names per batch: the directories listed (and their files hashed) before the finished ones write
 * their trees; what a batch holds is its files to hash and the rows of its directories listed afresh.
 */
const BATCH = 4096;

/** Whether rows read from a tree object are well formed (tree.ts rowEntry's checks). */
function rowsOk(rows: Row[]): boolean {
  for (const r of rows) {
    if (!Array.isArray(r)) return false;
    const [name, t, m, , , , , ref] = r;
    if (typeof name !== 'string' || !name || name === '.' || name === '..' || name.includes('/')) return false;
    if (typeof m !== 'number' || typeof ref !== 'string') return false;
    if (t === 'f' || t === 'd') {
      if (!HASH.test(ref)) return false;
    } else if (t !== 'l') return false;
  }
  return true;
}

/** A row as a tree holds it (tree.ts treeBytesOf's shapes). */
function normal(r: Row): Row {
  if (r[1] === 'd') return [r[0], 'd', r[2], 0, r[4], r[5], r[6], r[7], r[8] ?? 0, r[9] ? 1 : 0];
  return r.length === 8 ? r : [r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]];
}

/** The bytes of a directory's tree from its rows (tree.ts treeBytesOf, byte for byte). */
function treeBytesOfRows(rows: Array<Row | undefined>): Buffer {
  const out: Row[] = [];
  for (const r of rows) if (r) out.push(normal(r));
  out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return Buffer.from(JSON.stringify(out));
}

const yieldNow = (): Promise<void> => new Promise((r) => setImmediate(r));

/**
 * Walk `root` against the previous snapshot's trees and store the new snapshot's trees and contents
 * (module comment). Nothing is kept per entry once its directory's tree is written.
 * @throws AgentKeepError FileError for an unreadable directory or file or a name that is not UTF-8,
 *   TargetNotFound for a missing root, abortedError(opts.abortWhat) when opts.signal is aborted;
 *   the store's errors (DiskFull) as they are.
 */
export async function streamCreate(root: string, opts: StreamOptions): Promise<StreamResult> {
  const scanStartMs = Date.now();
  const rootMode = rootModeOf(root);
  const abortWhat = opts.abortWhat ?? 'the scan was stopped';
  const prevStart = opts.prev?.scanStartMs ?? 0;
  const hasPrev = !!opts.prev;
  const relisted = new Map<string, Set<string> | undefined>();
  const temps: string[] = [];
  /** Distinct trees of the snapshot: hash -> bytes. */
  const trees = new Map<string, number>();
  /** Hashes of contents new to this snapshot (not the path's previous content), counted once each. */
  const addedHashes = new Set<string>();
  let added = 0;
  let files = 0;
  let bytes = 0;
  let newBytes = 0;
  let hashed = 0;
  let skipped = 0;
  let hashTotal = 0;
  let hashDone = 0;
  let result: { tree: string; treeSize: number } | undefined;

  /** The previous rows of tree `hash`, or undefined when it cannot be read (that directory then has no stat cache). */
  const prevRows = (hash: string | undefined): Row[] | undefined => {
    if (!hash) return undefined;
    try {
      const rows = readTreeRows(opts.objectsDir, hash, 'of the previous snapshot');
      return rowsOk(rows) ? rows : undefined;
    } catch (e) {
      if (e instanceof AgentKeepError && e.kind === 'CorruptSnapshot') return undefined;
      throw e;
    }
  };
  const hashFrom = (o: Row | undefined, s: number, mt: number, ct: number, i: number): string | undefined =>
    o && o[1] === 'f' && o[7] && o[3] === s && o[4] === mt && o[5] === ct && o[6] === i && o[4] < prevStart - RACY_MS
      ? o[7]
      : undefined;
  /** A content new to this snapshot: not the path's previous one (`was`), counted once per hash (the size-cap bound). */
  const addContent = (h: string, size: number, was: string | undefined): void => {
    if (h === was || addedHashes.has(h)) return;
    addedHashes.add(h);
    added += size;
  };
  /** Whether nothing about a path changed since its previous row `r` (scan.ts unchanged, on a row and a fresh lstat). */
  const unchangedRow = (r: Row | undefined, st: fs.Stats): boolean => {
    if (!r || r[4] !== st.mtimeMs || r[5] !== st.ctimeMs || r[6] !== st.ino || r[2] !== (st.mode & 0o7777))
      return false;
    const fmt = st.mode & 0o170000;
    if (r[1] === 'f') return fmt === 0o100000 && r[3] === st.size && r[4] < prevStart - RACY_MS;
    if (r[1] === 'd') return fmt === 0o040000;
    return r[1] === 'l' && fmt === 0o120000 && r[3] === st.size;
  };

  /** The bytes of a dirty directory's tree (its previous rows read again when only its changes were kept). */
  const treeOf = (c: Dir): Buffer => {
    if (c.rows) return treeBytesOfRows(c.rows);
    const prev = readTreeRows(opts.objectsDir, c.prevTree as string, 'of the previous snapshot');
    const changes = c.changes as Map<number, Row | undefined>;
    const out: Array<Row | undefined> = new Array<Row | undefined>(prev.length);
    for (let k = 0; k < prev.length; k++) out[k] = changes.has(k) ? changes.get(k) : prev[k];
    return treeBytesOfRows(out);
  };

  /** Every child of `d` is done: write its tree (unless unchanged), give its row to its parent, drop it. */
  const complete = async (d: Dir): Promise<void> => {
    for (let cur: Dir | undefined = d; cur;) {
      const c: Dir = cur;
      let tree: string;
      let size: number;
      if (!c.dirty && c.prevTree && c.up) {
        tree = c.prevTree; // unchanged: by hash, not re-serialised (buildTrees' clean directories)
        size = c.prevSize;
      } else {
        const b = treeOf(c);
        tree = (await opts.put(b)).hash;
        size = b.length;
      }
      c.rows = undefined;
      c.changes = undefined;
      if (!trees.has(tree)) trees.set(tree, size);
      const up = c.up;
      if (!up) {
        result = { tree, treeSize: size };
        if (!hasPrev || opts.prev?.tree !== tree) added += size;
        return;
      }
      const r = c.row;
      const x = c.partial ? 1 : 0;
      const before = c.kept ? normal(r) : undefined;
      const differs = !before || before[7] !== tree || before[8] !== size || before[9] !== x;
      if (!before || before[7] !== tree || before[8] !== size) added += size; // (buildTrees' addedTreeBytes)
      const row: Row = [r[0], 'd', r[2], 0, r[4], r[5], r[6], tree, size, x];
      if (up.rows) up.rows[c.at] = row;
      else if (differs) up.changes?.set(c.at, row);
      if (differs) up.dirty = true;
      files++;
      if (--up.pending > 0) return;
      cur = up;
    }
  };

  const stack: ToList[] = [
    {
      rel: '',
      up: undefined,
      at: 0,
      row: ['', 'd', rootMode, 0, 0, 0, 0, opts.prev?.tree ?? ''],
      kept: false,
      prev: opts.prev ? ['', 'd', 0, 0, 0, 0, 0, opts.prev.tree] : undefined,
      names: false,
    },
  ];
  /** Set child `at` of `d` to `r` (undefined: left out). */
  const setRow = (d: Dir, at: number, r: Row | undefined): void => {
    if (d.rows) d.rows[at] = r;
    else d.changes?.set(at, r);
  };
  let sliceStart = Date.now();
  while (stack.length) {
    throwIfAborted(opts.signal, abortWhat);
    // A batch: directories off the stack (depth first), each listed and its names lstat'd at once
    // (one lstat(2) each on this thread: nothing is held per name but what changed), until BATCH names.
    const batch: Dir[] = [];
    const toHash: Array<{ d: Dir; at: number; rel: string; row: Row; was: string | undefined }> = [];
    let named = 0;
    while (stack.length && named < BATCH) {
      const item = stack.pop() as ToList;
      const rel = item.rel;
      const absDir = rel ? root + '/' + rel : root;
      const prevTree = item.prev?.[1] === 'd' ? item.prev[7] : undefined;
      const pk = prevRows(prevTree);
      const d: Dir = {
        rel,
        up: item.up,
        at: item.at,
        row: item.row,
        kept: item.kept,
        prevTree: pk ? prevTree : undefined,
        prevSize: pk ? ((item.prev as Row)[8] ?? 0) : 0,
        rows: undefined,
        changes: undefined,
        pending: 1,
        dirty: false,
        partial: false,
      };
      batch.push(d);
      const prefix = rel ? rel + '/' : '';
      // the names: the previous ones when its own stat is unchanged (scanTree's NAMES), else a listing
      let names: string[] | undefined;
      let byName: Map<string, Row> | undefined;
      if (item.names && pk) d.changes = new Map();
      else {
        d.dirty = true;
        try {
          names = fs.readdirSync(absDir);
        } catch (e) {
          if (!isErrno(e, 'ENOENT', 'ENOTDIR')) throw fileError(absDir, e);
          names = []; // gone since its parent was listed: an empty tree, as scanTree's
        }
        if (names.some((n) => n.includes('\uFFFD'))) checkNamesUtf8(absDir);
        names.sort();
        if (pk) byName = new Map(pk.map((r) => [r[0], r]));
        d.rows = new Array<Row | undefined>(names.length);
      }
      const count = names ? names.length : (pk as Row[]).length;
      named += count;
      for (let at = 0; at < count; at++) {
        if ((at & 1023) === 1023 && Date.now() - sliceStart > 8) {
          await yieldNow(); // (a large directory: let a signal be seen)
          throwIfAborted(opts.signal, abortWhat);
          sliceStart = Date.now();
        }
        const pe = names ? byName?.get(names[at]) : (pk as Row[])[at];
        const name = names ? names[at] : (pe as Row)[0];
        const abs = absDir + '/' + name;
        let st: fs.Stats | undefined;
        try {
          st = fs.lstatSync(abs, { throwIfNoEntry: false });
        } catch (err) {
          throw fileError(abs, err);
        }
        // missing: as scanTree, lstat again; left out only when a fresh listing lacks it (renamed away
        // and back, `mv f f.tmp && mv f.tmp f`, is lstat'd again)
        for (let tries = 1; !st; tries++) {
          try {
            st = fs.lstatSync(abs);
          } catch (err) {
            if (!isErrno(err, 'ENOENT') || tries >= 3) throw fileError(abs, err);
            if (goneFromDir(relisted, absDir, name)) break;
          }
        }
        if (!st) {
          d.dirty = true;
          setRow(d, at, undefined);
          continue; // vanished during the walk
        }
        const fmt = st.mode & 0o170000;
        if (fmt !== 0o040000 && isTempName(name)) {
          temps.push(prefix + name); // our own temp file (a restore or a state write in progress or interrupted)
          d.partial = true;
          d.dirty = true;
          setRow(d, at, undefined);
          continue;
        }
        if (unchangedRow(pe, st)) {
          const r = pe as Row;
          if (d.rows) d.rows[at] = r;
          if (r[1] === 'd') {
            // (a directory that held left-out entries is listed again: they may be gone, or still there)
            if (r[9]) d.dirty = true;
            d.pending++;
            stack.push({
              rel: prefix + name,
              up: d,
              at,
              row: r,
              kept: true,
              prev: r,
              names: !r[9] && r[4] < prevStart - RACY_MS,
            });
          } else {
            files++;
            if (r[1] === 'f') bytes += r[3];
          }
          continue;
        }
        d.dirty = true;
        const m = st.mode & 0o7777;
        const mt = st.mtimeMs;
        const ct = st.ctimeMs;
        const i = st.ino;
        if (fmt === 0o040000) {
          const r: Row = [name, 'd', m, 0, mt, ct, i, ''];
          d.pending++;
          setRow(d, at, r);
          const prev = pe?.[1] === 'd' ? pe : undefined;
          stack.push({ rel: prefix + name, up: d, at, row: r, kept: false, prev, names: false });
        } else if (fmt === 0o120000) {
          let l: string;
          try {
            l = fs.readlinkSync(abs);
          } catch (err) {
            if (isErrno(err, 'ENOENT') && goneFromDir(relisted, absDir, name)) {
              setRow(d, at, undefined);
              continue; // vanished during the walk
            }
            throw fileError(
              abs,
              isErrno(err, 'EINVAL') ? new Error('it stopped being a symlink during the scan; try again') : err,
            );
          }
          setRow(d, at, [name, 'l', m, st.size, mt, ct, i, l]);
          files++;
        } else if (fmt === 0o100000) {
          const size = st.size;
          const was = pe?.[1] === 'f' ? pe[7] : undefined;
          let h = hashFrom(pe, size, mt, ct, i);
          if (!h && opts.known) h = opts.known({ p: prefix + name, t: 'f', m, s: size, mt, ct, i });
          const r: Row = [name, 'f', m, size, mt, ct, i, h ?? ''];
          setRow(d, at, r);
          if (h) {
            files++;
            bytes += size;
            addContent(h, size, was);
          } else toHash.push({ d, at, rel: prefix + name, row: r, was });
        } else {
          skipped++; // socket, fifo, device: not captured (docs/dir-backend.md)
          d.partial = true;
          setRow(d, at, undefined);
        }
      }
      if (Date.now() - sliceStart > 8) {
        opts.onScan?.(files);
        await yieldNow();
        throwIfAborted(opts.signal, abortWhat);
        sliceStart = Date.now();
      }
    }
    // hash what the stat cache does not cover (scanTree's hash pass, per batch)
    if (toHash.length) {
      hashTotal += toHash.length;
      hashed += toHash.length;
      await mapLimit(toHash, opts.concurrency ?? 8, async (j) => {
        throwIfAborted(opts.signal, abortWhat);
        const abs = root + '/' + j.rel;
        try {
          const got = await opts.hashFile(abs, j.row[3]);
          j.row[7] = got.hash;
          if (got.size !== undefined) j.row[3] = got.size;
          newBytes += got.newBytes;
        } catch (err) {
          const dir = abs.slice(0, abs.lastIndexOf('/'));
          if (isErrno(err, 'ENOENT') && goneFromDir(relisted, dir, abs.slice(abs.lastIndexOf('/') + 1)))
            setRow(j.d, j.at, undefined); // deleted during the scan (its directory is dirty)
          else if (err instanceof AgentKeepError) throw err;
          else throw fileError(abs, err);
        }
        opts.onHash?.(++hashDone, hashTotal);
      });
      for (const j of toHash) {
        if ((j.d.rows ? j.d.rows[j.at] : j.d.changes?.get(j.at)) !== j.row) continue; // deleted meanwhile
        files++;
        bytes += j.row[3];
        addContent(j.row[7], j.row[3], j.was);
      }
    }
    // the batch's directories are listed and their files done; those without pending subdirectories are complete
    for (const d of batch) if (--d.pending === 0) await complete(d);
    opts.onScan?.(files);
  }
  if (!result) throw new Error('streamCreate: the root tree was not written'); // (never: the root completes last)
  let treeBytes = 0;
  for (const z of trees.values()) treeBytes += z;
  return {
    ...result,
    treeBytes,
    added,
    rootMode,
    scanStartMs,
    bytes,
    newBytes,
    files,
    hashed,
    skipped,
    temps,
  };
}
