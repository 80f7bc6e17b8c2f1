/**
 * The `dir` backend (embedded default): restore points of a directory tree, content-addressed and
 * deduplicated in the state dir's shared object store. Each snapshot is a manifest (see manifest.ts);
 * file contents are objects (sha256). Restore rewrites only what differs, each file as temp + rename
 * in its own directory; symlinks are restored as links (never followed), modes and mtimes are set.
 * Temp files of an interrupted restore are never captured and are removed by the next restore.
 * See docs/dir-backend.md.
 */
import * as fsSync from 'node:fs';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { createHash } from 'node:crypto';
import { deleteAction, listAction } from '../../core/actions';
import { AgentKeepError } from '../../core/errors';
import {
  diskFullError,
  isErrno,
  isNoSpace,
  mapLimit,
  nameTooLongError,
  tempNameFor,
  throwIfAborted,
} from '../../core/fsutil';
import type { ParsedTarget } from '../../core/target';
import type { StateLayout } from '../../core/state';
import type { TargetDescription } from '../../protocol';
import { hashFile, SMALL_FILE_LIMIT, type PackWriter } from '../../core/objects';
import type {
  BackendContext,
  BackendFactory,
  BackendProgress,
  MachineBackend,
  MachineChanges,
  PathFilter,
  SnapshotFile,
  SnapshotInfo,
  SnapshotMeta,
} from '../types';
import { tooLarge } from '../../core/compare';
import { parseLocalPathTarget, type LocalPathOptions } from '../localPath';
import {
  forgetManifest,
  objectsDirOf,
  readManifest,
  readManifestHead,
  writeManifest,
  type Entry,
  type Manifest,
  type ManifestHead,
} from './manifest';
import { HELD_LOG_NAME, HELD_NAME, HeldBound, INDEX_NAME, ObjectIndex } from './usage';
import { journalFor, journalOffByEnv, type ChangeJournal, type Changed } from './journal';
import { scanTree, statCacheOf } from './scan';
import { statWorkersOn } from './statpool';
import { envSwitch } from '../../core/envWarn';
import { buildTrees, childrenByDir, treeDifference } from './tree';
import { streamCreate } from './stream';

const CONCURRENCY = 8;
/** At most this many bytes of packed objects read by a restore's check are kept to be written as they are (prepareRestore). */
const KNOWN_MAX = 16 * 1024 * 1024;

/** Directory -> entries of a format-2 snapshot in memory, built once when a restore needs it. */
const kidsCache = new WeakMap<Manifest, Map<string, Entry[]>>();
/** The directory of each entry of a snapshot made by this process (its scan's `parents`). */
const parentsOf = new WeakMap<Manifest, string[]>();
function kidsOf(m: Manifest): Map<string, Entry[]> {
  let k = kidsCache.get(m);
  if (!k) {
    k = childrenByDir(m.entries, parentsOf.get(m));
    kidsCache.set(m, k);
  }
  return k;
}

/**
 * A file a restore wrote, as lstat saw it right after the write (size, mtime, ctime, inode, device;
 * times in ms as Stats' *Ms), with the content hash it was written from.
 */
export interface WrittenFile {
  h: string;
  s: number;
  mt: number;
  ct: number;
  i: number;
  dev: number;
}

/**
 * What one restore wrote: target-relative path -> WrittenFile, and `stampMs`, the moment the record
 * was made as the kernel stamps it: the ctime of the target's root right after the restore's last
 * write (its final chmod), on the root's device `dev` (the same clock and granularity as the files).
 */
export interface RestoreRecord {
  files: Map<string, WrittenFile>;
  stampMs: number;
  dev: number;
}

/**
 * The restore records of this process: per target (its manifest directory) what its last restore
 * wrote. The next create of that target takes it (one create each, then it is dropped) and trusts a
 * record instead of reading and hashing the file again (restoreRecordHash), so the files a restore
 * wrote are not re-read by the create after it. In process only (a one-shot CLI process reads them).
 */
const restoreRecords = new Map<string, RestoreRecord>();

/**
 * The content hash of `e` (a fresh lstat of a regular file) from the restore record `r`, or undefined
 * when the file must be read. Git's racy-timestamp rule: its size, mtime, ctime and inode must be the
 * recorded ones, on the root's device, and both times strictly older than the record's stamp (a kernel
 * timestamp taken after the last write, so it is at least one clock tick later than any ctime that
 * compares older: a change made after the stamp, in the same tick as the restore's write or not, gets a
 * ctime of at least the stamp and is seen; a file whose ctime equals the stamp is read again).
 */
export function restoreRecordHash(r: RestoreRecord | undefined, e: Entry): string | undefined {
  const w = r?.files.get(e.p);
  if (!r || !w || e.t !== 'f' || w.dev !== r.dev) return undefined;
  if (w.s !== e.s || w.mt !== e.mt || w.ct !== e.ct || w.i !== e.i) return undefined;
  return w.mt < r.stampMs && w.ct < r.stampMs ? w.h : undefined;
}

/** Record what a restore wrote at `abs` from object `h` (lstat right after the write; nothing when it is not a file now). */
function recordWritten(files: Map<string, WrittenFile>, rel: string, abs: string, h: string): void {
  const st = fsSync.lstatSync(abs, { throwIfNoEntry: false });
  if (!st?.isFile()) return;
  files.set(rel, { h, s: st.size, mt: st.mtimeMs, ct: st.ctimeMs, i: st.ino, dev: st.dev });
}

/** Whether two entries are the same for a restore (type, content, link target, mode). */
export function sameEntry(a: Entry, b: Entry): boolean {
  if (a.t !== b.t || a.m !== b.m) return false;
  if (a.t === 'f') return a.h === b.h;
  if (a.t === 'l') return a.l === b.l;
  return true;
}

