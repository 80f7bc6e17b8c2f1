/**
 * Walk a directory tree into manifest entries, reusing hashes from a previous manifest when a file's
 * (size, mtime, ctime, inode) match (git's index stat cache), and hashing the rest with bounded
 * parallelism. Symlinks are recorded, never followed. Sockets, FIFOs and devices are left out and
 * counted (`skipped`); our own temp files (`.ak-tmp-<hex>`, fsutil isTempName) are left out and listed (`temps`).
 * A name that is not valid UTF-8 fails the scan (FileError naming it); an entry is treated as
 * vanished only when a fresh listing of its directory no longer holds it.
 *
 * The walk goes level by level: names come from synchronous readdir (in slices that yield to the
 * event loop), or from the previous scan for a directory whose own stat did not change; then lstat
 * runs in parallel on worker threads plus the main thread (statpool.ts). On a warm cache this is
 * several times faster than one promise per lstat (libuv's thread-pool round trip dominates).
 * With the change journal of a long-running process (journal.ts, ScanOptions.changed) only the
 * directories and paths inotify reported are listed and lstat'd; every other entry is the previous
 * scan's entry object as is (the same objects, so unchanged directories keep their trees).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AgentKeepError } from '../../core/errors';
import { isErrno, isTempName, mapLimit, nameTooLongError, shortPath, throwIfAborted } from '../../core/fsutil';
import type { PathFilter } from '../types';
import { RACY_MS, type Entry, type Manifest } from './manifest';
import type { Changed } from './journal';
import { lstatMany, STAT_FIELDS } from './statpool';
import { childrenByDir } from './tree';

/** A stat cache: path -> entry, with the time its manifest's scan started. */
export interface StatCache {
  /** Path -> entry (built on first use: a scan against one cache never needs it; it looks entries up by directory). */
  readonly entries: Map<string, Entry>;
  scanStartMs: number;
  /** Lazily built: directory -> child names. */
  children?: Map<string, string[]>;
  /** Directory ('' = the root) -> its entries, in manifest order (childrenOf). */
  kids?: Map<string, Entry[]>;
  /** Files that had more than one hard link at that scan (always lstat'd by a journal scan). */
  linked?: Set<string>;
}

/** Build a stat cache from manifests (later ones win). */
export function statCacheOf(...ms: Array<Manifest | undefined>): StatCache[] {
  return ms
    .filter((m): m is Manifest => !!m)
    .map((m) => {
      let c = built.get(m);
      if (!c) {
        // the path map of 100,000 entries was ~10 MB of a create's peak memory (its keys flattened
        // too); a scan looks entries up by directory (kids), so the map is made only if asked for
        let map: Map<string, Entry> | undefined;
        c = {
          scanStartMs: m.scanStartMs,
          get entries(): Map<string, Entry> {
            return (map ??= new Map(m.entries.map((e) => [e.p, e])));
          },
        };
        listOf.set(c, m.entries);
        built.set(m, c);
      }
      return c;
    });
}
const built = new WeakMap<Manifest, StatCache>();
/** The entries of a cache made by statCacheOf, in manifest order. */
const listOf = new WeakMap<StatCache, Entry[]>();

/**
 * Each directory's child entries in a previous scan (`''` = the root), in manifest order. A scan
 * that reuses a directory's listing takes the paths from these entries, so it builds no new path
 * string for them (at 100,000 files those strings were a good part of a create's peak memory).
 */
function childrenOf(c: StatCache): Map<string, Entry[]> {
  return (c.kids ??= childrenByDir(listOf.get(c) ?? [...c.entries.values()]));
}

/** The base name of a target-relative path. */
const nameOf = (p: string): string => p.slice(p.lastIndexOf('/') + 1);

