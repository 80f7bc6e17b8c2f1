/**
 * The content-addressed object store shared by every target: `objects/<hh>/<sha256 hex>`, one file
 * per distinct content, readable by its owner only (0400: a restore point never widens who can read
 * a file, e.g. a 0600 `.env`). New objects are written to `objects/tmp/` and renamed into place, so
 * an object path either holds the full content or does not exist. A create that stores many small
 * objects at once puts them into one pack file instead (packs.ts: `objects/pack/<hex>.pack`, renamed
 * into place complete before the manifest naming them is written); every read (has, read, copyOut,
 * the tree reader) looks in the loose files and the packs. A full file system while storing fails
 * with DiskFull (naming it), never with the error of a file of the target.
 */
import { createHash, hash as oneShotHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  copyFileSync,
  createReadStream,
  existsSync,
  mkdirSync,
  openSync,
  promises as fs,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  writeFileSync,
  constants as fsc,
} from 'node:fs';
import * as path from 'node:path';
import { AgentKeepError } from './errors';
import { diskFullError, fsyncDir, fsyncFile, isErrno, isNoSpace } from './fsutil';
import { pidAlive } from './lock';
import {
  damagedError,
  geometricSplit,
  PACK_MERGE_AT,
  packEntries,
  packSetOf,
  PackWriter,
  readPackIndex,
  type PackIndex,
  type PackSet,
} from './packs';

export { PackWriter } from './packs';

/** Temp objects older than this are removed even if their writer's pid is alive (pid reuse, another host). */
export const TEMP_MAX_AGE_MS = 24 * 3600_000;
/** Largest pid Linux hands out (pid_max limit); larger numbers in a temp name are not pids. */
const MAX_PID = 4_194_304;

/** Files up to this size are read into memory once (hash + write); larger ones are copied then hashed as a stream. */
export const SMALL_FILE_LIMIT = 1 << 20;

/** Mode of a stored object: read-only, owner only. */
export const OBJECT_MODE = 0o400;

/**
 * A create (a restore's undo point too) that stores at least this many new small objects (contents
 * up to SMALL_FILE_LIMIT and its trees) writes them into one pack (packs.ts) instead of one file
 * each; with fewer (one changed file in the top directory is already two: its content and the root
 * tree) each stays a file of its own (fsynced with its fanout before the restore point is listed:
 * PackWriter.looseSynced). Measured at 1,000 files (BENCHMARKS.md,
 * "Every create in one pack"): a create after 30 changes makes ~40 object files loose, 1 packed;
 * a new inode on a busy ext4 costs 0.2-0.7 ms, a pack's fsync 0.1-0.2 ms at a quiet moment. The
 * small packs this leaves are merged geometrically (ObjectStore.consolidatePacks).
 */
export const PACK_MIN_OBJECTS = 2;

/** Invalid `AGENTKEEP_PACK_MIN_OBJECTS` values already warned about (once each per process). */
const warnedPackMin = new Set<string>();

/**
 * The pack threshold in effect: PACK_MIN_OBJECTS, or `AGENTKEEP_PACK_MIN_OBJECTS` (a whole number
 * >= 1 written as digits: 1 packs even a create of one object, as the fault suites run it; a large
 * value keeps every object a file of its own). A create's objects wait in memory until 1 MiB of
 * them: a pack is made when by then, or by the end of the create, it holds at least this many; else
 * they become files of their own. Any other
 * value (0, -1, abc, 1e3, " 5") is not used: a warning naming the variable, the value and the
 * default used instead goes to stderr once per value.
 */
export function packMinObjects(): number {
  const raw = process.env.AGENTKEEP_PACK_MIN_OBJECTS;
  if (raw === undefined || raw === '') return PACK_MIN_OBJECTS;
  if (/^[0-9]+$/.test(raw) && Number(raw) >= 1 && Number.isSafeInteger(Number(raw))) return Number(raw);
  if (!warnedPackMin.has(raw)) {
    warnedPackMin.add(raw);
    process.stderr.write(
      `agentkeep: warning: AGENTKEEP_PACK_MIN_OBJECTS=${JSON.stringify(raw)} is not a whole number >= 1 ` +
        `(digits only); using the default ${PACK_MIN_OBJECTS}.\n`,
    );
  }
  return PACK_MIN_OBJECTS;
}

/** Object stores (directories) whose packs this process is merging now (one merge at a time per store). */
const merging = new Set<string>();