/** Compare a snapshot's entries with the current ones. */
export function compareEntries(
  snap: Entry[],
  cur: Entry[],
  s: Map<string, Entry> = new Map(snap.map((e) => [e.p, e])),
  c: Map<string, Entry> = new Map(cur.map((e) => [e.p, e])),
): MachineChanges {
  const added: string[] = [];
  const removed: string[] = [];
  const changed: string[] = [];
  for (const e of cur) {
    const o = s.get(e.p);
    if (!o) added.push(e.p);
    else if (o !== e && !sameEntry(o, e)) changed.push(e.p);
  }
  for (const e of snap) if (!c.has(e.p)) removed.push(e.p);
  return { added: added.sort(), removed: removed.sort(), changed: changed.sort() };
}

/**
 * Whether creates of this backend are streamed (stream.ts, which lstats on the main thread): in a
 * one-shot process whose lstat runs on its main thread (the launcher's slim create, or
 * AGENTKEEP_STAT_WORKERS=0: statpool statWorkersOn; a process with the stat workers on walks level by
 * level on them, as before), or everywhere with AGENTKEEP_DIR_STREAM=1 (or true/on/yes; tests: the
 * dir suites run both ways), never with AGENTKEEP_DIR_STREAM=0 (or false/off/no); another value warns
 * once and keeps the default (core/envWarn.ts envSwitch).
 */
function streamedCreates(ctx: BackendContext): boolean {
  // (read as the other AGENTKEEP_* switches: 1/true/on/yes, 0/false/off/no, another value warns)
  const byDefault = ctx.oneShot === true && !statWorkersOn();
  return envSwitch(process.env, 'AGENTKEEP_DIR_STREAM', byDefault, 'the streamed create');
}

/** The dir backend for one target. */
export class DirBackend implements MachineBackend {
  readonly name = 'dir';
  readonly capabilities = { ramState: false, speedClass: 'fast', canRunWhileRunning: true, diff: true } as const;
  private readonly root: string;
  private readonly manifestDir: string;
  /** Objects all manifests of the target hold (usage.ts), for the size-cap check after a create. */
  private readonly index: ObjectIndex;
  /** Per snapshot the bytes it added to its parent (usage.ts), for the size-cap check's upper bound. */
  private readonly held: HeldBound;

  constructor(private readonly ctx: BackendContext) {
    this.root = ctx.target.path;
    this.manifestDir = path.join(ctx.layout.dirBackendRoot, ctx.target.key);
    this.index = new ObjectIndex(
      this.manifestDir,
      () => this.list(),
      (id) => readManifest(this.manifestPath(id)),
    );
    this.held = new HeldBound(this.manifestDir);
  }

  /** Path of a snapshot's manifest. */
  manifestPath(id: string): string {
    return path.join(this.manifestDir, `${id}.json`);
  }

  async check(): Promise<void> {
    await checkTargetExists(this.ctx.target);
  }

  /**
   * Read a snapshot's manifest.
   * @throws AgentKeepError CorruptSnapshot when it is missing or damaged.
   */
  async manifest(id: string): Promise<Manifest> {
    const m = await readManifest(this.manifestPath(id));
    if (!m) {
      const target = this.ctx.target.spec;
      throw new AgentKeepError(
        'CorruptSnapshot',
        `The snapshot data of ${id} is missing (${this.manifestPath(id)}).`,
        'Pick another restore point, or delete this one.',
        [listAction(target), deleteAction(target, id)],
      );
    }
    return m;
  }

  async verify(id: string, opts: { quick?: boolean } = {}): Promise<void> {
    if (!opts.quick) {
      await this.manifest(id);
      return;
    }
    if (!(await readManifestHead(this.manifestPath(id)))) await this.manifest(id); // (throws: missing)
  }

  private async manifestOrUndefined(id?: string): Promise<Manifest | undefined> {
    if (!id) return undefined;
    try {
      return await readManifest(this.manifestPath(id));
    } catch {
      return undefined; // a damaged parent only costs speed
    }
  }

  /** Our temp files found in the target by the last create (snapshot id -> target-relative paths); a restore removes them. */
  private strayTemps: { id: string; temps: string[] } | undefined;

  /** The change journal of this target, when the process keeps one (BackendContext.changeJournal). */
  private journal(): ChangeJournal | undefined {
    if (!this.ctx.changeJournal || journalOffByEnv()) return undefined;
    return journalFor(this.root, path.join(this.ctx.layout.locksDir, `${this.ctx.target.key}.barrier`));
  }

  /** What this object's restore wrote, until restoreSettled publishes it (restoreRecords). */
  private settling: { record: Map<string, WrittenFile>; rootMode: number } | undefined;

  /**
   * Publish the restore record with its stamp: the root's ctime right after a chmod to the mode the
   * restore gave it (no change, but the kernel stamps the ctime now: the same clock and granularity as
   * the files' ctimes). If the chmod fails the ctime is older, nothing compares older, and every file
   * is read again, as without a record.
   */
  restoreSettled(): void {
    const s = this.settling;
    this.settling = undefined;
    if (!s) return;
    try {
      fsSync.chmodSync(this.root, s.rootMode);
    } catch {
      /* an older stamp: see above */
    }
    const st = fsSync.lstatSync(this.root, { throwIfNoEntry: false });
    if (st) restoreRecords.set(this.manifestDir, { files: s.record, stampMs: st.ctimeMs, dev: st.dev });
  }

  /** The restore record this object's create took (restoreRecords), for its scans. */
  private written: RestoreRecord | undefined;

  /** How the last create of this backend object scanned (the journal's note, or "full walk"), for tests and AGENTKEEP_DEBUG. */
  lastScan = '';

  /** Scan the tree, storing new contents as objects. */
  private async scanAndStore(
    caches: Manifest[],
    skip: PathFilter | undefined,
    progress?: BackendProgress,
    signal?: AbortSignal,
    changed?: Changed,
    pack?: { w?: PackWriter },
  ) {
    const sc = statCacheOf(...caches);
    if (changed && caches[0]) sc[0].kids ??= kidsOf(caches[0]);
    // the files the last restore wrote (taken: one create uses it), trusted as restoreRecordHash says;
    // their objects must still be in the store (a delete and gc since then may have removed them)
    return scanTree(this.root, {
      caches: sc,
      changed,
      skip,
      known: this.knownFromRecord(),
      concurrency: CONCURRENCY,
      hashFile: (abs, size) => this.ctx.objects.putFile(abs, size, pack?.w),
      onScan: (n) => progress?.('scan', n),
      onHash: (d, t) => progress?.('store', d, t),
      signal,
      abortWhat: 'the restore point was not created; nothing in the target was changed',
    });
  }

