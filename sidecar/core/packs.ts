/**
 * Pack files of the object store (issue 14, the initial create): a create that stores many small
 * objects at once writes them into one file, `objects/pack/<32 hex>.pack`, instead of one file each
 * (git keeps fetched objects in a pack the same way, above `transfer.unpackLimit`). On ext4 a new
 * inode is what a small object costs (measured: 0.2-0.7 ms of kernel time per file create on a
 * busy file system, against ~1 ms for a whole 230 KB pack), so one file per create instead of one
 * per distinct content is what makes a first create of 1,000 or 20,000 files cheaper than git's.
 *
 * Format (all integers little-endian):
 *   "AKPACK01"                                   8 bytes
 *   the objects' bytes, back to back
 *   index: one 44-byte record per object, sorted by hash:
 *     sha256 (32 raw bytes), offset in the file (u64), length (u32)
 *   trailer (52 bytes): index offset (u64), object count (u32), sha256 of the index (32), "AKPACKIX"
 * A pack is written to `objects/tmp/<pid>-<hex>`, fsynced, and renamed into `objects/pack/` (whose
 * directory is fsynced) before the manifest that names its objects is written: a pack either is
 * complete or does not exist under `pack/`. A file there whose trailer or index does not check is
 * ignored (its objects count as missing, so the restore points naming them are CorruptSnapshot).
 * Every object read out of a pack is checked against its sha256 (readSync): bytes damaged inside the
 * object area (trailer and index intact) are a CorruptSnapshot too, never restored as they are.
 * Objects are read from a pack by offset; the index stays one Buffer per pack (binary search, no
 * object per entry: at 100,000 objects it is 4.4 MB).
 */
import { createHash, hash as oneShotHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AgentKeepError } from './errors';
import { fsyncDir, isErrno } from './fsutil';

const MAGIC = Buffer.from('AKPACK01');
const INDEX_MAGIC = Buffer.from('AKPACKIX');
const RECORD = 44;
const TRAILER = 52;
/** Data written to the temp pack in chunks of about this size (fewer write calls). */
const CHUNK = 1 << 20;

/** The directory of the packs of an object store. */
export const packDirOf = (objectsDir: string): string => path.join(objectsDir, 'pack');

/** Where an object lies in a pack. */
export interface PackSlot {
  file: string;
  offset: number;
  length: number;
}

/** One pack's index, as read from its file. */
export interface PackIndex {
  file: string;
  /** Records of RECORD bytes, sorted by hash. */
  index: Buffer;
  count: number;
  /** Bytes of the whole file. */
  size: number;
}

/**
 * Read and check a pack's header, trailer and index.
 * @returns undefined when the file is missing, too short, or its header, trailer or index does not check
 */
export function readPackIndex(file: string): PackIndex | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (e) {
    if (isErrno(e, 'ENOENT')) return undefined;
    throw e;
  }
  try {
    const size = fs.fstatSync(fd).size;
    if (size < MAGIC.length + TRAILER) return undefined;
    const t = Buffer.alloc(TRAILER);
    fs.readSync(fd, t, 0, TRAILER, size - TRAILER);
    if (!t.subarray(44).equals(INDEX_MAGIC)) return undefined;
    const at = Number(t.readBigUInt64LE(0));
    const count = t.readUInt32LE(8);
    if (at < MAGIC.length || at + count * RECORD !== size - TRAILER) return undefined;
    const index = Buffer.alloc(count * RECORD);
    fs.readSync(fd, index, 0, index.length, at);
    if (!createHash('sha256').update(index).digest().equals(t.subarray(12, 44))) return undefined;
    // the header too: a pack whose first bytes are damaged is not ours as written (QA: it was used)
    const head = Buffer.alloc(MAGIC.length);
    fs.readSync(fd, head, 0, MAGIC.length, 0);
    if (!head.equals(MAGIC)) return undefined;
    return { file, index, count, size };
  } finally {
    fs.closeSync(fd);
  }
}