/** Result of storing one file. */
export interface PutResult {
  /** sha256 hex of the stored content. */
  hash: string;
  /** Size of the stored content in bytes. */
  size: number;
  /** Bytes newly written to the store (0 when the object already existed). */
  newBytes: number;
}

/** sha256 of a file, streamed (never the whole file in memory). */
export async function hashFile(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) h.update(chunk as Buffer);
  return h.digest('hex');
}

/** The object store under `dir`. */
export class ObjectStore {
  private readonly fanouts = new Set<string>();
  /** Objects being committed right now (two identical large files stored concurrently count once). */
  private readonly committing = new Set<string>();
  /** Temp files of this instance that may exist (written, not yet renamed or removed). */
  private readonly temps = new Set<string>();
  /**
   * Objects this instance has put into the store (renamed into place) so far: an operation that
   * failed without this changing left no orphan behind (CoreContext.withTarget skips the collection).
   */
  stored = 0;
  /** Packs of this store (shared with the tree reader of this process). */
  private readonly packs: PackSet;
  /** Packs being written by this instance (closed by removeOwnTemps after an interrupt). */
  private readonly open = new Set<PackWriter>();
  constructor(readonly dir: string) {
    this.packs = packSetOf(dir);
  }

  /** Path of an object. */
  pathOf(hash: string): string {
    return path.join(this.dir, hash.slice(0, 2), hash);
  }

  private get tmpDir(): string {
    return path.join(this.dir, 'tmp');
  }

  /** A new temp path `objects/tmp/<pid>-<12 hex>` (the pid tells sweepTemps whether its writer is alive); tracked until released. */
  private tmpPath(): string {
    const p = path.join(this.tmpDir, `${process.pid}-${randomBytes(6).toString('hex')}`);
    this.temps.add(p);
    return p;
  }

  /**
   * Remove the temp files this instance is still writing or left behind (after an interrupt). Writes
   * in flight fail afterwards and clean up after themselves.
   */
  async removeOwnTemps(): Promise<void> {
    for (const w of this.open) w.close();
    this.open.clear();
    const all = [...this.temps];
    this.temps.clear();
    await Promise.all(all.map((t) => fs.rm(t, { force: true }).catch(() => undefined)));
  }

  /**
   * Remove temp files left by writers that are gone: `<pid>-<hex>` whose pid is not a live process
   * on this host, any name of another shape (an older version's), and anything older than 24 h.
   * Called at the start of every create, restore and delete. Returns how many were removed.
   */
  async sweepTemps(now = Date.now()): Promise<number> {
    let names: string[];
    try {
      names = readdirSync(this.tmpDir); // (synchronous: usually empty, and every create, restore and delete lists it)
    } catch {
      return 0;
    }
    let n = 0;
    for (const name of names) {
      const p = path.join(this.tmpDir, name);
      if (this.temps.has(p)) continue;
      const m = /^(\d+)-[0-9a-f]+$/.exec(name);
      const pid = m ? Number(m[1]) : NaN;
      let dead = !(pid > 0 && pid <= MAX_PID) || !pidAlive(pid);
      if (!dead) {
        const st = await fs.lstat(p).catch(() => undefined);
        dead = !!st && now - st.mtimeMs > TEMP_MAX_AGE_MS;
      }
      if (!dead) continue;
      await fs.rm(p, { force: true, recursive: true }).catch(() => undefined);
      n++;
    }
    return n;
  }

  private async ensureFanout(hash: string): Promise<void> {
    const fo = hash.slice(0, 2);
    if (this.fanouts.has(fo)) return;
    await fs.mkdir(path.join(this.dir, fo), { recursive: true });
    this.fanouts.add(fo);
  }

  /** Create the store directories (one mkdir(2), synchronously: every create, restore and delete calls it). */
  async init(): Promise<void> {
    mkdirSync(this.tmpDir, { recursive: true }); // (synchronous: it exists, one mkdir + stat; every operation calls it)
  }

  /** Whether the object exists (a file of its own, or in a pack). */
  async has(hash: string): Promise<boolean> {
    try {
      await fs.access(this.pathOf(hash));
      return true;
    } catch {
      return !!this.packs.locate(hash);
    }
  }