  async create(
    snapshotId: string,
    opts: {
      parentId?: string;
      progress?: BackendProgress;
      signal?: AbortSignal;
      built?: () => void;
      meta?: SnapshotMeta;
    },
  ): Promise<SnapshotInfo> {
    await this.check();
    // the files the last restore wrote: this create uses the record, and drops it (one create each)
    this.written = restoreRecords.get(this.manifestDir);
    restoreRecords.delete(this.manifestDir);
    const journal = this.journal();
    // In a one-shot process (the CLI: BackendContext.oneShot) the full walk is streamed directory by
    // directory against the parent's trees (stream.ts: O(directory), not O(tree) in memory), and
    // nothing of it is kept. Not for a restore's undo point: the restore right after it compares with
    // its entries (kidsOf), so that create keeps them, as before; nor with a format-1 parent (no trees
    // to stream). A process that lives on keeps its last snapshot's entries for its next create.
    let parent: Manifest | undefined;
    if (streamedCreates(this.ctx) && !journal && opts.meta?.kind !== 'pre-restore') {
      const head = await this.headOrUndefined(opts.parentId);
      if (!head || (head.v === 2 && typeof head.tree === 'string')) {
        this.lastScan = 'full walk: no change journal in this process';
        if (process.env.AGENTKEEP_DEBUG) process.stderr.write(`agentkeep dir ${this.root}: ${this.lastScan}\n`);
        return this.createStreamed(snapshotId, head, opts);
      }
      parent = head as Manifest; // format 1: read whole (readManifestHead completes it)
    } else parent = await this.manifestOrUndefined(opts.parentId);
    const take = journal ? await journal.take(parent ? opts.parentId : undefined) : undefined;
    this.lastScan = take?.note ?? 'full walk: no change journal in this process';
    if (process.env.AGENTKEEP_DEBUG) process.stderr.write(`agentkeep dir ${this.root}: ${this.lastScan}\n`);
    try {
      const info = await this.createFrom(snapshotId, parent, opts, take?.changed);
      journal?.commit(snapshotId, info.linked);
      return info.info;
    } catch (e) {
      journal?.abandon();
      throw e;
    } finally {
      this.building = undefined; // (written and cached by now, or failed)
    }
  }

  /** A manifest's head (format 2: without its trees), or undefined when missing or damaged (only costs speed). */
  private async headOrUndefined(id?: string): Promise<ManifestHead | undefined> {
    if (!id) return undefined;
    try {
      return await readManifestHead(this.manifestPath(id));
    } catch {
      return undefined; // a damaged parent only costs speed
    }
  }

  /**
   * The create of a process without change journal: streamCreate (stream.ts) walks the tree against
   * the parent's trees and stores the new trees as it goes, keeping no entry to the end. The manifest
   * it writes is the one createStoring writes from the same tree and parent; its `entries` are read
   * from the trees only if something in this process asks for them (a getter, not kept otherwise).
   * Same order of writes as createStoring's (commitSnapshot), then (the caller) the journal entry.
   */
  private async createStreamed(
    snapshotId: string,
    parent: ManifestHead | undefined,
    opts: { parentId?: string; progress?: BackendProgress; signal?: AbortSignal },
  ): Promise<SnapshotInfo> {
    const objects = this.ctx.objects;
    const pack: { w?: PackWriter } = { w: await objects.openPack() };
    try {
      const file = this.manifestPath(snapshotId);
      const objectsDir = objectsDirOf(file);
      const abortWhat = 'the restore point was not created; nothing in the target was changed';
      const r = await streamCreate(this.root, {
        objectsDir,
        prev: parent?.tree ? { tree: parent.tree, scanStartMs: parent.scanStartMs } : undefined,
        hashFile: (abs, size) => objects.putFile(abs, size, pack.w),
        put: (b) => objects.putBuffer(b, pack.w),
        known: this.knownFromRecord(),
        concurrency: CONCURRENCY,
        onScan: (n) => opts.progress?.('scan', n),
        onHash: (d, t) => opts.progress?.('store', d, t),
        signal: opts.signal,
        abortWhat,
      });
      this.strayTemps = { id: snapshotId, temps: r.temps };
      // (entries not kept: the file is the head; a later read in this process reads the trees)
      const m = this.manifestOf(snapshotId, r, r, []);
      throwIfAborted(opts.signal, abortWhat);
      const full = r.bytes + r.treeBytes;
      if (!parent) fsSync.mkdirSync(this.manifestDir, { recursive: true });
      // (the order of a create's writes, as createStoring's)
      const { packed, durable } = await this.commitSnapshot(file, m, pack, false);
      // the size-cap summary: a cache, not fsynced (one line appended, usage.ts HeldBound)
      await this.held.added(snapshotId, parent ? opts.parentId : undefined, parent ? r.added : full, full, () =>
        this.list(),
      );
      if (packed) await objects.consolidatePacks();
      return { files: r.files, bytes: r.bytes, newBytes: r.newBytes, skipped: r.skipped, durable };
    } catch (e) {
      if (pack.w) await objects.dropPack(pack.w);
      throw e;
    }
  }

  /**
   * The hash of a file the last restore of this process wrote, for the next create's walk (scanTree
   * and streamCreate `known`): restoreRecordHash's verdict, and only while the object is still in
   * the store (a delete and gc since then may have removed it); undefined without a record.
   */
  private knownFromRecord(): ((e: Entry) => string | undefined) | undefined {
    const written = this.written;
    if (!written) return undefined;
    const objects = this.ctx.objects;
    return (e) => {
      const h = restoreRecordHash(written, e);
      return h && objects.hasSync(h) ? h : undefined;
    };
  }

