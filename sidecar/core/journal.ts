/**
 * The restore-point journal of one target: one JSON file per restore point in
 * `<stateDir>/journal/<targetKey>/<id>.json`, written atomically (temp + fsync + rename), plus
 * `target.json` naming the target. Listing is newest first.
 */
import { randomBytes } from 'node:crypto';
import { promises as fs, type Stats } from 'node:fs';
import * as path from 'node:path';
import { RestorePoint, type NextAction } from '../protocol';
import { deleteAction, listAction } from './actions';
import { AgentKeepError } from './errors';
import { isErrno, mapLimit, readJsonIfExists, writeJsonAtomic } from './fsutil';

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
   * Create the journal directory and its target.json (idempotent). A target.json that is not JSON
   * (damaged) is written again: it only names the target, which this journal's directory stands for,
   * so every create of the target failed on it with a bare "Unexpected end of JSON input" before.
   */
  async ensure(): Promise<void> {
    if (this.ensured) return;
    await fs.mkdir(this.dir, { recursive: true });
    const tf = path.join(this.dir, 'target.json');
    let known: unknown;
    try {
      known = await readJsonIfExists(tf);
    } catch (e) {
      if (!(e instanceof SyntaxError)) throw e;
    }
    if (!known) await writeJsonAtomic(tf, { target: this.target });
    this.ensured = true;
  }

  /**
   * Write (create or replace) a restore point, atomically and durably (fsync of the entry, rename,
   * fsync of the directory).
   * @param opts.beforeRename awaited before the entry is renamed into place (what it names must be durable first)
   * @param opts.syncDir false: the rename is not fsynced (a replaced entry whose old version is as valid,
   *   e.g. a status change: a crash leaves the old or the new entry, both complete)
   */
  async put(rp: RestorePoint, opts: { beforeRename?: () => Promise<void>; syncDir?: boolean } = {}): Promise<void> {
    await this.ensure();
    await writeJsonAtomic(this.file(rp.id), rp, opts);
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
    let read: Awaited<ReturnType<typeof readEntry>>;
    try {
      read = await readEntry(file);
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
    remember(file, read.sig, parsed.data);
    return parsed.data;
  }

  /** Whether a restore point exists. */
  async has(id: string): Promise<boolean> {
    if (!isValidId(id)) return false;
    try {
      await fs.access(this.file(id));
      return true;
    } catch {
      return false;
    }
  }

  /** All restore points, newest first (createdAt, then id). Damaged entries are skipped. */
  async list(): Promise<RestorePoint[]> {
    let names: string[];
    try {
      names = await fs.readdir(this.dir);
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return [];
      throw e;
    }
    const ids = names.filter((n) => n.endsWith('.json') && n !== 'target.json' && !n.startsWith('.'));
    // in parallel (each read is a few thread-pool round trips; an unchanged entry is one stat, see readEntry)
    const got = await mapLimit(ids, 16, (n) =>
      this.get(n.slice(0, -5)).catch(() => undefined /* damaged entries do not hide the others */),
    );
    const out = got.filter((r): r is RestorePoint => r !== undefined);
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

  /** Bytes of every file of this journal (entries, target.json, markers); 0 when it does not exist. */
  async bytes(): Promise<number> {
    let names: string[];
    try {
      names = await fs.readdir(this.dir);
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return 0;
      throw e;
    }
    const sizes = await mapLimit(
      names,
      16,
      async (name) => (await fs.lstat(path.join(this.dir, name)).catch(() => undefined))?.size ?? 0,
    );
    return sizes.reduce((a, b) => a + b, 0);
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
 * it is remembered only when its file was last changed more than ENTRY_RACY_MS before it was
 * read, so a replacement (always a new temp file renamed over it, later) cannot carry the same
 * times even where the clock is coarse and the inode number is reused.
 */
const parsedEntries = new Map<string, { sig: string; rp: RestorePoint }>();
const ENTRY_CACHE_MAX = 4096;
const ENTRY_RACY_MS = 1000;
const sigOf = (st: Stats): string => `${st.size}:${st.mtimeMs}:${st.ctimeMs}:${st.ino}`;

/**
 * Read one entry file: the cached parse while the file is unchanged, else its JSON (not checked)
 * and, when it is old enough to be cached, its signature.
 * @returns undefined when the file does not exist
 * @throws the read's error, or JSON.parse's for a damaged entry
 */
async function readEntry(
  file: string,
): Promise<{ rp: RestorePoint } | { raw: unknown; sig: string | undefined } | undefined> {
  const hit = parsedEntries.get(file);
  if (hit) {
    const st = await fs.stat(file).catch((e: unknown) => {
      if (isErrno(e, 'ENOENT')) return undefined;
      throw e;
    });
    if (!st) {
      parsedEntries.delete(file);
      return undefined;
    }
    if (sigOf(st) === hit.sig) return { rp: structuredClone(hit.rp) };
  }
  let h: fs.FileHandle;
  try {
    h = await fs.open(file, 'r');
  } catch (e) {
    if (isErrno(e, 'ENOENT')) return undefined;
    throw e;
  }
  try {
    // stat and content of the same open file: a replacement meanwhile is never cached with its predecessor's signature
    const st = await h.stat();
    const text = await h.readFile('utf8');
    const old = Date.now() - Math.max(st.mtimeMs, st.ctimeMs) > ENTRY_RACY_MS;
    return { raw: JSON.parse(text), sig: old ? sigOf(st) : undefined };
  } finally {
    await h.close();
  }
}

/** Keep a just parsed entry under the signature readEntry gave (none: its file is too new to be cached). */
function remember(file: string, sig: string | undefined, rp: RestorePoint): void {
  parsedEntries.delete(file);
  if (!sig) return;
  parsedEntries.set(file, { sig, rp: structuredClone(rp) });
  while (parsedEntries.size > ENTRY_CACHE_MAX) parsedEntries.delete(parsedEntries.keys().next().value as string);
}