  /**
   * Whether the object exists, synchronously (a file of its own: one access(2); else a pack's index,
   * listed again once if it is not found): for checks of many objects in a row, where a thread-pool
   * round trip each costs more than the check.
   * @param hash sha256 hex of the object
   */
  hasSync(hash: string): boolean {
    return existsSync(this.pathOf(hash)) || !!this.packs.locate(hash);
  }

  /**
   * Whether the object exists and, when it is in a pack, whether its bytes there match its sha256
   * (read and hashed: the check a restore makes before it writes anything, so a damaged pack fails
   * it with the tree untouched). An object file of its own is only checked to exist (not re-hashed).
   * @param hash sha256 hex of the object
   * @throws AgentKeepError CorruptSnapshot when a pack holds the object with other bytes
   */
  verifySync(hash: string): boolean {
    return !!this.checkSync(hash);
  }

  /**
   * verifySync that also gives the bytes it read: a packed object's content (checked against its
   * sha256), `true` for an object file of its own (not read), `false` when missing. A restore keeps
   * the bytes its check read and writes them (copyOutSync `known`) instead of reading them again.
   */
  checkSync(hash: string): Buffer | boolean {
    return existsSync(this.pathOf(hash)) || (this.packs.readSync(hash) ?? false);
  }

  /**
   * Start a pack for the small objects of one create (putBuffer / putFile with `pack`): each create
   * has its own, so concurrent creates of other targets on this instance never share one. Nothing is
   * written until the objects reach a chunk (packs.ts, PackWriter) or commitPack. `objects/pack/` is
   * listed again first (one readdir, whatever its mtime says): a create must not take an object as
   * stored because this process still holds the index of a pack that a collection of another process
   * rewrote without it (the create runs after its in-flight marker, so no collection runs now).
   */
  async openPack(): Promise<PackWriter> {
    this.packs.refresh(true);
    const w = new PackWriter(this.tmpPath());
    this.open.add(w);
    return w;
  }

  /**
   * Put a pack in place (fsynced, renamed into objects/pack/). The manifest that names its objects may
   * be written and fsynced meanwhile (its fsync runs with the pack's), but is renamed into place only
   * after this resolves. An empty pack is dropped; one with fewer than packMinObjects() objects, all
   * still in memory, is written as object files of their own instead (no pack). Object files of their
   * own this create wrote are fsynced before this resolves, their directories' fsyncs are in `durable`.
   * @returns `packed`: whether a pack was put in place (then call consolidatePacks once the manifest
   *   is written); `durable`: the fsyncs of `objects/pack/` (and of the fanouts of object files of their
   *   own, and `objects/`) that make the names durable, running
   *   meanwhile (never rejects): whatever lists the snapshot (its journal entry) must be renamed in
   *   only after it
   * @throws AgentKeepError DiskFull on a full file system (the temp file is removed)
   */
  async commitPack(w: PackWriter): Promise<{ packed: boolean; durable: Promise<void> }> {
    if (!w.slots.size) {
      await this.dropPack(w);
      return { packed: false, durable: (await this.looseDurable(w)).dirs };
    }
    const loose = w.slots.size < packMinObjects() ? w.unflushed() : undefined;
    if (loose) {
      await this.dropPack(w);
      for (const [h, buf] of loose) if (!this.holds(h)) await this.writeLoose(h, buf, w);
      return { packed: false, durable: (await this.looseDurable(w)).dirs };
    }
    try {
      let durable = Promise.resolve();
      this.packs.added(await w.finish(this.dir, { dirSynced: (p) => (durable = p) }));
      this.stored += w.slots.size;
      this.temps.delete(w.tmp);
      this.open.delete(w);
      const { dirs } = await this.looseDurable(w);
      return { packed: true, durable: Promise.all([durable, dirs]).then(() => undefined) };
    } catch (e) {
      await this.dropPack(w);
      throw await this.writeError(e);
    }
  }

  /**
   * Wait for the fsyncs of the object files create `w` wrote (PackWriter.looseSynced); then start
   * those of their fanout directories and of `objects/` (a fanout made by this create is a new name
   * there).
   * @returns `dirs`: the directories' fsyncs, running (never rejects, as fsyncDir): part of the
   *   create's `durable`
   * @throws an object file's fsync error
   */
  private async looseDurable(w: PackWriter): Promise<{ dirs: Promise<void> }> {
    if (!w.looseSynced.length) return { dirs: Promise.resolve() };
    await Promise.all(w.looseSynced);
    return { dirs: Promise.all([...w.looseDirs, this.dir].map((d) => fsyncDir(d))).then(() => undefined) };
  }