  /**
   * A new snapshot's manifest (format 2), created now.
   * @param scan its walk: the scan's start (ms since the epoch, the racy rule's reference), the root's
   *   permission bits, the bytes of its files
   * @param trees its root tree's hash, that tree's size and the bytes of all its trees
   * @param entries every entry (the in-memory create), or none (the streamed create keeps none)
   */
  private manifestOf(
    snapshotId: string,
    scan: { scanStartMs: number; rootMode: number; bytes: number },
    trees: { tree: string; treeSize: number; treeBytes: number },
    entries: Entry[],
  ): Manifest {
    return {
      v: 2,
      backend: 'dir',
      target: this.ctx.target.spec,
      id: snapshotId,
      createdAt: new Date().toISOString(),
      scanStartMs: scan.scanStartMs,
      rootMode: scan.rootMode,
      bytes: scan.bytes,
      tree: trees.tree,
      treeSize: trees.treeSize,
      treeBytes: trees.treeBytes,
      entries,
    };
  }

  /**
   * Put a create's pack and manifest in place (docs/dir-backend.md "State-dir layout", the order of a
   * create's writes): the pack's fsync and the manifest's write and fsync run at the same time; the
   * manifest is renamed in only once the pack is (complete, fsynced, renamed into objects/pack/); the
   * fsyncs of both directories then run together (and, in the caller, with the journal entry's write
   * and fsync).
   * @param pack the create's pack writer (none open, or no object in it: the manifest alone); cleared
   *   once the pack is committed, so the caller's cleanup drops it only when it was not
   * @param remember false: the manifest is not kept in the in-memory cache (writeManifest)
   * @returns `packed`: a pack was written; `durable`: resolves once the names of both are durable (the
   *   journal entry is renamed into place only after it: SnapshotInfo.durable)
   * @throws the pack's or the manifest's write error (both settle first: a failed pack fails the
   *   manifest's rename, and its temp is removed)
   */
  private async commitSnapshot(
    file: string,
    m: Manifest,
    pack: { w?: PackWriter },
    remember = true,
  ): Promise<{ packed: boolean; durable: Promise<void> }> {
    const w = pack.w;
    const committing = w
      ? this.ctx.objects.commitPack(w)
      : Promise.resolve({ packed: false, durable: Promise.resolve() });
    const writing = writeManifest(
      file,
      m,
      async () => {
        await committing;
      },
      { remember },
    );
    const [c, mw] = await Promise.allSettled([committing, writing]);
    if (c.status === 'rejected') throw c.reason;
    pack.w = undefined;
    if (mw.status === 'rejected') throw mw.reason;
    const durable = Promise.all([c.value.durable, mw.value.durable]).then(() => undefined);
    return { packed: c.value.packed, durable };
  }

  private async createFrom(
    snapshotId: string,
    parent: Manifest | undefined,
    opts: { parentId?: string; progress?: BackendProgress; signal?: AbortSignal; built?: () => void },
    changed: Changed | undefined,
  ): Promise<{ info: SnapshotInfo; linked: Set<string> }> {
    // the small objects of every create go into one pack (core/packs.ts; loose when fewer than 2, core/objects.ts)
    const pack: { w?: PackWriter } = { w: await this.ctx.objects.openPack() };
    try {
      return await this.createStoring(snapshotId, parent, opts, changed, pack);
    } catch (e) {
      if (pack.w) await this.ctx.objects.dropPack(pack.w);
      throw e;
    }
  }

  private async createStoring(
    snapshotId: string,
    parent: Manifest | undefined,
    opts: { parentId?: string; progress?: BackendProgress; signal?: AbortSignal; built?: () => void },
    changed: Changed | undefined,
    pack: { w?: PackWriter },
  ): Promise<{ info: SnapshotInfo; linked: Set<string> }> {
    let r = await this.scanAndStore(parent ? [parent] : [], undefined, opts.progress, opts.signal, changed, pack);
    if (changed && r.newLink) {
      // a file got a second hard link: link(2) raises no event where its other names are, so the
      // journal cannot say whether they changed: walk the whole tree (its objects are stored already)
      this.lastScan = 'full walk: a file got a second hard link (its other names raise no event)';
      if (process.env.AGENTKEEP_DEBUG) process.stderr.write(`agentkeep dir ${this.root}: ${this.lastScan}\n`);
      r = await this.scanAndStore(parent ? [parent] : [], undefined, opts.progress, opts.signal, undefined, pack);
    }
    this.strayTemps = { id: snapshotId, temps: r.temps };
    // Trees (format 2): only directories that changed, and their ancestors, get a new tree object.
    const prevRoot = parent?.v === 2 && parent.tree ? { tree: parent.tree, treeSize: parent.treeSize ?? 0 } : undefined;
    const trees = await buildTrees(r, prevRoot, (b) => this.ctx.objects.putBuffer(b, pack.w));
    const m = this.manifestOf(snapshotId, r, trees, r.entries);
    throwIfAborted(opts.signal, 'the restore point was not created; nothing in the target was changed');
    parentsOf.set(m, r.parents);
    // (after buildTrees: it replaced the entries of changed directories by copies with their new tree)
    kidsCache.set(m, childrenByDir(m.entries, r.parents));
    // complete in memory: a restore may compare against it while its fsyncs run (prepareRestore)
    this.building = { id: snapshotId, m };
    try {
      opts.built?.();
    } catch {
      /* a failing listener must not break the create */
    }
    // What this snapshot names that its parent did not (the size-cap bound); O(changed files).
    let added = r.bytes + trees.treeBytes; // no parent: everything
    if (parent) {
      const seen = new Set<string>();
      added = 0;
      for (const e of r.fresh) {
        if (!e.h || r.freshWas.get(e) === e.h || seen.has(e.h)) continue;
        seen.add(e.h);
        added += e.s;
      }
      added += trees.addedTreeBytes;
    }
    const full = r.bytes + trees.treeBytes;
    // (into a directory that exists: with a parent manifest it does, it was just read there)
    if (!parent) fsSync.mkdirSync(this.manifestDir, { recursive: true });
    // The pack and the manifest (docs/dir-backend.md "State-dir layout", the order of a create's writes):
    // the pack's fsync and the manifest's write and fsync run at the same time; the manifest is renamed
    // in only once the pack is (complete, fsynced, renamed into objects/pack/); the fsyncs of both
    // directories then run together (and with the journal entry's write and fsync), and `durable`,
    // which the journal entry waits for before its rename, is both of them.
    const { packed, durable } = await this.commitSnapshot(this.manifestPath(snapshotId), m, pack);
    // the size-cap summary: a cache, not fsynced (one line appended, usage.ts HeldBound)
    await this.held.added(snapshotId, parent ? opts.parentId : undefined, added, full, () => this.list());
    // one create in about eight merges the small packs (amortised; core/objects.ts consolidatePacks)
    if (packed) await this.ctx.objects.consolidatePacks();
    return {
      info: { files: r.entries.length, bytes: r.bytes, newBytes: r.newBytes, skipped: r.skipped, durable },
      linked: r.linked,
    };
  }