/** The hash of `e` from its previous entry `o` when the stat fields match outside the racy window. */
function hashFrom(o: Entry | undefined, e: Entry, scanStartMs: number): string | undefined {
  return o &&
    o.t === 'f' &&
    o.h &&
    o.s === e.s &&
    o.mt === e.mt &&
    o.ct === e.ct &&
    o.i === e.i &&
    o.mt < scanStartMs - RACY_MS
    ? o.h
    : undefined;
}

/**
 * The previous entry itself when nothing about the path changed (type, mode, size, times, inode;
 * for files also outside the racy window). Reusing it avoids allocating 20,000 objects per scan.
 */
function unchanged(e: Entry | undefined, scanStartMs: number, st: Float64Array, o: number): Entry | undefined {
  if (!e || e.mt !== st[o + 2] || e.ct !== st[o + 3] || e.i !== st[o + 4] || e.m !== (st[o] & 0o7777)) return undefined;
  const fmt = st[o] & 0o170000;
  if (e.t === 'f') return fmt === 0o100000 && e.s === st[o + 1] && e.mt < scanStartMs - RACY_MS ? e : undefined;
  if (e.t === 'd') return fmt === 0o040000 ? e : undefined;
  return fmt === 0o120000 && e.s === st[o + 1] ? e : undefined;
}

/** Options of scanTree. */
export interface ScanOptions {
  /** Stat caches (previous manifests), consulted in order. */
  caches?: StatCache[];
  /** Paths to leave out entirely (and, for directories, everything below). */
  skip?: PathFilter;
  /** Hash (and maybe store) a file that the cache does not cover. Returns its hash and bytes newly stored. */
  hashFile: (abs: string, size: number) => Promise<{ hash: string; newBytes: number; size?: number }>;
  /** Parallel hash jobs (default 8). */
  concurrency?: number;
  onScan?: (done: number) => void;
  onHash?: (done: number, total: number) => void;
  /** Called once the walk is done, before the first hashFile, with the number of files to hash. */
  onHashStart?: (files: number) => Promise<void>;
  /** Stops the scan between directories and between files (throws abortedError(abortWhat)). */
  signal?: AbortSignal;
  /** What an abort means for the caller, for the error message (default "the scan was stopped"). */
  abortWhat?: string;
  /**
   * What changed since the first stat cache's scan (the change journal, journal.ts). Only these
   * directories are listed again (plus directories whose own stat changed), only these paths (plus
   * names new in a listing, files with several links, and whole `trees`) are lstat'd; every other
   * entry is the cached one as is. Needs `caches[0]`; ignored with `skip`.
   */
  changed?: Changed;
  /**
   * The hash of a regular file whose fresh lstat (`e`: size, mtime, ctime, inode) a caller already
   * knows the content of (the files the last restore wrote: DirBackend's restore record), tried when
   * no stat cache covers it; undefined = read and hash it.
   */
  known?: (e: Entry) => string | undefined;
}

/** Result of a scan. */
export interface ScanResult {
  entries: Entry[];
  rootMode: number;
  scanStartMs: number;
  bytes: number;
  newBytes: number;
  hashed: number;
  /** Sockets, FIFOs and device files found and left out (not captured). */
  skipped: number;
  /** Our own temp files (fsutil tempNameFor: `.ak-tmp-<12 hex>`, or an older version's `.<name>.ak-tmp-<12 hex>`) found and left out, target-relative. */
  temps: string[];
  /** File entries that are not the first stat cache's own entry objects (new, changed, or re-hashed), in scan order. */
  fresh: Entry[];
  /** Per entry of `entries` (same index): the target-relative path of its directory ('' = the root). */
  parents: string[];
  /**
   * Directories ('' = the root) whose listing may differ from the first stat cache's: listed afresh,
   * or a child that is new, changed, vanished or left out. Every other directory holds exactly the
   * cached entry objects, so its tree (tree.ts) is the cached one.
   */
  dirty: Set<string>;
  /** Files with more than one hard link (a journal scan lstats them every time: a write through another link may raise no event here). */
  linked: Set<string>;
  /** A journal scan (`changed`) found a file with a second hard link it did not know of: the caller walks again in full. */
  newLink: boolean;
  /** Per entry of `fresh`: the hash of the path's entry in the first stat cache, if it was a file. */
  freshWas: Map<Entry, string>;
}

