/**
 * The object index of one dir target: `dir/<targetKey>/.index.json` holds, for the manifests of
 * the target, every object they name with its size and how many manifests name it, and each
 * manifest's own size in bytes (format 2: its trees are objects). Delete subtracts the deleted
 * manifest; create does not update it (the size-cap check after a create uses HeldBound below, and
 * this index only near the cap), so it is rebuilt by the next reader after creates.
 *
 * The index is a cache: it records the manifest ids it covers, and a reader whose listing of the
 * manifests differs (a create killed between manifest and index, two writers racing, an older
 * version that did not keep one) rebuilds it from the manifests. Written atomically, not fsynced
 * (a lost index is rebuilt).
 */
import { appendFileSync, promises as fs, readFileSync, rmSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { writeFileAtomic } from '../../core/fsutil';
import type { Manifest } from './manifest';

/** File name of the index inside the target's manifest directory (a dot file: never a manifest). */
export const INDEX_NAME = '.index.json';

interface IndexFile {
  v: 1;
  /** Manifest id -> bytes of its file. */
  manifests: Record<string, number>;
  /** Object hash -> [size in bytes, number of manifests naming it]. */
  objects: Record<string, [number, number]>;
}

/** The distinct objects of one manifest: hash -> size. */
function objectsOfManifest(m: Manifest): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of m.entries) if (e.h) out.set(e.h, e.t === 'd' ? (e.z ?? 0) : e.s);
  if (m.tree) out.set(m.tree, m.treeSize ?? 0);
  return out;
}

/** What the index answers: distinct objects (hash -> size) and the bytes of the manifests. */
export interface HeldObjects {
  objects: Map<string, number>;
  manifestBytes: number;
}

/** The object index of one target's manifest directory. */
export class ObjectIndex {
  constructor(
    private readonly dir: string,
    /** Ids of the manifests present now. */
    private readonly listIds: () => Promise<string[]>,
    /** Read a manifest (undefined when gone). */
    private readonly read: (id: string) => Promise<Manifest | undefined>,
  ) {}

  private get file(): string {
    return path.join(this.dir, INDEX_NAME);
  }

  private async load(): Promise<IndexFile | undefined> {
    try {
      const x = JSON.parse(await fs.readFile(this.file, 'utf8')) as IndexFile;
      return x && x.v === 1 && x.manifests && x.objects ? x : undefined;
    } catch {
      return undefined;
    }
  }

  private async save(x: IndexFile): Promise<void> {
    await writeFileAtomic(this.file, JSON.stringify(x), { durable: false }).catch(() => undefined); // a cache: rebuilt when lost
  }

  private static sameIds(x: IndexFile, ids: string[]): boolean {
    const have = Object.keys(x.manifests);
    if (have.length !== ids.length) return false;
    return ids.every((id) => Object.prototype.hasOwnProperty.call(x.manifests, id));
  }

  private static add(x: IndexFile, id: string, m: Manifest, bytes: number): void {
    x.manifests[id] = bytes;
    for (const [h, size] of objectsOfManifest(m)) {
      const o = x.objects[h];
      if (o) o[1]++;
      else x.objects[h] = [size, 1];
    }
  }

  private async manifestBytes(id: string): Promise<number> {
    return (await fs.stat(path.join(this.dir, `${id}.json`)).catch(() => undefined))?.size ?? 0;
  }

  /** Build the index from every manifest (after a mismatch). Damaged manifests count with their bytes only. */
  private async rebuild(): Promise<IndexFile> {
    const x: IndexFile = { v: 1, manifests: {}, objects: {} };
    for (const id of await this.listIds()) {
      const m = await this.read(id).catch(() => undefined);
      const bytes = await this.manifestBytes(id);
      if (m) ObjectIndex.add(x, id, m, bytes);
      else x.manifests[id] = bytes;
    }
    await this.save(x);
    return x;
  }

  /** The index, rebuilt when it does not cover exactly the manifests present. */
  private async current(): Promise<IndexFile> {
    const [x, ids] = await Promise.all([this.load(), this.listIds()]);
    if (x && ObjectIndex.sameIds(x, ids)) return x;
    return this.rebuild();
  }

  /** Forget manifest `id` (about to be deleted; `m` its content when it could be read). */
  async removed(id: string, m: Manifest | undefined): Promise<void> {
    const x = await this.load();
    if (!x || x.manifests[id] === undefined) return;
    if (!m) {
      await fs.rm(this.file, { force: true }).catch(() => undefined); // cannot subtract: rebuilt by the next reader
      return;
    }
    delete x.manifests[id];
    for (const h of objectsOfManifest(m).keys()) {
      const o = x.objects[h];
      if (!o) continue;
      if (--o[1] <= 0) delete x.objects[h];
    }
    await this.save(x);
  }

  /** Distinct objects of all the target's manifests, and the manifests' bytes. */
  async held(): Promise<HeldObjects> {
    const x = await this.current();
    const objects = new Map<string, number>();
    for (const [h, [size]] of Object.entries(x.objects)) objects.set(h, size);
    let manifestBytes = 0;
    for (const b of Object.values(x.manifests)) manifestBytes += b;
    for (const f of [this.file, path.join(this.dir, HELD_NAME), path.join(this.dir, HELD_LOG_NAME)])
      manifestBytes += (await fs.stat(f).catch(() => undefined))?.size ?? 0;
    return { objects, manifestBytes };
  }
}