  async list(): Promise<string[]> {
    try {
      // (one readdir, synchronously: a create and its size-cap check list the manifests)
      return fsSync
        .readdirSync(this.manifestDir)
        .filter((n) => n.endsWith('.json') && !n.startsWith('.'))
        .map((n) => n.slice(0, -5));
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return [];
      throw e;
    }
  }

  async delete(snapshotId: string): Promise<void> {
    const f = this.manifestPath(snapshotId);
    await this.index.removed(snapshotId, await this.manifestOrUndefined(snapshotId));
    forgetManifest(f);
    await fs.rm(f, { force: true });
  }

  /**
   * Distinct objects all snapshots of the target hold (hash -> size) and the bytes of its manifests,
   * from the object index (one file; rebuilt from the manifests when it is out of date).
   */
  async heldBound(points: Array<{ id: string; bytes: number }>): Promise<number> {
    const bytes = new Map(points.map((p) => [p.id, p.bytes]));
    // Not in the summary: the journal's bytes, plus the trees a format-2 manifest names (its small head).
    const full = async (id: string): Promise<number> => {
      const f = this.manifestPath(id);
      const st = await fs.stat(f).catch(() => undefined);
      let trees = 0;
      if (st && st.size < 65536) {
        const head = JSON.parse(await fs.readFile(f, 'utf8').catch(() => '{}')) as Partial<Manifest>;
        trees = head.v === 2 ? (head.treeBytes ?? Infinity) : 0;
      }
      return (bytes.get(id) ?? 0) + trees;
    };
    // the bound and the bytes of the manifest directory's files, read in parallel
    // (synchronous stats: a few dozen small calls, each cheaper than a thread-pool round trip)
    const metaSizes = async (): Promise<number[]> => {
      const files = [...(await this.list()).map((id) => `${id}.json`), INDEX_NAME, HELD_NAME, HELD_LOG_NAME];
      const size = (f: string): number => {
        try {
          return fsSync.statSync(path.join(this.manifestDir, f), { throwIfNoEntry: false })?.size ?? 0;
        } catch {
          return 0;
        }
      };
      return files.map(size);
    };
    const [bound, sizes] = await Promise.all([
      this.held.bound(
        points.map((p) => p.id),
        full,
      ),
      metaSizes(),
    ]);
    return sizes.reduce((a, b) => a + b, bound);
  }

  async heldObjects(): Promise<{ objects: Map<string, number>; metaBytes: number }> {
    const h = await this.index.held();
    return { objects: h.objects, metaBytes: h.manifestBytes };
  }

  async diff(snapshotId: string, opts: { skip?: PathFilter; cacheIds?: string[] }): Promise<MachineChanges> {
    await this.check();
    const snap = await this.manifest(snapshotId);
    const caches: Manifest[] = [snap];
    for (const id of opts.cacheIds ?? []) {
      const m = await this.manifestOrUndefined(id);
      if (m) caches.push(m);
    }
    const r = await scanTree(this.root, {
      caches: statCacheOf(...caches),
      skip: opts.skip,
      concurrency: CONCURRENCY,
      hashFile: async (abs) => ({ hash: await hashFileAny(abs), newBytes: 0 }),
    });
    const skip = opts.skip;
    return compareEntries(skip ? snap.entries.filter((e) => !underSkip(e.p, skip)) : snap.entries, r.entries);
  }

  /** Manifest-to-manifest comparison (no scan of the tree). @throws CorruptSnapshot when a manifest is missing. */
  async compare(fromId: string, toId: string): Promise<MachineChanges> {
    const [a, b] = await Promise.all([this.manifest(fromId), this.manifest(toId)]);
    return compareEntries(a.entries, b.entries);
  }

