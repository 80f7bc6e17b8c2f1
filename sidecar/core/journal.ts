/**
 * The restore-point journal of one target: one JSON file per restore point in
 * `<stateDir>/journal/<targetKey>/<id>.json`, written atomically (temp + fsync + rename), plus
 * `target.json` naming the target. Listing is newest first.
 */
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { RestorePoint, type NextAction } from '../protocol';
import { deleteAction, listAction } from './actions';
import { AgentKeepError } from './errors';
import { isErrno, readJsonIfExists, writeJsonAtomic } from './fsutil';

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

  /** Create the journal directory and its target.json (idempotent). */
  async ensure(): Promise<void> {
    await fs.mkdir(this.dir, { recursive: true });
    const tf = path.join(this.dir, 'target.json');
    if (!(await readJsonIfExists(tf))) await writeJsonAtomic(tf, { target: this.target });
  }

  /** Write (create or replace) a restore point, atomically and durably. */
  async put(rp: RestorePoint): Promise<void> {
    await this.ensure();
    await writeJsonAtomic(this.file(rp.id), rp);
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
    let raw: unknown;
    try {
      raw = await readJsonIfExists(this.file(id));
    } catch (e) {
      throw damaged((e as Error).message);
    }
    if (raw === undefined) {
      throw new AgentKeepError('RestorePointNotFound', `No restore point ${id} for ${this.target}.`, undefined, [
        listAction(this.target),
      ]);
    }
    const parsed = RestorePoint.safeParse(raw);
    if (!parsed.success) throw damaged(parsed.error.issues[0]?.message ?? 'bad shape');
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
    const out: RestorePoint[] = [];
    for (const n of names) {
      if (!n.endsWith('.json') || n === 'target.json' || n.startsWith('.')) continue;
      try {
        out.push(await this.get(n.slice(0, -5)));
      } catch {
        /* damaged entries do not hide the others */
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

  /** Bytes of every file of this journal (entries, target.json, markers); 0 when it does not exist. */
  async bytes(): Promise<number> {
    let names: string[];
    try {
      names = await fs.readdir(this.dir);
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return 0;
      throw e;
    }
    let n = 0;
    for (const name of names) n += (await fs.lstat(path.join(this.dir, name)).catch(() => undefined))?.size ?? 0;
    return n;
  }

  /** Remove a restore point's entry. @throws RestorePointNotFound */
  async remove(id: string): Promise<void> {
    await this.get(id).catch((e: AgentKeepError) => {
      if (e.kind !== 'CorruptSnapshot') throw e;
    });
    await fs.rm(this.file(id), { force: true });
  }
}
