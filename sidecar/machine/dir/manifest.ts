/**
 * Manifests of the `dir` backend: one JSON file per snapshot at
 * `<stateDir>/dir/<targetKey>/<snapshotId>.json`. Format 2 (written since issue 14) holds the
 * snapshot's facts and the hash of its root tree (tree.ts: one object per directory in the object
 * store); format 1 (older versions) lists every entry of the tree in the file itself. Both are read
 * into the same in-memory Manifest, so every restore point stays restorable.
 */
import { mkdirSync, promises as fs, statSync } from 'node:fs';
import * as path from 'node:path';
import { AgentKeepError } from '../../core/errors';
import { fsyncDir, isErrno, writeFileAtomic } from '../../core/fsutil';
import { readTreeEntries } from './tree';

/** Entry type: regular file, directory, symbolic link. */
export type EntryType = 'f' | 'd' | 'l';

/**
 * One entry of a snapshot. Short keys keep manifests of large trees small.
 * p: POSIX path relative to the target root; t: type; m: permission bits (mode & 0o7777);
 * s: size in bytes; mt/ct: mtime/ctime in ms (fractional, from the ns timestamps); i: inode;
 * h: sha256 hex of the content (files); l: link target (symlinks, as stored in the link).
 */
export interface Entry {
  p: string;
  t: EntryType;
  m: number;
  s: number;
  mt: number;
  ct: number;
  i: number;
  /** Files: sha256 of the content; directories (format 2): hash of the directory's tree object. */
  h?: string;
  l?: string;
  /** Directories (format 2): bytes of the tree object `h`. */
  z?: number;
  /**
   * Directories only: 1 when its listing held entries the snapshot leaves out (our temp files,
   * sockets, FIFOs, devices), so the next scan re-reads it instead of reusing the listing.
   */
  x?: 1;
}

/** A snapshot manifest. */
export interface Manifest {
  /** 1: entries in the file; 2: entries in tree objects, the root named by `tree`. */
  v: 1 | 2;
  backend: 'dir';
  target: string;
  id: string;
  createdAt: string;
  /** Wall-clock ms when the scan started: entries with mt at or after (scanStartMs - RACY_MS) are not trusted by the stat cache. */
  scanStartMs: number;
  /** Permission bits of the target root itself. */
  rootMode: number;
  /** Sum of file sizes. */
  bytes: number;
  /** Format 2: hash of the root tree object, its bytes, and the bytes of all the snapshot's distinct trees. */
  tree?: string;
  treeSize?: number;
  treeBytes?: number;
  /** Every entry, level by level (format 2: read from the trees, never written to the file). */
  entries: Entry[];
}

/** Tolerance for coarse kernel file timestamps (a file changed within this window of a scan is re-hashed next time). */
export const RACY_MS = 50;

/** In-memory cache of parsed manifests, valid while the file's (size, mtime, inode) are unchanged. */
const cache = new Map<string, { m: Manifest; sig: string }>();
const CACHE_MAX = 4;

async function signature(file: string): Promise<string | undefined> {
  try {
    // (one stat(2), synchronously: a restore checks 5-6 manifests, a create 2-3, and a thread-pool
    // round trip each cost more than the call)
    const st = statSync(file);
    return `${st.size}:${st.mtimeMs}:${st.ino}`;
  } catch {
    return undefined;
  }
}

async function remember(file: string, m: Manifest): Promise<void> {
  const sig = await signature(file);
  cache.delete(file);
  if (!sig) return;
  cache.set(file, { m, sig });
  while (cache.size > CACHE_MAX) cache.delete(cache.keys().next().value as string);
}

/** JSON text of entries, kept for entries reused unchanged by the next scan (they are immutable). */
const entryJson = new WeakMap<Entry, string>();

/** The manifest as JSON; entries reused from an earlier manifest reuse their JSON text. */
export function manifestJson(m: Manifest): string {
  const { entries, ...head } = m;
  const parts = new Array<string>(entries.length);
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    let j = entryJson.get(e);
    if (j === undefined) {
      j = JSON.stringify(e);
      entryJson.set(e, j);
    }
    parts[i] = j;
  }
  const h = JSON.stringify(head);
  return `${h.slice(0, -1)},"entries":[${parts.join(',')}]}`;
}

/** The file text of a format-2 manifest: everything but the entries (they are in the trees). */
export function manifestHeadJson(m: Manifest): string {
  const { entries: _entries, ...head } = m;
  return JSON.stringify(head);
}

/**
 * Write a manifest atomically (format 2: its head; format 1: with every entry), and keep it in the
 * in-memory cache. Its content is on disk (fsync) when this resolves; the fsync of its directory,
 * which makes the new name durable, is returned as `durable` and runs meanwhile, so the caller can
 * write the journal entry that names the snapshot at the same time (it must be renamed into place
 * only after `durable`: SnapshotInfo.durable).
 * @param beforeRename awaited before the manifest is renamed into place: what must be in place first
 *   (the pack holding its objects, complete and fsynced: ObjectStore.commitPack; its directory's fsync
 *   is for the caller to wait for with `durable`, before anything lists the snapshot)
 * @param opts.remember false: `m` is not kept in the in-memory cache (a streamed create's manifest,
 *   which holds no entries: the next read of the file reads them from its trees)
 * @returns `durable`: resolves (never rejects) once the manifest's name is durable too
 */