  /** Objects the snapshot's manifest names: hash -> size (bytes). @throws CorruptSnapshot when the manifest is missing. */
  async objectsOf(snapshotId: string): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    const m = await this.manifest(snapshotId);
    for (const e of m.entries) if (e.h) out.set(e.h, e.t === 'd' ? (e.z ?? 0) : e.s);
    if (m.tree) out.set(m.tree, m.treeSize ?? 0); // tree objects are disk use too
    return out;
  }

  /** A path of a snapshot: its manifest entry, the content read from the object store by hash. */
  async readFile(snapshotId: string, rel: string, maxBytes: number): Promise<SnapshotFile> {
    const m = await this.manifest(snapshotId);
    const e = m.entries.find((x) => x.p === rel);
    if (!e) return { type: 'none', size: 0 };
    if (e.t === 'd') return { type: 'directory', size: 0 };
    if (e.t === 'l') {
      const data = Buffer.from(e.l as string);
      return { type: 'symlink', size: data.length, data };
    }
    if (e.s > maxBytes) throw tooLarge(rel, e.s, maxBytes);
    return { type: 'file', size: e.s, data: await this.ctx.objects.read(e.h as string) };
  }

  /**
   * Create file or symlink `e` at `a`, where the restore's current state holds nothing: the object is
   * copied to `a` itself with O_CREAT|O_EXCL (copyfile's COPYFILE_EXCL; a symlink is made there), then
   * its mode and mtime are set. Returns false when something is there after all (a path made since the
   * scan, or one a scan leaves out: a socket, a FIFO): the caller replaces it by temp + rename.
   */
  private createInPlace(e: Entry, a: string, known?: Buffer): boolean {
    try {
      if (e.t === 'l') fsSync.symlinkSync(e.l as string, a);
      else this.ctx.objects.copyOutSync(e.h as string, a, known);
    } catch (err) {
      if (isErrno(err, 'EEXIST')) return false;
      // (a copy that failed part-way, e.g. ENOSPC: no partial file is left where there was none)
      if (e.t === 'f') fsSync.rmSync(a, { force: true });
      throw err;
    }
    if (e.t === 'f') {
      fsSync.chmodSync(a, e.m);
      fsSync.utimesSync(a, e.mt / 1000, e.mt / 1000);
    }
    return true;
  }

  async restore(
    snapshotId: string,
    opts: { currentId?: string; skip?: PathFilter; progress?: BackendProgress; signal?: AbortSignal },
  ): Promise<MachineChanges> {
    return (await this.prepareRestore(snapshotId, opts)).apply(opts);
  }

  /** The snapshot this object's create is making (its manifest complete in memory, from before its fsyncs). */
  private building: { id: string; m: Manifest } | undefined;

  /**
   * The reading half of restore (MachineBackend.prepareRestore): what differs and the check that every
   * object to write is there; apply() writes. `currentId` may be the snapshot this object's create is
   * still making (after `built`): its manifest is taken from memory.
   */
  async prepareRestore(
    snapshotId: string,
    opts: { currentId?: string; skip?: PathFilter; signal?: AbortSignal },
  ): Promise<{ apply(opts: { progress?: BackendProgress; signal?: AbortSignal }): Promise<MachineChanges> }> {
    const making = this.building; // (taken now: the create clears it when it is done)
    await this.check();
    const file = this.manifestPath(snapshotId);
    const snap = (await readManifestHead(file)) ?? (await this.manifest(snapshotId)); // (throws when missing)
    const skip = opts.skip;
    // The current state: the snapshot taken just before (pre-restore), else a fresh scan.
    const curManifest =
      making && opts.currentId === making.id ? making.m : await this.manifestOrUndefined(opts.currentId);
    let all: Entry[];
    let cur: Entry[];
    let stray: string[];
    if (curManifest) {
      let curAll = curManifest.entries;
      if (snap.v === 2 && snap.tree && curManifest.v === 2 && curManifest.tree) {
        // Both in trees: only directories whose trees differ are read and compared.
        const d = treeDifference(
          objectsDirOf(file),
          snap.tree,
          { tree: curManifest.tree, kids: kidsOf(curManifest) },
          `of ${file}`,
          snap.entries, // (read by verify: its trees are not read again)
        );
        all = d.want;
        curAll = d.cur;
      } else all = snap.entries ?? (await this.manifest(snapshotId)).entries;
      cur = skip ? curAll.filter((e) => !underSkip(e.p, skip)) : curAll;
      const last = this.strayTemps;
      stray = last && last.id === opts.currentId ? last.temps : [];
    } else {
      all = snap.entries ?? (await this.manifest(snapshotId)).entries;
      const r = await scanTree(this.root, {
        caches: statCacheOf(await this.manifest(snapshotId)),
        skip,
        concurrency: CONCURRENCY,
        hashFile: async (abs) => ({ hash: await hashFileAny(abs), newBytes: 0 }),
      });
      cur = r.entries;
      stray = r.temps;
    }
    // (a turn of the event loop between the steps: while a create runs next to this, e.g. the undo
    // point whose fsyncs this comparison overlaps, its next step is not held up by all of them)
    const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
    await turn();
    const want = skip ? all.filter((e) => !underSkip(e.p, skip)) : all;
    const wantMap = new Map(want.map((e) => [e.p, e]));
    const curMap = new Map(cur.map((e) => [e.p, e]));
    const changes = compareEntries(want, cur, wantMap, curMap);
    await turn();

    // Check every object needed exists before touching anything.
    const writes = want.filter((e) => {
      const c = curMap.get(e.p);
      return !c || (c !== e && !sameEntry(c, e));
    });
    // (synchronously, one access(2) each, or a packed object read and checked against its sha256, so a damaged
    // pack fails here with the tree untouched: a thread-pool round trip per object cost more than the check; yielding to the event loop every 8 ms, so a signal is still seen)
    let checked = Date.now();
    // the bytes of packed objects the check read (and hashed), written as they are by apply (up to KNOWN_MAX)
    const known = new Map<string, Buffer>();
    let knownBytes = 0;
    for (const e of writes) {
      if (e.t !== 'f' || (curMap.get(e.p)?.t === 'f' && curMap.get(e.p)?.h === e.h)) continue;
      const got = this.ctx.objects.checkSync(e.h as string);
      if (!got) throw this.ctx.objects.missing(e.h as string);
      if (got !== true && knownBytes + got.length <= KNOWN_MAX) {
        known.set(e.h as string, got);
        knownBytes += got.length;
      }
      if (Date.now() - checked > 8) {
        await turn();
        checked = Date.now();
      }
    }

    return {
      apply: (o) => this.applyRestore(snap.rootMode, { want, cur, stray, wantMap, curMap, writes, changes, known }, o),
    };
  }

  /** The writing half of restore: make the target what prepareRestore found it must become. */
  private async applyRestore(
    rootMode: number,
    plan: {
      want: Entry[];
      cur: Entry[];
      stray: string[];
      wantMap: Map<string, Entry>;
      curMap: Map<string, Entry>;
      writes: Entry[];
      changes: MachineChanges;
      known: Map<string, Buffer>;
    },
    opts: { progress?: BackendProgress; signal?: AbortSignal },
  ): Promise<MachineChanges> {
    const { want, cur, stray, wantMap, curMap, writes, changes, known } = plan;
    const signal = opts.signal;
    const stopped = 'the restore was stopped part-way';
    const total = writes.length + changes.added.length;
    let done = 0;
    const tick = (): void => opts.progress?.('restore', ++done, total);
    const abs = (p: string): string => path.join(this.root, ...p.split('/'));

    // Directories we write into must be writable during the restore; final modes are set at the end.
    const relaxed = new Map<string, number>();
    const relax = async (dirRel: string): Promise<void> => {
      if (relaxed.has(dirRel)) return;
      const d = dirRel ? abs(dirRel) : this.root;
      const st = fsSync.lstatSync(d, { throwIfNoEntry: false });
      if (st && st.isDirectory() && (st.mode & 0o700) !== 0o700) {
        relaxed.set(dirRel, st.mode & 0o7777);
        fsSync.chmodSync(d, (st.mode & 0o7777) | 0o700);
      } else relaxed.set(dirRel, -1);
    };
    const parentOf = (p: string): string => (p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : '');

    const dirs = want.filter((e) => e.t === 'd');
    // what this restore writes, for the next create (restoreRecords; published when the restore succeeded)
    const record = new Map<string, WrittenFile>();
    restoreRecords.delete(this.manifestDir);
    const temps = new Set<string>();
    const spared = new Set<string>();
    try {
      // 0. Temp files a previous interrupted restore left behind (never part of any snapshot).
      for (const t of stray) {
        await relax(parentOf(t));
        await fs.rm(abs(t), { force: true });
      }

      // 1. Remove what the snapshot does not have (or has with another type), deepest first.
      const removals = cur.filter((e) => {
        const w = wantMap.get(e.p);
        return !w || w.t !== e.t;
      });
      removals.sort((a, b) => (a.p < b.p ? 1 : a.p > b.p ? -1 : 0));
      let slice = Date.now();
      for (const e of removals) {
        throwIfAborted(signal, stopped);
        await relax(parentOf(e.p));
        const a = abs(e.p);
        if (e.t === 'd') {
          const w = wantMap.get(e.p);
          if (w) await fs.rm(a, { recursive: true, force: true });
          else {
            try {
              fsSync.rmdirSync(a);
            } catch (err) {
              // Not empty: it still holds paths spared by the scope (or created since); leave it,
              // and do not report it as removed.
              if (!isErrno(err, 'ENOTEMPTY', 'EEXIST', 'ENOENT')) throw err;
              if (!isErrno(err, 'ENOENT')) spared.add(e.p);
            }
          }
        } else {
          try {
            fsSync.unlinkSync(a); // (a file or a link, as the scan saw it: no lstat first)
          } catch (err) {
            if (!isErrno(err, 'ENOENT')) fsSync.rmSync(a, { recursive: true, force: true }); // it became a directory
          }
        }
        tick();
        if (Date.now() - slice > 8) {
          await new Promise((r) => setImmediate(r)); // let a signal be seen
          slice = Date.now();
        }
      }

      // 2. Directories of the snapshot, shallowest first.
      for (const e of dirs) {
        const c = curMap.get(e.p);
        if (c && c.t === 'd') continue;
        throwIfAborted(signal, stopped);
        await relax(parentOf(e.p));
        await fs.mkdir(abs(e.p), { recursive: true, mode: 0o700 });
        relaxed.set(e.p, -1);
      }

      // 3. Files and symlinks that differ. A path the current state does not hold is created in place
      // (O_CREAT|O_EXCL: nothing of the user's is there to keep whole; if the restore dies half-way,
      // finishing it compares contents and writes it again, as every other path); a path that holds
      // something is replaced by temp + rename inside its directory, so it is always old or new whole.
      const fileWrites = writes.filter((e) => e.t !== 'd');
      for (const e of fileWrites) await relax(parentOf(e.p));
      // Small files and links synchronously, one after the other (the thread-pool round trips of
      // async calls would cost more than the writes), yielding to the event loop every few ms so a
      // signal is seen; large files in parallel.
      const large = fileWrites.filter((e) => e.t === 'f' && e.s > SMALL_FILE_LIMIT && curMap.get(e.p)?.h !== e.h);
      const isLarge = new Set(large);
      slice = Date.now();
      for (const e of fileWrites) {
        if (isLarge.has(e)) continue;
        throwIfAborted(signal, stopped);
        const a = abs(e.p);
        const c = curMap.get(e.p);
        if (e.t === 'f' && c && c.t === 'f' && c.h === e.h)
          fsSync.chmodSync(a, e.m); // only the mode differs
        else if (!c && this.createInPlace(e, a, known.get(e.h as string))) {
          /* created where nothing was */
        } else {
          const tmp = tempNameFor(a, this.root);
          temps.add(tmp);
          if (e.t === 'l') fsSync.symlinkSync(e.l as string, tmp);
          else {
            this.ctx.objects.copyOutSync(e.h as string, tmp, known.get(e.h as string));
            fsSync.chmodSync(tmp, e.m);
            fsSync.utimesSync(tmp, e.mt / 1000, e.mt / 1000);
          }
          fsSync.renameSync(tmp, a);
          temps.delete(tmp);
        }
        if (e.t === 'f') recordWritten(record, e.p, a, e.h as string);
        tick();
        if (Date.now() - slice > 8) {
          await new Promise((r) => setImmediate(r));
          slice = Date.now();
        }
      }
      await mapLimit(large, CONCURRENCY, async (e) => {
        throwIfAborted(signal, stopped);
        const a = abs(e.p);
        const tmp = tempNameFor(a, this.root);
        temps.add(tmp);
        await this.ctx.objects.copyOut(e.h as string, tmp);
        await fs.chmod(tmp, e.m);
        const t = new Date(e.mt);
        await fs.utimes(tmp, t, t);
        await fs.rename(tmp, a);
        temps.delete(tmp);
        recordWritten(record, e.p, a, e.h as string);
        tick();
      });
    } catch (err) {
      // mapLimit settles only after the writes in flight, so every temp file is known here.
      await Promise.all([...temps].map((t) => fs.rm(t, { force: true }).catch(() => undefined)));
      // Put back the directory modes relaxed for writing (what is restored so far stays).
      for (const [d, m] of relaxed) if (m >= 0) chmodIfDir(d ? abs(d) : this.root, m);
      if (isNoSpace(err) && !(err instanceof AgentKeepError))
        throw await diskFullError(this.root, err, `Cannot restore files into ${this.root}`);
      if (isErrno(err, 'ENAMETOOLONG'))
        throw nameTooLongError(String((err as NodeJS.ErrnoException).path ?? this.root), 'Cannot restore');
      throw err;
    }

    // 4. Directory modes (deepest first), then the root's.
    const finalModes = new Map<string, number>();
    for (const e of dirs) {
      const c = curMap.get(e.p);
      // (a directory only written into, never relaxed, keeps its mode: no chmod, no inotify event)
      if (!c || c.t !== 'd' || c.m !== e.m || (relaxed.get(e.p) ?? -1) >= 0) finalModes.set(e.p, e.m);
    }
    for (const [d, m] of relaxed) if (m >= 0 && !finalModes.has(d) && d !== '') finalModes.set(d, m);
    // (synchronous: a few calls, each cheaper than a thread-pool round trip)
    for (const d of [...finalModes.keys()].sort().reverse()) chmodIfDir(abs(d), finalModes.get(d) as number);
    try {
      fsSync.chmodSync(this.root, rootMode);
    } catch {
      /* not ours to chmod: the mode stays */
    }
    // published by restoreSettled, with its stamp (a restore that fails leaves no record)
    this.settling = record.size ? { record, rootMode } : undefined;
    if (spared.size) changes.added = changes.added.filter((p) => !spared.has(p));
    return changes;
  }
}