const yieldNow = (): Promise<void> => new Promise((r) => setImmediate(r));

/** Paths per lstatMany call: big enough for the stat worker to pay off (statpool PARALLEL_MIN), small enough to bound memory. */
export const STAT_CHUNK = 16384;

/**
 * The error for a path of the target that cannot be read, by its cause: permissions (EACCES, EPERM)
 * get the permissions fix; a name or path too long for the kernel (ENAMETOOLONG) says so; an I/O
 * error says the disk may be failing; anything else names the system's message without a guess.
 */
export function fileError(abs: string, e: unknown): AgentKeepError {
  if (e instanceof AgentKeepError) return e;
  const msg = (e as Error).message;
  if (isErrno(e, 'EACCES', 'EPERM')) {
    return new AgentKeepError(
      'FileError',
      `Cannot read ${shortPath(abs)}: permission denied.`,
      'Fix the permissions of that path (the sidecar must be able to read the whole target), or run as a user who can read it.',
    );
  }
  if (isErrno(e, 'ENAMETOOLONG')) return nameTooLongError(abs, 'Cannot capture');
  if (isErrno(e, 'EIO')) {
    return new AgentKeepError(
      'FileError',
      `Cannot read ${shortPath(abs)}: input/output error (${msg}).`,
      'The disk or network file system may be failing: check the system log (dmesg) and copy the file elsewhere if you can.',
    );
  }
  if (isErrno(e, 'ELOOP')) {
    return new AgentKeepError(
      'FileError',
      `Cannot read ${shortPath(abs)}: too many levels of symbolic links.`,
      'Check the symlinks along that path.',
    );
  }
  return new AgentKeepError(
    'FileError',
    `Cannot read ${shortPath(abs)}: ${msg}.`,
    'Check that path (it must stay readable while the restore point is taken), then try again.',
  );
}

/** A name as a bash $'...' string: printable ASCII as is, every other byte as \xNN. */
export function shellEscapeBytes(b: Buffer): string {
  let out = '';
  for (const c of b) {
    if (c === 0x27 || c === 0x5c) out += '\\' + String.fromCharCode(c);
    else if (c >= 0x20 && c < 0x7f) out += String.fromCharCode(c);
    else out += '\\x' + c.toString(16).padStart(2, '0');
  }
  return `$'${out}'`;
}

/** Whether bytes are valid UTF-8 (decoding and re-encoding gives them back). */
function isUtf8(b: Buffer): boolean {
  return Buffer.from(b.toString('utf8'), 'utf8').equals(b);
}

/**
 * Fail on names that are not valid UTF-8 (Node decodes them lossily to U+FFFD, so they could be
 * neither read nor restored). Only called for a listing that holds U+FFFD.
 * @throws AgentKeepError FileError naming the directory, the escaped name and the fix.
 */