  /** Start the fsync of object file `hash`, just written by create `w` (looseDurable waits for it). */
  private syncLoose(hash: string, w: PackWriter | undefined): void {
    if (!w) return;
    const p = fsyncFile(this.pathOf(hash));
    p.catch(() => undefined); // (handled: looseDurable awaits it)
    w.looseSynced.push(p);
    w.looseDirs.add(path.dirname(this.pathOf(hash)));
  }

  /**
   * Merge the smallest packs into one when at least PACK_MERGE_AT of them are out of the geometric
   * progression (packs.ts, geometricSplit; `force`: whenever two or more are), so the packs a
   * lookup searches stay few as every create adds one. The merged pack is complete, fsynced and
   * renamed into `objects/pack/` before any of the packs it replaces is removed: a reader holding an
   * old index finds the object again after listing `pack/` once more (PackSet.readSync), and a kill
   * at any point leaves every object in at least one pack (duplicates at worst, which the garbage
   * collection reduces to one copy). Every object copied is checked against its sha256. Best
   * effort: any failure (a source pack gone because another process merged or collected it, a
   * damaged object, a full disk) leaves all packs as they were and resolves undefined.
   * @param opts.onStep test hook, called after the sources are read (`read`), after the merged pack
   *   is fsynced but not renamed (`written`), after it is renamed in (`renamed`) and after each
   *   source is removed (`removed`, n = how many so far)
   * @returns the packs merged and the objects in the merged pack, or undefined when nothing was merged
   */
  async consolidatePacks(
    opts: { force?: boolean; onStep?: (step: 'read' | 'written' | 'renamed' | 'removed', n: number) => void } = {},
  ): Promise<{ merged: number; objects: number } | undefined> {
    if (merging.has(this.dir)) return undefined;
    merging.add(this.dir);
    try {
      return await this.mergePacks(opts);
    } catch {
      return undefined; // e.g. objects/pack/ unreadable, a removal refused: every object is still in a pack
    } finally {
      merging.delete(this.dir);
    }
  }

  private async mergePacks(opts: {
    force?: boolean;
    onStep?: (step: 'read' | 'written' | 'renamed' | 'removed', n: number) => void;
  }): Promise<{ merged: number; objects: number } | undefined> {
    const order = (a: PackIndex, b: PackIndex): number =>
      a.count - b.count || (a.file < b.file ? -1 : a.file > b.file ? 1 : 0);
    const enough = (split: number): boolean => split >= 2 && (opts.force || split >= PACK_MERGE_AT);
    // The packs this process knows (a create's openPack listed objects/pack/ at its start, and its own
    // pack was added as it was renamed in): when they do not call for a merge, objects/pack/ is not
    // listed again (7 creates in 8; a pack another process added since is listed by the next create).
    // When they do, the listing below decides, so a known pack gone meanwhile is not merged.
    if (
      !opts.force &&
      !enough(
        geometricSplit(
          this.packs
            .all()
            .sort(order)
            .map((p) => p.count),
        ),
      )
    )
      return undefined;
    this.packs.refresh(true);
    const all = this.packs.all().sort(order);
    const split = geometricSplit(all.map((p) => p.count));
    if (!enough(split)) return undefined;
    const from = all.slice(0, split);
    const w = await this.openPack();
    let q: PackIndex;
    try {
      for (const p of from) {
        const fd = openSync(p.file, 'r');
        try {
          for (const o of packEntries(p)) {
            if (w.slots.has(o.hash)) continue;
            const buf = Buffer.alloc(o.length);
            let got = 0;
            while (got < o.length) {
              const n = readSync(fd, buf, got, o.length - got, o.offset + got);
              if (n === 0) break;
              got += n;
            }
            if (got !== o.length || oneShotHash('sha256', buf, 'hex') !== o.hash) throw damagedError(o.hash, p.file);
            w.add(o.hash, buf);
          }
        } finally {
          closeSync(fd);
        }
      }
      opts.onStep?.('read', 0);
      q = await w.finish(this.dir, { beforeRename: () => opts.onStep?.('written', 0) });
      this.temps.delete(w.tmp);
      this.open.delete(w);
      this.packs.added(q);
    } catch {
      await this.dropPack(w);
      return undefined;
    }
    opts.onStep?.('renamed', 0);
    let k = 0;
    for (const p of from) {
      await fs.rm(p.file, { force: true });
      this.packs.removed(p.file);
      opts.onStep?.('removed', ++k);
    }
    return { merged: from.length, objects: q.count };
  }