/**
 * chmod `p` only when it is a directory itself (lstat: not a symlink, not a file). A directory relaxed
 * for writing may have been removed and replaced by a file or a symlink since (the snapshot has
 * another type there); chmod follows symlinks, so its recorded mode would land on the file, or on
 * whatever the symlink points at, possibly outside the target (QA of issue 14).
 */
function chmodIfDir(p: string, mode: number): void {
  const st = fsSync.lstatSync(p, { throwIfNoEntry: false });
  if (!st?.isDirectory()) return;
  try {
    fsSync.chmodSync(p, mode);
  } catch {
    /* gone or not ours: left as it is */
  }
}

/** Whether `p` or one of its ancestors is accepted by `skip`. */
function underSkip(p: string, skip: PathFilter): boolean {
  if (skip(p)) return true;
  let i = p.indexOf('/');
  while (i > 0) {
    if (skip(p.slice(0, i))) return true;
    i = p.indexOf('/', i + 1);
  }
  return false;
}

async function hashFileAny(abs: string): Promise<string> {
  const st = await fs.stat(abs);
  if (st.size <= SMALL_FILE_LIMIT)
    return createHash('sha256')
      .update(await fs.readFile(abs))
      .digest('hex');
  return hashFile(abs);
}

/**
 * Check that the target exists and is a directory.
 * @throws AgentKeepError TargetNotFound naming the path and how to fix it.
 */
