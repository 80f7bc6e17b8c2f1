/**
 * The restore-point journal of one target: one JSON file per restore point in
 * `<stateDir>/journal/<targetKey>/<id>.json`, written atomically (temp + fsync + rename), plus
 * `target.json` naming the target. Listing is newest first.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fstatSync,
  lstatSync,
  openSync,
  promises as fs,
  readdirSync,
  readFileSync,
  statSync,
  type Stats,
} from 'node:fs';
import * as path from 'node:path';
import { RestorePoint, type NextAction } from '../protocol';
import { deleteAction, listAction } from './actions';
import { AgentKeepError } from './errors';
import { fsyncDir, isErrno, readJsonIfExists, writeJsonAtomic } from './fsutil';

/** Restore point id pattern (fits a Proxmox snapname): letter first, then letters, digits, underscores; ≤ 40 chars. */
export const ID_PATTERN = /^[A-Za-z][A-Za-z0-9_]+$/;

/** A new restore point id `ak_YYYYMMDD_HHMMSS_xxxx` (UTC time of `now`, 4 random hex chars). */
export function newRestorePointId(now: Date = new Date()): string {
  const p = (n: number, w = 2): string => String(n).padStart(w, '0');
  const d = `${now.getUTCFullYear()}${p(now.getUTCMonth() + 1)}${p(now.getUTCDate())}`;
  const t = `${p(now.getUTCHours())}${p(now.getUTCMinutes())}${p(now.getUTCSeconds())}`;
  return `ak_${d}_${t}_${randomBytes(2).toString('hex')}`;
}

/** Whether `id` is a syntactically valid restore point id. */
export function isValidId(id: string): boolean {
  return typeof id === 'string' && id.length <= 40 && ID_PATTERN.test(id);
}

/** Journal directories whose target.json this process has read or written (Journal.ensure). */
const ensuredDirs = new Set<string>();

/** Whether `file` holds JSON (one small synchronous read: a missing, unreadable or damaged file is false). */
function isJsonFileSync(file: string): boolean {
  try {
    JSON.parse(readFileSync(file, 'utf8'));
    return true;
  } catch {
    return false;
  }
}

/** Journal of one target. */
export class Journal {
  /**
   * @param dir the journal directory of this target
   * @param target the target as the user gave it (also the `target` of the errors' next actions)
   */
  constructor(
    readonly dir: string,
    readonly target: string,
  ) {}

  private file(id: string): string {
    return path.join(this.dir, `${id}.json`);
  }

  /** Whether ensure() ran for this instance (an operation's second put, e.g. a restore's, skips it). */
  private ensured = false;

  /**
   * Create the journal directory and its target.json (idempotent). A directory this process has
   * ensured before (each operation makes a new Journal) costs one small read of its target.json. A
   * target.json that is not JSON (damaged) is written again: it only names the target, which this
   * journal's directory stands for, so every create of the target failed on it with a bare
   * "Unexpected end of JSON input" before.
   */
  async ensure(): Promise<void> {
    if (this.ensured) return;
    const tf = path.join(this.dir, 'target.json');
    if (!(ensuredDirs.has(this.dir) && isJsonFileSync(tf))) {
      await fs.mkdir(this.dir, { recursive: true });
      let known: unknown;
      try {
        known = await readJsonIfExists(tf);
      } catch (e) {
        if (!(e instanceof SyntaxError)) throw e;
      }
      if (!known) await writeJsonAtomic(tf, { target: this.target });
      ensuredDirs.add(this.dir);
    }
    this.ensured = true;
  }