  /** Drop a pack that will not be committed (a failed or interrupted create): its temp file is removed. */
  async dropPack(w: PackWriter): Promise<void> {
    w.close();
    this.open.delete(w);
    this.temps.delete(w.tmp);
    await fs.rm(w.tmp, { force: true }).catch(() => undefined);
  }

  /** Whether `hash` is stored already: its own file, a pack of the store, or the pack being written. */
  private holds(hash: string, pack?: PackWriter): boolean {
    if (pack?.slots.has(hash)) return true;
    // a create that packs asks about every fanout once: absent (a fresh store), no object file is looked for in it
    const fo = hash.slice(0, 2);
    let there = pack?.fanouts.get(fo);
    if (pack && there === undefined) pack.fanouts.set(fo, (there = existsSync(path.join(this.dir, fo))));
    return (there !== false && existsSync(this.pathOf(hash))) || !!this.packs.locate(hash, false);
  }

  /** The bytes of a packed object (undefined when no pack holds it). */
  private packed(hash: string): Buffer | undefined {
    return this.packs.readSync(hash);
  }

  /** Move a finished temp file into place as object `hash` (or drop it if the object exists). Returns new bytes. */
  private async commit(tmp: string, hash: string, size: number, w?: PackWriter): Promise<number> {
    if (this.committing.has(hash) || existsSync(this.pathOf(hash))) {
      await fs.rm(tmp, { force: true });
      return 0;
    }
    this.committing.add(hash);
    try {
      await this.ensureFanout(hash);
      await fs.chmod(tmp, OBJECT_MODE);
      await fs.rename(tmp, this.pathOf(hash));
      this.stored++;
      this.syncLoose(hash, w);
    } finally {
      this.committing.delete(hash);
    }
    return size;
  }

  /**
   * Store bytes. Synchronous I/O inside: for small contents the thread-pool round trips of async
   * calls cost more than the work (one call blocks for well under a millisecond).
   */
  async putBuffer(buf: Uint8Array, pack?: PackWriter): Promise<PutResult> {
    // crypto.hash (Node >= 20.12): one call, no Hash object (6x faster for a small file's content)
    const hash = oneShotHash('sha256', buf, 'hex');
    if (this.packs.damaged.has(hash) && !existsSync(this.pathOf(hash))) {
      // its packed copy was read damaged (e.g. the parent's tree of an unchanged directory): stored
      // again as a file of its own, which reads take first, so the new snapshot names good bytes
      await this.writeLoose(hash, buf, pack);
      return { hash, size: buf.length, newBytes: buf.length };
    }
    if (this.holds(hash, pack)) return { hash, size: buf.length, newBytes: 0 };
    if (pack && !pack.spill(buf.length, packMinObjects())) {
      try {
        pack.add(hash, buf);
      } catch (e) {
        throw await this.writeError(e);
      }
      return { hash, size: buf.length, newBytes: buf.length };
    }
    if (pack) {
      // fewer objects than the pack threshold fill a chunk (AGENTKEEP_PACK_MIN_OBJECTS set high):
      // the ones held in memory become files of their own, as this one does
      for (const [h, b] of pack.takeUnflushed()) {
        pack.fanouts.set(h.slice(0, 2), true);
        await this.writeLoose(h, b, pack);
      }
      pack.fanouts.set(hash.slice(0, 2), true);
    }
    await this.writeLoose(hash, buf, pack);
    return { hash, size: buf.length, newBytes: buf.length };
  }

  /** Write object `hash` (its bytes `buf`) as a file of its own: temp file, renamed into its fanout. */
  private async writeLoose(hash: string, buf: Uint8Array, w?: PackWriter): Promise<void> {
    const tmp = this.tmpPath();
    try {
      writeFileSync(tmp, buf, { mode: OBJECT_MODE, flag: 'wx' });
      const fo = hash.slice(0, 2);
      if (!this.fanouts.has(fo)) {
        mkdirSync(path.join(this.dir, fo), { recursive: true });
        this.fanouts.add(fo);
      }
      renameSync(tmp, this.pathOf(hash));
      this.stored++;
      this.syncLoose(hash, w);
    } catch (e) {
      rmSync(tmp, { force: true });
      throw await this.writeError(e);
    } finally {
      this.temps.delete(tmp);
    }
  }