export async function checkTargetExists(t: ParsedTarget): Promise<void> {
  let st: import('node:fs').Stats;
  try {
    // (one stat(2), synchronously: a thread-pool round trip cost more; a create or restore checks 2-3 times)
    st = fsSync.statSync(t.path);
  } catch {
    throw new AgentKeepError(
      'TargetNotFound',
      `Target directory ${t.path} does not exist.`,
      `Create it or pick an existing directory: dir:/abs/path.`,
    );
  }
  if (!st.isDirectory()) {
    throw new AgentKeepError(
      'TargetNotFound',
      `Target ${t.path} is not a directory.`,
      'A dir: target must name a directory, e.g. dir:/home/me/.hermes.',
    );
  }
}

const DIR_FORM = 'Write the target as dir:/abs/path, e.g. dir:/home/me/.hermes.';

/** The factory registered in sidecar/machine/index.ts (the first one: the default backend). */
export const dirBackend: BackendFactory<LocalPathOptions> = {
  scheme: 'dir',
  prefix: 'dir:',
  forms: ['dir:/abs/path'],
  example: 'dir:/home/me/.hermes',
  formHint: DIR_FORM,
  parse: (rest, spec) => parseLocalPathTarget('dir', rest, spec, DIR_FORM),
  describe: (t): TargetDescription => ({
    target: t.spec,
    backend: 'dir',
    name: path.basename(t.options.path) || t.options.path,
    kind: 'directory',
    localRoot: t.options.path,
    snapshotNoun: 'snapshot',
    capabilities: {
      ramState: false,
      ramStateOnRequest: false,
      diff: true,
      compare: true,
      readFile: true,
      relabel: false,
      guestAccess: false,
      discover: false,
      startAfterRollback: false,
      rollbackStopsGuest: false,
      speedClass: 'fast',
      canRunWhileRunning: true,
    },
  }),
  create: (ctx) => new DirBackend(ctx),
  /** Manifests whose restore point is in no journal (a create killed between the two writes); see BackendFactory. */
  async dropOrphans(layout: StateLayout, isLive: (key: string, id: string) => boolean): Promise<void> {
    for (const k of await fs.readdir(layout.dirBackendRoot).catch(() => [] as string[])) {
      const dir = path.join(layout.dirBackendRoot, k);
      for (const n of await fs.readdir(dir).catch(() => [] as string[])) {
        if (!n.endsWith('.json') || n.startsWith('.')) continue;
        const id = n.slice(0, -5);
        if (isLive(k, id)) continue;
        forgetManifest(path.join(dir, n));
        await fs.rm(path.join(dir, n), { force: true });
      }
    }
  },
  /** Every object hash named by any dir manifest of any target. @throws CorruptSnapshot for a damaged manifest. */
  async referencedObjects(layout: StateLayout): Promise<Set<string>> {
    const out = new Set<string>();
    let keys: string[];
    try {
      keys = await fs.readdir(layout.dirBackendRoot);
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return out;
      throw e;
    }
    for (const k of keys) {
      const dir = path.join(layout.dirBackendRoot, k);
      for (const n of await fs.readdir(dir).catch(() => [] as string[])) {
        if (!n.endsWith('.json') || n.startsWith('.')) continue;
        const m = await readManifest(path.join(dir, n));
        if (m?.tree) out.add(m.tree);
        for (const e of m?.entries ?? []) if (e.h) out.add(e.h); // file contents, and (format 2) directory trees
      }
    }
    return out;
  },
};