  /**
   * Write (create or replace) a restore point, atomically and durably (fsync of the entry, rename,
   * fsync of the directory).
   * @param opts.beforeRename awaited before the entry is renamed into place (what it names must be durable first)
   * @param opts.syncDir false: the rename is not fsynced (a replaced entry whose old version is as valid,
   *   e.g. a status change: a crash leaves the old or the new entry, both complete)
   * @param opts.dirSynced when given, the fsync of the directory after the rename is not awaited but
   *   handed to it (a promise that never rejects): the caller awaits it before it reports the entry
   *   as written (a create: while its retention and size-cap check run)
   */
  async put(
    rp: RestorePoint,
    opts: { beforeRename?: () => Promise<void>; syncDir?: boolean; dirSynced?: (p: Promise<void>) => void } = {},
  ): Promise<void> {
    await this.ensure();
    const { dirSynced, ...rest } = opts;
    if (!dirSynced || rest.syncDir === false) {
      await writeJsonAtomic(this.file(rp.id), rp, rest);
      return;
    }
    await writeJsonAtomic(this.file(rp.id), rp, { ...rest, syncDir: false });
    dirSynced(fsyncDir(this.dir));
  }

  /**
   * Read one restore point.
   * @throws AgentKeepError RestorePointNotFound (next action: list), CorruptSnapshot for a damaged
   *   entry (next action: delete it)
   */
  async get(id: string): Promise<RestorePoint> {
    if (!isValidId(id)) {
      throw new AgentKeepError(
        'RestorePointNotFound',
        `"${id}" is not a restore point id.`,
        'Ids look like ak_20260101_120000_ab12.',
        [listAction(this.target)],
      );
    }
    const damaged = (why: string): AgentKeepError =>
      new AgentKeepError('CorruptSnapshot', `The journal entry of ${id} is damaged: ${why}.`, undefined, [
        deleteAction(this.target, id, 'Delete the damaged restore point'),
      ]);
    const file = this.file(id);
    let read: ReturnType<typeof readEntry>;
    try {
      read = readEntry(file);
    } catch (e) {
      throw damaged((e as Error).message);
    }
    if (read === undefined) {
      throw new AgentKeepError('RestorePointNotFound', `No restore point ${id} for ${this.target}.`, undefined, [
        listAction(this.target),
      ]);
    }
    if ('rp' in read) return read.rp;
    const parsed = RestorePoint.safeParse(read.raw);
    if (!parsed.success) throw damaged(parsed.error.issues[0]?.message ?? 'bad shape');
    remember(file, read.sig, read.text, parsed.data);
    return parsed.data;
  }

  /** Whether a restore point exists (one access(2), synchronously: a create asks twice). */
  async has(id: string): Promise<boolean> {
    if (!isValidId(id)) return false;
    return existsSync(this.file(id));
  }

  /**
   * All restore points, newest first (createdAt, then id). Damaged entries are skipped. The listing
   * and the entries are read with synchronous calls (see readEntry), one after the other, yielding
   * to the event loop every 8 ms (a journal of thousands of entries read for the first time).
   */
  async list(): Promise<RestorePoint[]> {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return [];
      throw e;
    }
    const ids = names.filter((n) => n.endsWith('.json') && n !== 'target.json' && !n.startsWith('.'));
    const out: RestorePoint[] = [];
    let slice = Date.now();
    for (const n of ids) {
      const rp = await this.get(n.slice(0, -5)).catch(() => undefined /* damaged entries do not hide the others */);
      if (rp) out.push(rp);
      if (Date.now() - slice > 8) {
        await new Promise((r) => setImmediate(r));
        slice = Date.now();
      }
    }
    return out.sort((a, b) =>
      a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1,
    );
  }

  /**
   * The journal entries that exist but cannot be read as restore points (not JSON, wrong shape),
   * which list() leaves out so they do not hide the others; each with why and the delete action.
   * Shape: {id, message, actions}[], sorted by id (ids start with their UTC time).
   */
  async damaged(): Promise<{ id: string; message: string; actions: NextAction[] }[]> {
    let names: string[];
    try {
      names = await fs.readdir(this.dir);
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return [];
      throw e;
    }
    const out: { id: string; message: string; actions: NextAction[] }[] = [];
    for (const n of names.sort()) {
      if (!n.endsWith('.json') || n === 'target.json' || n.startsWith('.')) continue;
      const id = n.slice(0, -5);
      if (!isValidId(id)) continue;
      try {
        await this.get(id);
      } catch (e) {
        if (e instanceof AgentKeepError && e.kind === 'CorruptSnapshot')
          out.push({ id, message: e.message, actions: e.actions ?? [] });
      }
    }
    return out;
  }

  /** Bytes of every file of this journal (entries, target.json, markers); 0 when it does not exist. Synchronous lstats (a few dozen small calls). */
  async bytes(): Promise<number> {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return 0;
      throw e;
    }
    let total = 0;
    for (const name of names) {
      try {
        total += lstatSync(path.join(this.dir, name), { throwIfNoEntry: false })?.size ?? 0;
      } catch {
        /* unreadable: counts 0, as before */
      }
    }
    return total;
  }

  /** Remove a restore point's entry. @throws RestorePointNotFound */
  async remove(id: string): Promise<void> {
    await this.get(id).catch((e: AgentKeepError) => {
      if (e.kind !== 'CorruptSnapshot') throw e;
    });
    parsedEntries.delete(this.file(id));
    await fs.rm(this.file(id), { force: true });
  }
}