  /**
   * Store the content of `file` (regular file; symlinks are followed). Small files are read once;
   * large ones are copied (reflink where the file system can) to a temp file that is then hashed, so
   * the stored bytes are exactly the hashed bytes even if the source changes meanwhile.
   * @param sizeHint the size from lstat, to pick the strategy
   * @param pack the create's pack (openPack), for a small file's content
   */
  async putFile(file: string, sizeHint?: number, pack?: PackWriter): Promise<PutResult> {
    const size = sizeHint ?? (await fs.stat(file)).size;
    if (size <= SMALL_FILE_LIMIT) return this.putBuffer(readFileSync(file), pack);
    const tmp = this.tmpPath();
    try {
      await fs.copyFile(file, tmp, fsc.COPYFILE_FICLONE);
      const hash = await hashFile(tmp);
      const real = (await fs.stat(tmp)).size;
      return { hash, size: real, newBytes: await this.commit(tmp, hash, real, pack) };
    } catch (e) {
      await fs.rm(tmp, { force: true }).catch(() => undefined);
      throw await this.writeError(e);
    } finally {
      this.temps.delete(tmp);
    }
  }

  /** A write error of the store: a full file system becomes DiskFull naming it; others unchanged. */
  private async writeError(e: unknown): Promise<unknown> {
    if (!isNoSpace(e) || e instanceof AgentKeepError) return e;
    return diskFullError(this.dir, e, `Cannot store file contents in ${this.dir}`);
  }

  /**
   * Copy object `hash` to `dest` (which must not exist; the caller renames it into place).
   * @throws AgentKeepError CorruptSnapshot when the object is missing.
   */
  async copyOut(hash: string, dest: string): Promise<void> {
    try {
      await fs.copyFile(this.pathOf(hash), dest, fsc.COPYFILE_EXCL | fsc.COPYFILE_FICLONE);
    } catch (e) {
      if (!isErrno(e, 'ENOENT')) throw e;
      const buf = this.packed(hash);
      if (buf) return fs.writeFile(dest, buf, { flag: 'wx', mode: OBJECT_MODE });
      if (!(await this.has(hash))) throw this.missing(hash);
      throw e;
    }
  }

  /**
   * copyOut, synchronously: for small objects, where the thread-pool round trips of the async calls
   * cost more than the copy (a restore of many small files).
   * @param known the object's bytes as checkSync just read and checked them (written as they are)
   * @throws AgentKeepError CorruptSnapshot when the object is missing.
   */
  copyOutSync(hash: string, dest: string, known?: Buffer): void {
    // (the content read and checked for this hash moments ago, checkSync: a packed object is not read again)
    if (known) return writeFileSync(dest, known, { flag: 'wx', mode: OBJECT_MODE });
    try {
      copyFileSync(this.pathOf(hash), dest, fsc.COPYFILE_EXCL | fsc.COPYFILE_FICLONE);
    } catch (e) {
      if (!isErrno(e, 'ENOENT')) throw e;
      const buf = this.packed(hash);
      if (buf) return writeFileSync(dest, buf, { flag: 'wx', mode: OBJECT_MODE });
      if (!existsSync(this.pathOf(hash))) throw this.missing(hash);
      throw e;
    }
  }

  /** Read a whole object. @throws CorruptSnapshot when missing. */
  async read(hash: string): Promise<Buffer> {
    try {
      return await fs.readFile(this.pathOf(hash));
    } catch (e) {
      if (!isErrno(e, 'ENOENT')) throw e;
      const buf = this.packed(hash);
      if (buf) return buf;
      throw this.missing(hash);
    }
  }

  /** The error for a missing object. */
  missing(hash: string): AgentKeepError {
    return new AgentKeepError(
      'CorruptSnapshot',
      `Stored object ${hash.slice(0, 12)}… is missing from ${this.dir}; the restore point is damaged.`,
      'Pick another restore point, or delete this one.',
    );
  }