export async function writeManifest(
  file: string,
  m: Manifest,
  beforeRename?: () => Promise<void>,
  opts: { remember?: boolean } = {},
): Promise<{ durable: Promise<void> }> {
  mkdirSync(path.dirname(file), { recursive: true }); // (synchronously: one mkdir(2), EEXIST as a rule)
  await writeFileAtomic(file, m.v === 2 ? manifestHeadJson(m) : manifestJson(m), { syncDir: false, beforeRename });
  const durable = fsyncDir(path.dirname(file));
  if (opts.remember === false) cache.delete(file);
  else await remember(file, m);
  return { durable };
}

function bad(file: string, why: string): AgentKeepError {
  return new AgentKeepError(
    'CorruptSnapshot',
    `The snapshot manifest ${file} is damaged (${why.replace(/\s+/g, ' ').trim()}).`,
    'Pick another restore point, or delete this one.',
  );
}

/** The object store of the state dir a manifest file belongs to (`<stateDir>/dir/<key>/<id>.json` -> `<stateDir>/objects`). */
export function objectsDirOf(manifestFile: string): string {
  return path.join(path.dirname(path.dirname(path.dirname(manifestFile))), 'objects');
}

/**
 * The manifest file as it is: the cached manifest while the file is unchanged (`cached`), else its
 * JSON parsed but not checked.
 * @returns undefined when the file does not exist
 * @throws AgentKeepError CorruptSnapshot for unparsable JSON; the read's own error otherwise
 */
async function loadManifestFile(
  file: string,
): Promise<{ cached: true; m: Manifest } | { cached: false; m: ManifestHead } | undefined> {
  const hit = cache.get(file);
  if (hit && hit.sig === (await signature(file))) return { cached: true, m: hit.m };
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (e) {
    if (isErrno(e, 'ENOENT')) return undefined;
    throw e;
  }
  try {
    return { cached: false, m: JSON.parse(text) as ManifestHead };
  } catch (e) {
    throw bad(file, (e as Error).message);
  }
}

/**
 * A parsed manifest checked and completed (format 2: its entries read from the trees), then cached.
 * @throws AgentKeepError CorruptSnapshot for a wrong shape, or a missing or damaged tree
 */
async function completeManifest(file: string, head: ManifestHead): Promise<Manifest> {
  const m = head as Manifest;
  if (m && m.v === 2) {
    if (typeof m.tree !== 'string') throw bad(file, 'no root tree');
    m.entries = readTreeEntries(objectsDirOf(file), m.tree, `of ${file}`);
    await remember(file, m);
    return m;
  }
  if (!m || m.v !== 1 || !Array.isArray(m.entries)) throw bad(file, 'unknown format');
  for (const e of m.entries) {
    if (!e || typeof e.p !== 'string' || !e.p || e.p.startsWith('/') || e.p.split('/').includes('..'))
      throw bad(file, `bad path ${JSON.stringify(e?.p)}`);
    if (e.t === 'f' ? !/^[0-9a-f]{64}$/.test(e.h ?? '') : e.t === 'l' ? typeof e.l !== 'string' : e.t !== 'd')
      throw bad(file, `bad entry ${e.p}`);
    if (typeof e.m !== 'number') throw bad(file, `bad mode of ${e.p}`);
  }
  await remember(file, m);
  return m;
}

/**
 * Read a manifest (format 1 or 2; format 2 reads its trees from the object store).
 * @returns undefined when the file does not exist
 * @throws AgentKeepError CorruptSnapshot for unparsable JSON, a wrong shape, or a missing or damaged tree.
 */
export async function readManifest(file: string): Promise<Manifest | undefined> {
  const r = await loadManifestFile(file);
  if (!r) return undefined;
  return r.cached ? r.m : completeManifest(file, r.m);
}

/** A manifest's head: for format 2 without its entries (read from the trees only when needed). */
export type ManifestHead = Omit<Manifest, 'entries'> & { entries?: Entry[] };

/**
 * Read a manifest's head: the whole manifest when it is in the in-memory cache or in format 1, else
 * (format 2) the file alone, without reading its trees.
 * @returns undefined when the file does not exist
 * @throws AgentKeepError CorruptSnapshot for unparsable JSON or a wrong shape.
 */
export async function readManifestHead(file: string): Promise<ManifestHead | undefined> {
  const r = await loadManifestFile(file);
  if (!r) return undefined;
  if (r.cached) return r.m;
  const m = r.m;
  if (m && m.v === 2 && typeof m.tree === 'string' && !m.entries) return m;
  return completeManifest(file, m);
}

/** Drop a manifest from the in-memory cache (after delete). */
export function forgetManifest(file: string): void {
  cache.delete(file);
}