/**
 * Parsed journal entries of this process by file: a list() after a create re-reads only the entries
 * that changed (one stat for each of the others instead of open, fstat, read and close). An entry
 * is served from here while its file's size, mtime, ctime and inode are those it was read with;
 * that signature is kept only when its file was last changed more than ENTRY_RACY_MS before it was
 * read, so a replacement (always a new temp file renamed over it, later) cannot carry the same
 * times even where the clock is coarse and the inode number is reused. An entry too new for that
 * is read again, and its parse reused when the text read is the text it was parsed from (a parse
 * is a function of the text alone; no timestamp is trusted).
 */
const parsedEntries = new Map<string, { sig: string | undefined; text: string; rp: RestorePoint }>();
const ENTRY_CACHE_MAX = 4096;
const ENTRY_RACY_MS = 1000;
const sigOf = (st: Stats): string => `${st.size}:${st.mtimeMs}:${st.ctimeMs}:${st.ino}`;

/**
 * Read one entry file: the cached parse while the file is unchanged (by its signature, or by its
 * text), else its JSON (not checked), its text and, when it is old enough to be cached, its
 * signature. Synchronous calls (an entry is a few hundred bytes: stat, or open, fstat, read and
 * close, each cheaper than a thread-pool round trip; a list() after a create read every entry
 * through 4-5 of them).
 * @returns undefined when the file does not exist
 * @throws the read's error, or JSON.parse's for a damaged entry
 */
function readEntry(
  file: string,
): { rp: RestorePoint } | { raw: unknown; text: string; sig: string | undefined } | undefined {
  const hit = parsedEntries.get(file);
  if (hit?.sig) {
    const st = statSync(file, { throwIfNoEntry: false });
    if (!st) {
      parsedEntries.delete(file);
      return undefined;
    }
    if (sigOf(st) === hit.sig) return { rp: structuredClone(hit.rp) };
  }
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (e) {
    if (isErrno(e, 'ENOENT')) {
      parsedEntries.delete(file);
      return undefined;
    }
    throw e;
  }
  try {
    // stat and content of the same open file: a replacement meanwhile is never cached with its predecessor's signature
    const st = fstatSync(fd);
    const text = readFileSync(fd, 'utf8');
    const old = Date.now() - Math.max(st.mtimeMs, st.ctimeMs) > ENTRY_RACY_MS;
    const sig = old ? sigOf(st) : undefined;
    if (hit && hit.text === text) {
      hit.sig = sig;
      return { rp: structuredClone(hit.rp) };
    }
    return { raw: JSON.parse(text), text, sig };
  } finally {
    closeSync(fd);
  }
}

/** Keep a just parsed entry with its text and the signature readEntry gave (none: its file is too new to be trusted by it). */
function remember(file: string, sig: string | undefined, text: string, rp: RestorePoint): void {
  parsedEntries.delete(file);
  parsedEntries.set(file, { sig, text, rp: structuredClone(rp) });
  while (parsedEntries.size > ENTRY_CACHE_MAX) parsedEntries.delete(parsedEntries.keys().next().value as string);
}