/** File name of the held-bytes summary inside the target's manifest directory (a dot file: never a manifest). */
export const HELD_NAME = '.held.json';

/**
 * File name of the held-bytes log next to it: one JSON line `[id, parent, addedBytes, fullBytes]`
 * appended per create (each after a newline, so a line torn by a crash ends where the next begins) (no new file per create: rewriting the summary made a new inode every time),
 * folded into HELD_NAME once it is heldTuning.logMax bytes long.
 */
export const HELD_LOG_NAME = '.held.log';

/** Tuning (tests make it smaller). `logMax`: bytes of the held-bytes log at which a create folds it into the summary. */
export const heldTuning = { logMax: 16 * 1024 };

interface HeldFile {
  v: 1;
  /** Manifest id -> [parent id ('' for none), bytes of the objects it named that its parent did not, bytes of all it names]. */
  m: Record<string, [string, number, number]>;
}

/** Whether `r` is a record of the summary: [parent id, added bytes, full bytes]. */
function isRecord(r: unknown): r is [string, number, number] {
  return Array.isArray(r) && typeof r[0] === 'string' && typeof r[1] === 'number' && typeof r[2] === 'number';
}

/**
 * An upper bound of what a target's snapshots hold, without reading any manifest: per snapshot the
 * bytes of the objects it named that its parent (the stat cache of its create) did not, recorded by
 * create. Every object of a snapshot is in its parent or among those bytes, so the sum over the
 * snapshots (a snapshot whose parent is gone, or that the summary does not know, counts all its
 * bytes) is never below the distinct objects they hold. The size-cap check after a create uses it
 * and reads the exact object index only when the bound comes near the cap. A cache, not fsynced: a
 * lost or torn record only makes the bound larger.
 *
 * Stored as `.held.json` (the summary, as older versions write and read it) plus `.held.log`
 * (HELD_LOG_NAME: one line appended per create, folded into the summary every heldTuning.logMax bytes).
 * A record is a fact about one snapshot id that never changes, so the two are merged in any order;
 * a line another process appends while the log is folded may be lost (its snapshot then counts all
 * its bytes). An older version ignores the log (its bound is larger) and may rewrite the summary
 * without those records; the log's lines stay valid. Synchronous calls: two small files.
 */
export class HeldBound {
  constructor(private readonly dir: string) {}

  private get file(): string {
    return path.join(this.dir, HELD_NAME);
  }

  private get log(): string {
    return path.join(this.dir, HELD_LOG_NAME);
  }

  /** The summary with the log's records merged in (missing or damaged parts: left out). */
  private load(): HeldFile {
    let x: HeldFile = { v: 1, m: {} };
    try {
      const y = JSON.parse(readFileSync(this.file, 'utf8')) as HeldFile;
      if (y && y.v === 1 && y.m && typeof y.m === 'object') x = y;
    } catch {
      /* missing or damaged: start again */
    }
    let text = '';
    try {
      text = readFileSync(this.log, 'utf8');
    } catch {
      /* no log */
    }
    for (const line of text.split('\n')) {
      if (!line) continue;
      try {
        const r = JSON.parse(line) as unknown;
        if (Array.isArray(r) && typeof r[0] === 'string' && isRecord(r.slice(1)))
          x.m[r[0]] = r.slice(1) as [string, number, number];
      } catch {
        /* a torn line (a crash while appending): that snapshot counts all its bytes */
      }
    }
    return x;
  }

  /**
   * Record snapshot `id` (just written): its parent, the bytes it added (new objects, counted once
   * by hash) and the bytes of everything it names (contents and trees): one line appended to the
   * log. When the log has reached heldTuning.logMax bytes it is folded into the summary, keeping only the
   * records of `live` (the snapshot ids present; a function is called only then).
   */
  async added(
    id: string,
    parent: string | undefined,
    addedBytes: number,
    fullBytes: number,
    live: string[] | (() => string[] | Promise<string[]>),
  ): Promise<void> {
    try {
      // (the newline first: a line torn by a crash, with no newline of its own, does not swallow this one)
      appendFileSync(this.log, '\n' + JSON.stringify([id, parent ?? '', addedBytes, fullBytes]), { mode: 0o600 });
      if ((statSync(this.log, { throwIfNoEntry: false })?.size ?? 0) < heldTuning.logMax) return;
      const x = this.load();
      const keep = new Set(typeof live === 'function' ? await live() : live);
      for (const k of Object.keys(x.m)) if (!keep.has(k)) delete x.m[k];
      await writeFileAtomic(this.file, JSON.stringify(x), { durable: false });
      rmSync(this.log, { force: true });
    } catch {
      /* a cache: the bound is only larger without it */
    }
  }

  /**
   * The bound, in bytes, for snapshots `ids`. A snapshot whose parent is not among `ids` (or that
   * the summary does not know) counts `full(id)`: at least every object it names.
   */
  async bound(ids: string[], full: (id: string) => Promise<number>): Promise<number> {
    const x = this.load();
    const live = new Set(ids);
    let total = 0;
    for (const id of ids) {
      const r = x.m[id];
      total += r && r[0] && live.has(r[0]) ? r[1] : typeof r?.[2] === 'number' ? r[2] : await full(id);
    }
    return total;
  }
}
