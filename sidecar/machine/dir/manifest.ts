/**
 * Manifests of the `dir` backend: one JSON file per snapshot at
 * `<stateDir>/dir/<targetKey>/<snapshotId>.json`, listing every entry of the tree.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { AgentKeepError } from '../../core/errors';
import { isErrno, writeFileAtomic } from '../../core/fsutil';

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
  h?: string;
  l?: string;
  /**
   * Directories only: 1 when its listing held entries the snapshot leaves out (our temp files,
   * sockets, FIFOs, devices), so the next scan re-reads it instead of reusing the listing.
   */
  x?: 1;
}

/** A snapshot manifest. */
export interface Manifest {
  v: 1;
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
  entries: Entry[];
}

/** Tolerance for coarse kernel file timestamps (a file changed within this window of a scan is re-hashed next time). */
export const RACY_MS = 50;

/** In-memory cache of parsed manifests, valid while the file's (size, mtime, inode) are unchanged. */
const cache = new Map<string, { m: Manifest; sig: string }>();
const CACHE_MAX = 4;

async function signature(file: string): Promise<string | undefined> {
  try {
    const st = await fs.stat(file);
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

/** Write a manifest atomically (and keep it in the in-memory cache). */
export async function writeManifest(file: string, m: Manifest): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  await writeFileAtomic(file, manifestJson(m));
  await remember(file, m);
}

function bad(file: string, why: string): AgentKeepError {
  return new AgentKeepError(
    'CorruptSnapshot',
    `The snapshot manifest ${file} is damaged (${why}).`,
    'Pick another restore point, or delete this one.',
  );
}

/**
 * Read a manifest.
 * @returns undefined when the file does not exist
 * @throws AgentKeepError CorruptSnapshot for unparsable JSON or a wrong shape.
 */
export async function readManifest(file: string): Promise<Manifest | undefined> {
  const hit = cache.get(file);
  if (hit && hit.sig === (await signature(file))) return hit.m;
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (e) {
    if (isErrno(e, 'ENOENT')) return undefined;
    throw e;
  }
  let m: Manifest;
  try {
    m = JSON.parse(text) as Manifest;
  } catch (e) {
    throw bad(file, (e as Error).message);
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

/** Drop a manifest from the in-memory cache (after delete). */
export function forgetManifest(file: string): void {
  cache.delete(file);
}