  /**
   * Delete every object not in `keep`; returns bytes freed. Temp files of dead writers are removed
   * too (sweepTemps).
   */
  async sweep(keep: Set<string>): Promise<{ freedBytes: number; removed: number }> {
    let freedBytes = 0;
    let removed = 0;
    let fanouts: string[];
    /** Kept objects that are files of their own (a pack's copy of one is not needed). */
    const loose = new Set<string>();
    try {
      fanouts = await fs.readdir(this.dir);
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return { freedBytes, removed };
      throw e;
    }
    for (const fo of fanouts) {
      if (fo === 'tmp') {
        await this.sweepTemps();
        continue;
      }
      if (!/^[0-9a-f]{2}$/.test(fo)) continue;
      for (const n of await fs.readdir(path.join(this.dir, fo))) {
        if (keep.has(n)) {
          loose.add(n);
          continue;
        }
        const p = path.join(this.dir, fo, n);
        const st = await fs.lstat(p).catch(() => undefined);
        await fs.rm(p, { force: true });
        if (st) {
          freedBytes += st.size;
          removed++;
        }
      }
    }
    const packed = await this.sweepPacks(keep, loose);
    // the rewritten packs are smaller: merge them back into a geometric progression (no writer runs now)
    await this.consolidatePacks();
    return { freedBytes: freedBytes + packed.freedBytes, removed: removed + packed.removed };
  }

  /**
   * The sweep of the packs: a pack none of whose objects is kept is deleted; one with some kept is
   * written again with only those (the new pack is in place before the old one is removed, so a
   * crash in between leaves both, never neither; when the rewrite fails, e.g. on a full file system,
   * the old pack stays as it is). A pack whose index does not check is left alone.
   * An object kept once counts once: one that is a file of its own (`loose`) or in another pack too
   * (a rewrite killed after its new pack was renamed in, before the old one was removed) is needed
   * only in one place. The packs are taken by how many kept objects they hold, most first (ties: the
   * smaller pack, then the file name), and each keeps only the kept objects no earlier pack (and no object file) holds, so
   * exactly one copy of each stays and the redundant pack is deleted or rewritten smaller.
   */
  private async sweepPacks(keep: Set<string>, loose: Set<string>): Promise<{ freedBytes: number; removed: number }> {
    let freedBytes = 0;
    let removed = 0;
    let names: string[];
    try {
      names = (await fs.readdir(path.join(this.dir, 'pack'))).filter((n) => n.endsWith('.pack'));
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return { freedBytes, removed };
      throw e;
    }
    const listed: Array<{ p: PackIndex; all: ReturnType<typeof packEntries>; live: number }> = [];
    for (const n of names.sort()) {
      const p = readPackIndex(path.join(this.dir, 'pack', n));
      if (!p) continue;
      const all = packEntries(p);
      listed.push({ p, all, live: all.reduce((k, o) => k + (keep.has(o.hash) ? 1 : 0), 0) });
    }
    // most kept objects first; then the one with less garbage (no rewrite needed when it holds only kept ones)
    listed.sort(
      (a, b) =>
        b.live - a.live || a.all.length - b.all.length || (a.p.file < b.p.file ? -1 : a.p.file > b.p.file ? 1 : 0),
    );
    const held = new Set(loose);
    for (const { p, all } of listed) {
      const kept = all.filter((o) => keep.has(o.hash) && !held.has(o.hash));
      for (const o of kept) held.add(o.hash);
      if (kept.length === all.length) continue;
      if (kept.length) {
        // a rewrite that fails (e.g. a full file system: prune must still work) keeps the old pack
        const w = await this.openPack().catch(() => undefined);
        if (!w) continue;
        try {
          const fd = openSync(p.file, 'r');
          try {
            for (const o of kept) {
              const buf = Buffer.alloc(o.length);
              readSync(fd, buf, 0, o.length, o.offset);
              w.add(o.hash, buf);
            }
          } finally {
            closeSync(fd);
          }
          const q = await w.finish(this.dir);
          this.temps.delete(w.tmp);
          this.open.delete(w);
          this.packs.added(q);
        } catch {
          await this.dropPack(w);
          continue;
        }
      }
      await fs.rm(p.file, { force: true });
      // the bytes of the objects dropped (as for object files, and as a prune's estimate counts them),
      // not the file sizes: a pack's index adds 44 bytes per object
      const keptBytes = kept.reduce((n, o) => n + o.length, 0);
      freedBytes += all.reduce((n, o) => n + o.length, 0) - keptBytes;
      removed += all.length - kept.length;
    }
    this.packs.refresh();
    return { freedBytes, removed };
  }
}