/** Binary search of `hash` (32 raw bytes) in a pack's index; the record's position or -1. */
function findRecord(p: PackIndex, hash: Buffer): number {
  let lo = 0;
  let hi = p.count - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const c = p.index.compare(hash, 0, 32, mid * RECORD, mid * RECORD + 32);
    if (c === 0) return mid * RECORD;
    if (c < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/** Every object of a pack: hex hash -> its slot (for the garbage collection). */
export function packEntries(p: PackIndex): Array<{ hash: string; offset: number; length: number }> {
  const out: Array<{ hash: string; offset: number; length: number }> = [];
  for (let r = 0; r < p.index.length; r += RECORD)
    out.push({
      hash: p.index.toString('hex', r, r + 32),
      offset: Number(p.index.readBigUInt64LE(r + 32)),
      length: p.index.readUInt32LE(r + 40),
    });
  return out;
}

/**
 * The packs of one object store as this process last listed them. Listed again (only the new or
 * gone files are read) when `objects/pack/` changed: a lookup that misses, or a pack that vanished
 * (another process's garbage collection replaced it), looks again once.
 */
export class PackSet {
  private packs = new Map<string, PackIndex>();
  private stamp = '';
  /**
   * Hashes whose packed copy this process read with other bytes (readSync threw damagedError): a
   * create that makes such an object again stores it anew as a file of its own, which every read
   * takes before the packs (ObjectStore.putBuffer), instead of naming the damaged copy.
   */
  readonly damaged = new Set<string>();
  constructor(readonly objectsDir: string) {}

  private get dir(): string {
    return packDirOf(this.objectsDir);
  }

  /**
   * List `pack/` again when it changed since the last listing (its mtime and inode), or always when
   * `force` (a lookup that missed: another process may have renamed a pack in within the same
   * timestamp tick as the last listing, which leaves the directory's mtime as it was); only new packs'
   * indexes are read. Whether the set of packs changed.
   */
  refresh(force = false): boolean {
    let st: fs.BigIntStats | undefined;
    try {
      st = fs.statSync(this.dir, { bigint: true });
    } catch (e) {
      if (!isErrno(e, 'ENOENT', 'ENOTDIR')) throw e;
    }
    const stamp = st ? `${st.mtimeNs}:${st.ino}` : '';
    if (stamp === this.stamp && !force) return false;
    this.stamp = stamp;
    const names = st ? fs.readdirSync(this.dir).filter((n) => n.endsWith('.pack')) : [];
    const next = new Map<string, PackIndex>();
    let changed = names.length !== this.packs.size;
    for (const n of names) {
      const file = path.join(this.dir, n);
      const known = this.packs.get(file);
      if (!known) changed = true;
      const p = known ?? readPackIndex(file);
      if (p) next.set(file, p);
    }
    this.packs = next;
    return changed;
  }

  /** A pack this process removed (consolidatePacks, the garbage collection). */
  removed(file: string): void {
    this.packs.delete(file);
    this.closeFds(file);
  }

  /** Add a pack this process just put in place (no listing needed). */
  added(p: PackIndex): void {
    this.packs.set(p.file, p);
  }

  /** The packs known now. */
  all(): PackIndex[] {
    return [...this.packs.values()];
  }

  private find(hash: Buffer): PackSlot | undefined {
    for (const p of this.packs.values()) {
      const r = findRecord(p, hash);
      if (r >= 0)
        return { file: p.file, offset: Number(p.index.readBigUInt64LE(r + 32)), length: p.index.readUInt32LE(r + 40) };
    }
    return undefined;
  }

  private listed = false;

  /**
   * Where object `hash` (hex) is in a pack; undefined when in none. On a miss `pack/` is listed again
   * (once, whatever its mtime says: a pack renamed in by another process is seen), unless `relist` is false (a create asking whether to store an object: a pack another
   * process added meanwhile only costs a duplicate, not a stat per object); the first call lists it.
   */
  locate(hash: string, relist = true): PackSlot | undefined {
    if (!/^[0-9a-f]{64}$/.test(hash)) return undefined;
    const raw = Buffer.from(hash, 'hex');
    const hit = this.find(raw);
    if (hit || (this.listed && !relist)) return hit;
    const first = !this.listed;
    this.listed = true;
    return this.refresh(!first) ? this.find(raw) : undefined;
  }

  /**
   * The bytes of packed object `hash` (hex), checked against their sha256; undefined when no pack
   * holds it.
   * @throws AgentKeepError CorruptSnapshot when the bytes read do not hash to `hash` (a damaged pack)
   */
  readSync(hash: string): Buffer | undefined {
    for (let tries = 0; tries < 3; tries++) {
      const slot = this.locate(hash);
      if (!slot) return undefined;
      const buf = Buffer.alloc(slot.length);
      let fd: number;
      try {
        fd = this.fdOf(slot.file);
      } catch (e) {
        if (!isErrno(e, 'ENOENT')) throw e;
        // merged (consolidatePacks) or rewritten (a collection) by this or another process meanwhile:
        // its objects are in the pack that replaced it, renamed in before this one was removed
        this.packs.delete(slot.file);
        this.refresh(true);
        continue;
      }
      let got = 0;
      while (got < slot.length) {
        const n = fs.readSync(fd, buf, got, slot.length - got, slot.offset + got);
        if (n === 0) break;
        got += n;
      }
      if (got !== slot.length) return undefined;
      // objects in a pack are at most SMALL_FILE_LIMIT (1 MiB): one crypto.hash call, no Hash object
      if (oneShotHash('sha256', buf, 'hex') !== hash) {
        this.damaged.add(hash);
        throw damagedError(hash, slot.file);
      }
      return buf;
    }
    return undefined;
  }

  /** Read descriptors of packs, open until the end of this turn of the event loop (closeFds). */
  private fds = new Map<string, number>();
  private closing: NodeJS.Immediate | undefined;

  /**
   * A read descriptor of pack `file`, shared by the reads of one turn of the event loop (a restore's
   * verifySync and writes of ~40 objects open it once, not once per object) and closed by a
   * setImmediate after it. Safe against a pack replaced meanwhile: a pack is never written after its
   * rename into `pack/` and its name (128 random bits) is never reused, so the descriptor reads the
   * very bytes its index describes even when a merge or collection has unlinked it since (and every
   * object read is checked against its sha256 anyway).
   * @throws the open's error (ENOENT when the pack is gone)
   */
  private fdOf(file: string): number {
    let fd = this.fds.get(file);
    if (fd !== undefined) return fd;
    fd = fs.openSync(file, 'r');
    this.fds.set(file, fd);
    if (!this.closing) {
      this.closing = setImmediate(() => this.closeFds());
      this.closing.unref();
    }
    return fd;
  }

  /** Close the read descriptors of fdOf (all, or only that of `file`: a pack this process removes). */
  closeFds(file?: string): void {
    for (const [f, fd] of this.fds) {
      if (file !== undefined && f !== file) continue;
      this.fds.delete(f);
      try {
        fs.closeSync(fd);
      } catch {
        // already closed: nothing held
      }
    }
    if (!this.fds.size && this.closing) {
      clearImmediate(this.closing);
      this.closing = undefined;
    }
  }
}

/** The error for a packed object whose bytes do not match its hash (CorruptSnapshot, as a missing object). */
export function damagedError(hash: string, file: string): AgentKeepError {
  return new AgentKeepError(
    'CorruptSnapshot',
    `Stored object ${hash.slice(0, 12)}… in pack ${file} is damaged (its bytes do not match its sha256); the restore point is damaged.`,
    'Pick another restore point, or delete this one.',
  );
}

/** Factor of the geometric progression kept among the packs by object count (as `git repack --geometric=2`). */
export const PACK_GEOMETRIC_FACTOR = 2;

/**
 * Packs are merged (ObjectStore.consolidatePacks) once at least this many of them are out of the
 * geometric progression: about once per this many small creates (each makes one pack), so a create
 * pays for a merge about one time in eight. Between merges at most PACK_MERGE_AT - 1 small packs
 * plus the progression (at most log2 of the objects: 17 at 100,000) are searched per lookup.
 */
export const PACK_MERGE_AT = 8;

/**
 * How many of the smallest packs to merge into one so the rest, with the merged one, form a
 * geometric progression (each pack holds at least `factor` times the objects of the next smaller):
 * the split of `git repack --geometric` (builtin/repack.c, split_pack_geometry). 0 when they form one already.
 * @param weights object counts, ascending
 */
export function geometricSplit(weights: number[], factor = PACK_GEOMETRIC_FACTOR): number {
  let i = weights.length - 1;
  for (; i > 0; i--) if (weights[i] < factor * weights[i - 1]) break;
  let split = i > 0 ? i + 1 : 0;
  if (!split) return 0;
  let total = 0;
  for (let k = 0; k < split; k++) total += weights[k];
  // the merged pack may break the progression above it: take those in too
  while (split < weights.length && weights[split] < factor * total) total += weights[split++];
  return split;
}

/** One PackSet per object store directory in this process (the object store and the tree reader share it). */
const sets = new Map<string, PackSet>();
/** The PackSet of object store `objectsDir`. */
export function packSetOf(objectsDir: string): PackSet {
  let s = sets.get(objectsDir);
  if (!s) sets.set(objectsDir, (s = new PackSet(objectsDir)));
  return s;
}

/**
 * A pack being written: objects are appended to a temp file (in chunks), their records kept in
 * memory; finish() writes index and trailer, fsyncs and renames it into `pack/`. The temp file is
 * made only when the first chunk (CHUNK bytes) is written or at finish(): until then the objects
 * are only in memory, so a create that stores one object, or none, can still write it as a file of
 * its own (`unflushed`) and never makes a pack (ObjectStore.commitPack).
 */
export class PackWriter {
  private fd = -1;
  private pos = MAGIC.length;
  private chunks: Buffer[] = [];
  private chunked = 0;
  /** Whether the temp file was made (the first chunk was written). */
  private started = false;
  /** Hex hash -> [offset, length] of the objects in this pack. */
  readonly slots = new Map<string, [number, number]>();
  /**
   * Fanout directory (`objects/<hh>`) -> whether it existed when this pack first asked (ObjectStore
   * looks for an object file only in one that did: one check per fanout instead of one per object;
   * a fanout made meanwhile by another create only costs a duplicate in the pack).
   */
  readonly fanouts = new Map<string, boolean>();
  /**
   * The fsyncs of the objects this create wrote as files of their own (too few to pack, larger than
   * SMALL_FILE_LIMIT, or stored again over a damaged packed copy), and their fanout directories:
   * ObjectStore.commitPack waits for the files before the manifest may be renamed in and makes the
   * directories' fsyncs part of `durable`, so a restore point is never listed with an object whose
   * bytes or name a power loss could take.
   */
  readonly looseSynced: Array<Promise<void>> = [];
  readonly looseDirs = new Set<string>();
  bytes = 0;

  /** @param tmp the temp path (objects/tmp/<pid>-<hex>), created (O_EXCL) when the first bytes are written */
  constructor(readonly tmp: string) {}

  /** The objects added so far, when none was written to the temp file yet (else undefined): hex hash, bytes. */
  unflushed(): Array<[string, Buffer]> | undefined {
    if (this.started) return undefined;
    const out: Array<[string, Buffer]> = [];
    let k = 0;
    for (const h of this.slots.keys()) out.push([h, this.chunks[k++]]);
    return out;
  }

  /**
   * Whether an object of `size` bytes should not be added but make the objects held in memory files
   * of their own (takeUnflushed): when it would fill the first chunk while the pack holds fewer than
   * `min` objects (the pack threshold, packMinObjects), so at most CHUNK bytes wait in memory.
   */
  spill(size: number, min: number): boolean {
    return !this.started && this.slots.size + 1 < min && this.chunked + size >= CHUNK;
  }

  /** Take the objects held in memory out of this pack (none was written to its temp file yet). */
  takeUnflushed(): Array<[string, Buffer]> {
    const out = this.unflushed() ?? [];
    this.slots.clear();
    this.chunks = [];
    this.chunked = 0;
    this.bytes = 0;
    return out;
  }

  /** Append one object (hash = sha256 hex of `buf`); a hash already in this pack is not written again. */
  add(hash: string, buf: Uint8Array): void {
    if (this.slots.has(hash)) return;
    this.slots.set(hash, [this.pos + this.chunked, buf.length]);
    this.chunks.push(Buffer.from(buf.buffer, buf.byteOffset, buf.length));
    this.chunked += buf.length;
    this.bytes += buf.length;
    if (this.chunked >= CHUNK) this.flush();
  }

  private open(): void {
    if (this.started) return;
    fs.mkdirSync(path.dirname(this.tmp), { recursive: true });
    this.fd = fs.openSync(this.tmp, 'wx', 0o400);
    this.started = true;
    fs.writeSync(this.fd, MAGIC, 0, MAGIC.length, 0);
  }

  private flush(): void {
    this.open();
    if (!this.chunked) return;
    const data = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.chunked);
    let off = 0;
    while (off < data.length) off += fs.writeSync(this.fd, data, off, data.length - off, this.pos + off);
    this.pos += data.length;
    this.chunks = [];
    this.chunked = 0;
  }

  /**
   * Write index and trailer, fsync, close, and rename into `objects/pack/<32 hex>.pack` (its
   * directory fsynced).
   * @param opts.beforeRename test hook (consolidatePacks' `written` step): called once the temp file is fsynced
   * @param opts.dirSynced when given, the directory's fsync is not awaited but handed to it (a
   *   promise that never rejects): the caller awaits it before anything may name the pack's objects
   *   durably (a create: before its manifest is renamed in, overlapping the manifest's own fsync)
   * @returns the pack's index (for PackSet.added)
   */
  async finish(
    objectsDir: string,
    opts: { beforeRename?: () => void; dirSynced?: (p: Promise<void>) => void } = {},
  ): Promise<PackIndex> {
    this.flush();
    const hashes = [...this.slots.keys()].sort();
    const index = Buffer.alloc(hashes.length * RECORD);
    hashes.forEach((h, k) => {
      const [off, len] = this.slots.get(h) as [number, number];
      index.write(h, k * RECORD, 32, 'hex');
      index.writeBigUInt64LE(BigInt(off), k * RECORD + 32);
      index.writeUInt32LE(len, k * RECORD + 40);
    });
    const t = Buffer.alloc(TRAILER);
    t.writeBigUInt64LE(BigInt(this.pos), 0);
    t.writeUInt32LE(hashes.length, 8);
    createHash('sha256').update(index).digest().copy(t, 12);
    INDEX_MAGIC.copy(t, 44);
    const tail = Buffer.concat([index, t]);
    let off = 0;
    while (off < tail.length) off += fs.writeSync(this.fd, tail, off, tail.length - off, this.pos + off);
    // on the thread pool: a server's event loop is not blocked while the disk writes (5-55 ms measured)
    await fsyncFd(this.fd);
    this.close();
    opts.beforeRename?.();
    const dir = packDirOf(objectsDir);
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `${randomBytes(16).toString('hex')}.pack`);
    fs.renameSync(this.tmp, file);
    if (opts.dirSynced) opts.dirSynced(fsyncDir(dir));
    else await fsyncDir(dir);
    return { file, index, count: hashes.length, size: this.pos + tail.length };
  }

  /** Close the temp file (the caller removes it). */
  close(): void {
    if (this.fd < 0) return;
    try {
      fs.closeSync(this.fd);
    } finally {
      this.fd = -1;
    }
  }
}

/** fsync(2) of an open file descriptor, on the thread pool. */
function fsyncFd(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fsync(fd, (e) => (e ? reject(e) : resolve())));
}
