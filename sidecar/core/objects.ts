/**
 * The content-addressed object store shared by every target: `objects/<hh>/<sha256 hex>`, one file
 * per distinct content, readable by its owner only (0400: a restore point never widens who can read
 * a file, e.g. a 0600 `.env`). New objects are written to `objects/tmp/` and renamed into place, so
 * an object path either holds the full content or does not exist. A full file system while storing
 * fails with DiskFull (naming it), never with the error of a file of the target.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  copyFileSync,
  createReadStream,
  existsSync,
  mkdirSync,
  promises as fs,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  constants as fsc,
} from 'node:fs';
import * as path from 'node:path';
import { AgentKeepError } from './errors';
import { diskFullError, isErrno, isNoSpace } from './fsutil';
import { pidAlive } from './lock';

/** Temp objects older than this are removed even if their writer's pid is alive (pid reuse, another host). */
export const TEMP_MAX_AGE_MS = 24 * 3600_000;
/** Largest pid Linux hands out (pid_max limit); larger numbers in a temp name are not pids. */
const MAX_PID = 4_194_304;

/** Files up to this size are read into memory once (hash + write); larger ones are copied then hashed as a stream. */
export const SMALL_FILE_LIMIT = 1 << 20;

/** Mode of a stored object: read-only, owner only. */
export const OBJECT_MODE = 0o400;

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
  constructor(readonly dir: string) {}

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
      names = await fs.readdir(this.tmpDir);
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

  /** Create the store directories. */
  async init(): Promise<void> {
    await fs.mkdir(this.tmpDir, { recursive: true });
  }

  /** Whether the object exists. */
  async has(hash: string): Promise<boolean> {
    try {
      await fs.access(this.pathOf(hash));
      return true;
    } catch {
      return false;
    }
  }

  /** Move a finished temp file into place as object `hash` (or drop it if the object exists). Returns new bytes. */
  private async commit(tmp: string, hash: string, size: number): Promise<number> {
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
    } finally {
      this.committing.delete(hash);
    }
    return size;
  }

  /**
   * Store bytes. Synchronous I/O inside: for small contents the thread-pool round trips of async
   * calls cost more than the work (one call blocks for well under a millisecond).
   */
  async putBuffer(buf: Uint8Array): Promise<PutResult> {
    const hash = createHash('sha256').update(buf).digest('hex');
    const dest = this.pathOf(hash);
    if (existsSync(dest)) return { hash, size: buf.length, newBytes: 0 };
    const tmp = this.tmpPath();
    try {
      writeFileSync(tmp, buf, { mode: OBJECT_MODE, flag: 'wx' });
      const fo = hash.slice(0, 2);
      if (!this.fanouts.has(fo)) {
        mkdirSync(path.join(this.dir, fo), { recursive: true });
        this.fanouts.add(fo);
      }
      renameSync(tmp, dest);
      this.stored++;
      return { hash, size: buf.length, newBytes: buf.length };
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
   */
  async putFile(file: string, sizeHint?: number): Promise<PutResult> {
    const size = sizeHint ?? (await fs.stat(file)).size;
    if (size <= SMALL_FILE_LIMIT) return this.putBuffer(readFileSync(file));
    const tmp = this.tmpPath();
    try {
      await fs.copyFile(file, tmp, fsc.COPYFILE_FICLONE);
      const hash = await hashFile(tmp);
      const real = (await fs.stat(tmp)).size;
      return { hash, size: real, newBytes: await this.commit(tmp, hash, real) };
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
      if (isErrno(e, 'ENOENT') && !(await this.has(hash))) throw this.missing(hash);
      throw e;
    }
  }

  /**
   * copyOut, synchronously: for small objects, where the thread-pool round trips of the async calls
   * cost more than the copy (a restore of many small files).
   * @throws AgentKeepError CorruptSnapshot when the object is missing.
   */
  copyOutSync(hash: string, dest: string): void {
    try {
      copyFileSync(this.pathOf(hash), dest, fsc.COPYFILE_EXCL | fsc.COPYFILE_FICLONE);
    } catch (e) {
      if (isErrno(e, 'ENOENT') && !existsSync(this.pathOf(hash))) throw this.missing(hash);
      throw e;
    }
  }

  /** Read a whole object. @throws CorruptSnapshot when missing. */
  async read(hash: string): Promise<Buffer> {
    try {
      return await fs.readFile(this.pathOf(hash));
    } catch (e) {
      if (isErrno(e, 'ENOENT')) throw this.missing(hash);
      throw e;
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
        if (keep.has(n)) continue;
        const p = path.join(this.dir, fo, n);
        const st = await fs.lstat(p).catch(() => undefined);
        await fs.rm(p, { force: true });
        if (st) {
          freedBytes += st.size;
          removed++;
        }
      }
    }
    return { freedBytes, removed };
  }
}