export function checkNamesUtf8(absDir: string): void {
  let raw: Buffer[];
  try {
    raw = fs.readdirSync(absDir, { encoding: 'buffer' });
  } catch (e) {
    throw fileError(absDir, e);
  }
  const bad = raw.filter((b) => !isUtf8(b));
  if (!bad.length) return;
  const name = shellEscapeBytes(bad[0]);
  const q = (t: string): string => `'${t.replace(/'/g, `'\\''`)}'`;
  // A likely intended name: the bytes read as Latin-1 (the usual source of such names).
  const suggestion = q(path.join(absDir, bad[0].toString('latin1')));
  throw new AgentKeepError(
    'FileError',
    `Cannot capture ${absDir}: the name ${name} in it is not valid UTF-8${bad.length > 1 ? ` (and ${bad.length - 1} more)` : ''}, so it could not be restored.`,
    `Rename it to a UTF-8 name, e.g.: mv ${q(absDir)}/${name} ${suggestion}; then try again.`,
  );
}

/**
 * Whether `name` is really gone from `absDir`: a listing made after the failure does not hold it, or
 * the directory itself is gone. Listings are kept in `seen` (many entries of one directory vanishing
 * together cost one listing); a kept listing that still holds the name is made afresh once.
 */
export function goneFromDir(seen: Map<string, Set<string> | undefined>, absDir: string, name: string): boolean {
  const kept = seen.get(absDir);
  if (seen.has(absDir) && (!kept || !kept.has(name))) return true;
  try {
    const names = new Set(fs.readdirSync(absDir));
    seen.set(absDir, names);
    return !names.has(name);
  } catch (e) {
    if (!isErrno(e, 'ENOENT', 'ENOTDIR')) return false;
    seen.set(absDir, undefined);
    return true;
  }
}

/** Split an absolute path into its directory and base name. */
function splitAbs(abs: string): [string, string] {
  const i = abs.lastIndexOf('/');
  return [abs.slice(0, i), abs.slice(i + 1)];
}

/**
 * The permission bits (mode & 0o7777) of a target's root, the first step of every walk (scanTree,
 * stream.ts streamCreate).
 * @throws AgentKeepError TargetNotFound when `root` cannot be stat'd (missing, or a dangling link),
 *   naming it and the fix
 */
export function rootModeOf(root: string): number {
  try {
    return fs.statSync(root).mode & 0o7777;
  } catch (e) {
    throw new AgentKeepError(
      'TargetNotFound',
      `Target directory ${root} does not exist.`,
      `Create it or pick an existing directory (${(e as Error).message}).`,
    );
  }
}

/**
 * Walk `root` (level by level, names sorted per directory) into entries; files not covered by the stat cache are
 * hashed with `opts.hashFile`. Entries vanishing during the walk (confirmed by a re-listing of their
 * directory) are skipped.
 * @throws AgentKeepError FileError for an unreadable directory or file or a name that is not UTF-8,
 *   TargetNotFound for a missing root, abortedError(opts.abortWhat) when opts.signal is aborted.
 */
export async function scanTree(root: string, opts: ScanOptions): Promise<ScanResult> {
  const scanStartMs = Date.now();
  const caches = opts.caches ?? [];
  const rootMode = rootModeOf(root);
  // Level by level: names of each directory (readdir, or the previous scan's names when the
  // directory's own stat is unchanged: entries are only added, removed or renamed by changing the
  // directory's mtime, as git's untracked cache relies on), then lstat of all of them, in parallel.
  // With the change journal (opts.changed) a directory is listed only when the journal or its own
  // stat says its listing changed, and only reported, new or multiply linked paths are lstat'd.
  const prev = opts.skip ? undefined : caches[0];
  const ch = prev ? opts.changed : undefined;
  const prevKids = prev ? childrenOf(prev) : undefined;
  const prevStart = prev?.scanStartMs ?? 0;
  // journal: names to lstat per directory
  const marked = new Map<string, Set<string>>();
  if (ch) {
    const mark = (p: string): void => {
      if (!p) return;
      const i = p.lastIndexOf('/');
      const d = i < 0 ? '' : p.slice(0, i);
      let set = marked.get(d);
      if (!set) marked.set(d, (set = new Set()));
      set.add(p.slice(i + 1));
    };
    for (const p of ch.paths) mark(p);
    for (const p of ch.trees) mark(p);
    for (const p of prev?.linked ?? []) mark(p);
  }
  const entries: Entry[] = [];
  const toHash: Entry[] = [];
  const fresh: Entry[] = [];
  const freshWas = new Map<Entry, string>();
  const parents: string[] = [];
  const dirty = new Set<string>();
  const linked = new Set<string>();
  let newLink = false;
  const temps: string[] = [];
  let skipped = 0;
  // directories whose listing held entries left out of the snapshot (temps, sockets, ...): marked
  // `x` so the next scan lists them again and still sees (and a restore removes) those entries
  const partial = new Set<string>();
  const dirIndex = new Map<string, number>();
  const abortWhat = opts.abortWhat ?? 'the scan was stopped';
  const relisted = new Map<string, Set<string> | undefined>();
  // Modes: FULL list and lstat all; NAMES the previous names, lstat all (no journal); LIST list,
  // lstat new and marked names; KIDS the previous entries, lstat marked names (journal).
  const FULL = 0;
  const NAMES = 1;
  const LIST = 2;
  const KIDS = 3;
  const racy = (e: Entry): boolean => !(e.mt < prevStart - RACY_MS);
  /** Journal: the mode of a directory whose entry is the cached one. */
  const keptMode = (e: Entry, parentMode: number): number =>
    parentMode === FULL || (ch as Changed).trees.has(e.p)
      ? FULL
      : (ch as Changed).dirs.has(e.p) || e.x || racy(e)
        ? LIST
        : KIDS;
  let level: Array<{ rel: string; mode: number }> = [{ rel: '', mode: ch ? (ch.trees.has('') ? FULL : LIST) : FULL }];
  let sliceStart = Date.now();
  while (level.length) {
    // one slot per entry of this level, in order: reused as is (stat -1) or lstat'd (index into rels)
    const slotPrev: Array<Entry | undefined> = [];
    const slotStat: number[] = [];
    const slotDir: string[] = [];
    const slotMode: number[] = [];
    // target-relative paths to lstat; absolute ones (root + '/' + rel) are made only where needed
    const rels: string[] = [];
    for (const item of level) {
      const rel = item.rel;
      let mode = item.mode;
      const absDir = rel ? root + '/' + rel : root;
      let pk: Entry[] | undefined;
      let marks: Set<string> | undefined;
      if (prevKids) {
        pk = prevKids.get(rel) ?? [];
        marks = marked.get(rel);
        if (mode === KIDS && marks) {
          // a reported name the previous listing lacks: list the directory after all
          const have = new Set(pk.map((e) => nameOf(e.p)));
          for (const n of marks)
            if (!have.has(n)) {
              mode = LIST;
              break;
            }
        }
      }
      if (mode === KIDS) {
        for (const e of pk as Entry[]) {
          slotDir.push(rel);
          slotMode.push(mode);
          slotPrev.push(e);
          const n = marks ? nameOf(e.p) : '';
          if (marks?.has(n)) {
            slotStat.push(rels.length);
            rels.push(e.p);
          } else slotStat.push(-1);
        }
        continue;
      }
      if (mode === NAMES) {
        // the previous listing, with the cached entries' own path strings (skip is off when reusing)
        for (const e of pk ?? []) {
          slotDir.push(rel);
          slotMode.push(mode);
          slotPrev.push(e);
          slotStat.push(rels.length);
          rels.push(e.p);
        }
        continue;
      }
      let names: string[];
      {
        dirty.add(rel);
        try {
          names = fs.readdirSync(absDir);
        } catch (e) {
          if (isErrno(e, 'ENOENT', 'ENOTDIR')) continue;
          throw fileError(absDir, e);
        }
        if (names.some((n) => n.includes('\uFFFD'))) checkNamesUtf8(absDir);
        names.sort();
      }
      const byName = pk ? new Map(pk.map((e) => [nameOf(e.p), e])) : undefined;
      for (const n of names) {
        const p = rel ? rel + '/' + n : n;
        if (opts.skip?.(p)) continue;
        const pe = byName?.get(n);
        slotDir.push(rel);
        slotMode.push(mode);
        slotPrev.push(pe);
        if (mode === LIST && pe && !marks?.has(n)) slotStat.push(-1);
        else {
          slotStat.push(rels.length);
          rels.push(p);
        }
      }
      if (Date.now() - sliceStart > 8) {
        opts.onScan?.(entries.length + slotDir.length);
        await yieldNow();
        throwIfAborted(opts.signal, abortWhat);
        sliceStart = Date.now();
      }
    }
    throwIfAborted(opts.signal, abortWhat);
    const absOf = (k: number): string => root + '/' + rels[k];
    // lstat results of rels[from ...], one chunk at a time (a whole level of 100,000 paths at once
    // held 5 MB of results, and as much again in the stat worker, at the create's peak memory); the
    // slots use the rels in order, so each chunk is read once
    let st: Float64Array = new Float64Array(0);
    let from = 0;
    const next: Array<{ rel: string; mode: number }> = [];
    /**
     * The cached entry `same` stands as it is in directory `dirRel` (listed in mode `pmode`); a kept
     * directory goes to the next level, to be listed again when it held left-out entries (`x`: marked
     * again only if it still does), else as keptMode / the previous names say.
     */
    const keep = (same: Entry, dirRel: string, pmode: number): void => {
      entries.push(same);
      parents.push(dirRel);
      if (same.t !== 'd') return;
      if (same.x) {
        dirty.add(dirRel);
        const { x: _x, ...rest } = same;
        entries[entries.length - 1] = rest;
      }
      dirIndex.set(same.p, entries.length - 1);
      const mode = ch ? keptMode(same, pmode) : !same.x && same.mt < prevStart - RACY_MS && prevKids ? NAMES : FULL;
      next.push({ rel: same.p, mode });
    };
    for (let s = 0; s < slotDir.length; s++) {
      const dirRel = slotDir[s];
      const pmode = slotMode[s];
      const k = slotStat[s];
      if (k < 0) {
        keep(slotPrev[s] as Entry, dirRel, pmode); // journal: nothing reported about it since the cached scan
        continue;
      }
      if (k >= from + st.length / STAT_FIELDS) {
        from = k;
        st = await lstatMany(rels.slice(k, k + STAT_CHUNK), root);
      }
      const o = (k - from) * STAT_FIELDS;
      if (st[o + 5] !== 0) {
        // Missing or failed: lstat again here. Skip it only when its directory no longer lists it; when
        // a fresh listing holds it again (renamed away and back: `mv f f.tmp && mv f.tmp f`), lstat again.
        let again: fs.Stats | undefined;
        for (let tries = 1; !again; tries++) {
          try {
            again = fs.lstatSync(absOf(k));
          } catch (err) {
            if (!isErrno(err, 'ENOENT') || tries >= 3) throw fileError(absOf(k), err);
            if (goneFromDir(relisted, ...splitAbs(absOf(k)))) break;
          }
        }
        if (!again) {
          dirty.add(dirRel);
          continue; // vanished during the walk
        }
        st[o] = again.mode;
        st[o + 1] = again.size;
        st[o + 2] = again.mtimeMs;
        st[o + 3] = again.ctimeMs;
        st[o + 4] = again.ino;
        st[o + 5] = 0;
        st[o + 6] = again.nlink;
      }
      if ((st[o] & 0o170000) !== 0o040000 && isTempName(rels[k].slice(rels[k].lastIndexOf('/') + 1))) {
        temps.push(rels[k]); // our own temp file (a restore or a state write in progress or interrupted)
        partial.add(dirRel);
        dirty.add(dirRel);
        continue;
      }
      if ((st[o] & 0o170000) === 0o100000 && st[o + 6] > 1) {
        linked.add(rels[k]);
        if (ch && !ch.linked?.has(rels[k])) newLink = true; // its other names raised no event: full walk
      }
      const pe = slotPrev[s];
      const same = unchanged(pe, prevStart, st, o);
      if (same) {
        keep(same, dirRel, pmode);
        continue;
      }
      const mode = st[o];
      const fmt = mode & 0o170000;
      const e: Entry = { p: rels[k], t: 'f', m: mode & 0o7777, s: 0, mt: st[o + 2], ct: st[o + 3], i: st[o + 4] };
      dirty.add(dirRel);
      if (fmt === 0o040000) {
        e.t = 'd';
        dirIndex.set(e.p, entries.length);
        // journal: a directory that is new here (or another inode) is read whole
        const whole = !ch || pmode === FULL || ch.trees.has(e.p) || !pe || pe.t !== 'd' || pe.i !== e.i;
        next.push({ rel: e.p, mode: whole ? FULL : LIST });
      } else if (fmt === 0o120000) {
        e.t = 'l';
        try {
          e.l = fs.readlinkSync(absOf(k));
        } catch (err) {
          if (isErrno(err, 'ENOENT') && goneFromDir(relisted, ...splitAbs(absOf(k)))) continue; // vanished during the walk
          throw fileError(
            absOf(k),
            isErrno(err, 'EINVAL') ? new Error('it stopped being a symlink during the scan; try again') : err,
          );
        }
        e.s = st[o + 1];
      } else if (fmt === 0o100000) {
        e.s = st[o + 1];
        let h: string | undefined;
        if (ch) h = hashFrom(pe, e, prevStart);
        // the first cache by directory (pe), any further ones (diff, restore) by path
        else
          for (let c = 0; c < caches.length && !h; c++)
            h = hashFrom(c === 0 && prev ? pe : caches[c].entries.get(e.p), e, caches[c].scanStartMs);
        if (!h && opts.known) h = opts.known(e);
        if (h) e.h = h;
        else toHash.push(e);
        fresh.push(e);
        const was = pe;
        if (was?.t === 'f' && was.h) freshWas.set(e, was.h);
      } else {
        skipped++; // socket, fifo, device: not captured (docs/dir-backend.md)
        partial.add(dirRel);
        continue;
      }
      entries.push(e);
      parents.push(dirRel);
    }
    level = next;
    opts.onScan?.(entries.length);
  }
  opts.onScan?.(entries.length);
  for (const rel of partial) {
    const k = dirIndex.get(rel);
    if (k !== undefined && !entries[k].x) {
      entries[k] = { ...entries[k], x: 1 }; // a copy: entries of the previous manifest are shared
      dirty.add(parents[k]);
    }
  }

  let newBytes = 0;
  let done = 0;
  const gone = new Set<Entry>();
  await opts.onHashStart?.(toHash.length);
  await mapLimit(toHash, opts.concurrency ?? 8, async (e) => {
    throwIfAborted(opts.signal, abortWhat);
    const abs = root + '/' + e.p;
    try {
      const r = await opts.hashFile(abs, e.s);
      e.h = r.hash;
      if (r.size !== undefined) e.s = r.size;
      newBytes += r.newBytes;
    } catch (err) {
      if (isErrno(err, 'ENOENT') && goneFromDir(relisted, ...splitAbs(abs)))
        gone.add(e); // deleted during the scan (its directory is dirty below)
      else if (err instanceof AgentKeepError) throw err;
      else throw fileError(abs, err);
    }
    opts.onHash?.(++done, toHash.length);
  });
  let out = entries;
  let outParents = parents;
  if (gone.size) {
    out = [];
    outParents = [];
    for (let k = 0; k < entries.length; k++) {
      if (gone.has(entries[k])) dirty.add(parents[k]);
      else {
        out.push(entries[k]);
        outParents.push(parents[k]);
      }
    }
  }
  let bytes = 0;
  for (const e of out) if (e.t === 'f') bytes += e.s;
  const freshOut = gone.size ? fresh.filter((e) => !gone.has(e)) : fresh;
  return {
    linked,
    newLink,
    freshWas,
    entries: out,
    rootMode,
    scanStartMs,
    bytes,
    newBytes,
    hashed: toHash.length,
    skipped,
    temps,
    fresh: freshOut,
    parents: outParents,
    dirty,
  };
}
