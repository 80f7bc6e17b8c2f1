/**
 * mem0 memory store (`mem0:/abs/dir[?qdrant=/abs/path][&collection=name][&api=http://host:port]`).
 *
 * `dir` is mem0's directory (`$MEM0_DIR`, default ~/.mem0) holding `history.db`, mem0's append-only
 * audit log `history(id, memory_id, old_memory, new_memory, event ADD|UPDATE|DELETE|NONE, created_at,
 * updated_at, is_deleted, actor_id, role)` (mem0/memory/storage.py). The current memories live in the
 * vector store; for the default local Qdrant that is `<qdrant>/collection/<name>/storage.sqlite`,
 * table `points(id, point)` with `point` a pickled `PointStruct` whose payload holds `data` (the text),
 * `hash`, `created_at`/`updated_at`, `user_id`/`agent_id`/`run_id`, `actor_id`, `role`
 * (qdrant_client/local/persistence.py; mem0/memory/main.py). `<qdrant>/meta.json` records each
 * collection's config, including `vectors.on_disk`.
 * The Qdrant path is the option `?qdrant=`, else `<dir>/qdrant`, else mem0's default `/tmp/qdrant`.
 * Without any Qdrant storage, entries are reconstructed from history.db (and say so).
 * Reading is always local. Changes go ONLY through mem0's own REST server (./api.ts: PUT/DELETE
 * /memories/{id}, POST /memories), which re-embeds the text and writes history.db itself; they need its
 * URL (store option `?api=` or env AGENTKEEP_MEM0_URL; key AGENTKEEP_MEM0_API_KEY when the server has
 * auth on). Without a URL the store is read-only and says why.
 * Sources: shared/reference/memory-stores.md §3 (mem0ai/mem0 @ 8d5b7865; mem0/vector_stores/qdrant.py).
 */
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Parser } from 'pickleparser';
import type { MemoryEntry, MemoryFile, Provenance, StoreProblem } from '../../protocol';
import { AgentKeepError } from '../../core/errors';
import { brokenError, problemOf } from '../broken';
import { captureSqlite, tableColumns as columns, withReadOnlyDb } from '../sqlite';
import { memoryListAction } from '../../core/actions';
import { Mem0Api, type Mem0Scope } from './api';
import { captureLocalFiles, changedLocalFiles, checkLocalRestore, restoreLocalFiles } from '../files';
import { joinOn, localTransport, type DirEntry, type FileStat, type FileTransport } from '../transport';
import type {
  AgentStateOptions,
  CapturedFile,
  CaptureSink,
  CaptureSource,
  MemoryStoreAdapter,
  RestoreSource,
  StoreEmbedding,
  StoreEmbeddings,
  StoreLintProfile,
  WriteOptions,
} from '../types';
import { embeddingKey } from '../types';
import { formatBytes } from '../../protocol/format';

/**
 * mem0's own default local Qdrant path (mem0/configs/vector_stores/qdrant.py). A fact about mem0, used
 * only in hints: AgentKeep never reads it unless the store names it (`?qdrant=/tmp/qdrant`), because a
 * machine-wide /tmp path may belong to another user's or another agent's mem0.
 */
export const MEM0_DEFAULT_QDRANT = '/tmp/qdrant';
/** A local Qdrant storage.sqlite bigger than this is not read for its vectors (memory lint). */
export const MEM0_MAX_QDRANT_BYTES = 256 * 1024 * 1024;

/**
 * The dense vector of a pickled PointStruct's `vector` (qdrant_client VectorStruct): a list of
 * finite numbers, or a dict of named vectors holding exactly one such list (sparse and multi-vectors
 * are not used); undefined otherwise.
 */
export function pointVector(v: unknown): Float32Array | undefined {
  const dense = (x: unknown): x is number[] =>
    Array.isArray(x) && x.length > 0 && x.every((n) => typeof n === 'number' && Number.isFinite(n));
  if (dense(v)) return Float32Array.from(v);
  const named = v instanceof Map ? [...v.values()] : isObj(v) ? Object.values(v) : [];
  const lists = named.filter(dense);
  return lists.length === 1 ? Float32Array.from(lists[0]) : undefined;
}

/** Directories whose content does not survive a reboot or a container recreation. */
const EPHEMERAL = ['/tmp', '/dev/shm', '/run', '/var/run'];

/** Options of a mem0 store (from the store name's query part). */
export interface Mem0Options {
  /** Absolute path of the local Qdrant storage (mem0 vector_store.config.path). */
  qdrant?: string;
  /** Collection name (mem0 vector_store.config.collection_name); default: every collection found. */
  collection?: string;
  /** mem0's REST server (enables edits). Default: env AGENTKEEP_MEM0_URL. */
  api?: string;
  /** Its key (X-API-Key). Default: env AGENTKEEP_MEM0_API_KEY; never part of the store string. */
  apiKey?: string;
  /** Who an added memory belongs to when memory.add names nobody (store options user_id, agent_id, run_id). */
  scope?: Mem0Scope;
}

/** mem0's entity ids, in the order mem0 names them. */
const SCOPE_KEYS = ['user_id', 'agent_id', 'run_id'] as const;

/** `user_id=alice&agent_id=bot` -> scope; undefined when the string names none. @throws InvalidParams */
export function parseMem0Scope(file: string | undefined): Mem0Scope | undefined {
  if (!file) return undefined;
  const params = new URLSearchParams(file);
  const bad = [...params.keys()].filter((k) => !(SCOPE_KEYS as readonly string[]).includes(k));
  if (bad.length || !params.size)
    throw new AgentKeepError(
      'InvalidParams',
      `"${file}" does not say whom a mem0 memory belongs to.`,
      'Give --file user_id=NAME (or agent_id=NAME, run_id=NAME, joined with &), as mem0 requires one of them.',
    );
  const out: Mem0Scope = {};
  for (const k of SCOPE_KEYS) if (params.get(k)) out[k] = params.get(k)!;
  return out;
}

/** The scope of a listed memory (its payload's user_id / agent_id / run_id) as `user_id=…&…`, or undefined. */
function scopeOf(e: MemoryEntry): string | undefined {
  const p = new URLSearchParams();
  for (const k of SCOPE_KEYS) if (typeof e.meta?.[k] === 'string' && e.meta[k]) p.set(k, e.meta[k] as string);
  return p.size ? p.toString() : undefined;
}

/** One history.db row. */
export interface Mem0HistoryRow {
  id: string;
  memory_id: string;
  old_memory: string | null;
  new_memory: string | null;
  event: string;
  created_at: string | null;
  updated_at: string | null;
  is_deleted: number | null;
  actor_id: string | null;
  role: string | null;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

async function exists(p: string, io: FileTransport = localTransport): Promise<boolean> {
  try {
    await io.stat(p);
    return true;
  } catch (e) {
    if (e instanceof AgentKeepError) throw e; // the other machine cannot be reached: not "absent"
    return false;
  }
}

/** Whether `p` lies in a directory that does not survive a reboot (/tmp, /dev/shm, /run, the OS temp dir). */
export function isEphemeralPath(p: string): boolean {
  const roots = [...EPHEMERAL, os.tmpdir()];
  return roots.some((r) => p === r || p.startsWith(r.endsWith('/') ? r : `${r}/`));
}

/** A timestamp from mem0 (ISO 8601, with or without zone; SQLite "YYYY-MM-DD HH:MM:SS") as ISO 8601 UTC. */
export function mem0TimeToIso(v: unknown): string | undefined {
  if (typeof v !== 'string' || !v) return undefined;
  const s = /[zZ]|[+-]\d{2}:?\d{2}$/.test(v) ? v : `${v.replace(' ', 'T')}Z`;
  const d = new Date(s);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

/** Oldest first (ISO strings compare in code-unit order), then by id. */
function byCreatedThenId(a: MemoryEntry, b: MemoryEntry): number {
  const x = `${a.createdAt ?? ''}\0${a.id}`;
  const y = `${b.createdAt ?? ''}\0${b.id}`;
  return x < y ? -1 : x > y ? 1 : 0;
}

const EVENT_ACTION = new Map<string, Provenance['traces'][number]['action']>(
  Object.entries({
    ADD: 'add',
    UPDATE: 'update',
    DELETE: 'remove',
    NONE: 'none',
  }),
);

/**
 * The mem0 store adapter (read-only), for a directory on this machine or on another one (its
 * FileTransport: node:fs here, SFTP and exec over SSH for `mem0:ssh://user@host/abs/dir`; its SQLite
 * databases are copied here and only the copies are opened).
 */
export class Mem0Store implements MemoryStoreAdapter {
  readonly kind = 'mem0';
  /**
   * For memory lint: the vectors of the local Qdrant points (embeddings), and, for a directory reached
   * over SSH, its machine, where stale claims are checked (StoreLintProfile.machine).
   */
  readonly lintProfile: StoreLintProfile;

  /**
   * @param root absolute mem0 directory (holds history.db) on the machine of `io`
   * @param spec the store name as given
   * @param opts Qdrant path and collection
   * @param io the machine the directory is on (default this one)
   */
  constructor(
    readonly root: string,
    readonly spec: string = `mem0:${root}`,
    private readonly opts: Mem0Options = {},
    readonly io: FileTransport = localTransport,
  ) {
    this.lintProfile = { ...(io.remote ? { machine: io } : {}), embeddings: (l) => this.embeddings(l) };
    this.apiUrl = opts.api ?? (process.env.AGENTKEEP_MEM0_URL || undefined);
    this.apiKey = opts.apiKey ?? (process.env.AGENTKEEP_MEM0_API_KEY || undefined);
  }
  private readonly apiUrl?: string;
  private readonly apiKey?: string;

  /** See MemoryStoreAdapter.location: the mem0 directory (ssh://user@host:port/abs/dir on another machine). */
  get location(): string {
    return this.io.display(this.root);
  }
  /** See MemoryStoreAdapter.localRoot: the mem0 directory; none on another machine. */
  get localRoot(): string | undefined {
    return this.io.remote ? undefined : this.root;
  }
  /** See MemoryStoreAdapter.capture: the files of agentStateFiles (sidecar/memory/files.ts). */
  capture(sink: CaptureSink, opts?: AgentStateOptions): Promise<CapturedFile[]> {
    return captureLocalFiles(this, this.root, sink, opts, this.io);
  }
  /** See MemoryStoreAdapter.restore: temp file + rename per file (sidecar/memory/files.ts). */
  restore(files: readonly CapturedFile[], src: RestoreSource, opts?: AgentStateOptions): Promise<string[]> {
    return restoreLocalFiles(this, this.root, files, src, opts, this.io);
  }
  /** See MemoryStoreAdapter.checkRestore: nothing in the way that the undo point would not hold (../files.ts). */
  checkRestore(files: readonly CapturedFile[]): Promise<void> {
    return checkLocalRestore(this, this.root, files, this.io);
  }
  /** See MemoryStoreAdapter.changedFiles. */
  changedFiles(files: readonly CapturedFile[]): Promise<string[]> {
    return changedLocalFiles(this, this.root, files, this.io);
  }

  private get historyDb(): string {
    return joinOn(this.io, this.root, 'history.db');
  }

  /** The Qdrant storage path in use and how it was chosen, or undefined when none exists. */
  async qdrantPath(): Promise<{ path: string; how: string } | undefined> {
    if (this.opts.qdrant)
      return (await exists(this.opts.qdrant, this.io))
        ? { path: this.opts.qdrant, how: 'store option ?qdrant=' }
        : undefined;
    const inside = joinOn(this.io, this.root, 'qdrant');
    if (await exists(inside, this.io)) return { path: inside, how: `${this.io.display(inside)}` };
    return undefined;
  }

  /** Collections in the Qdrant storage: name -> storage.sqlite path (only those that exist). */
  private async collections(q: string): Promise<Array<{ name: string; db: string }>> {
    const names = this.opts.collection
      ? [this.opts.collection]
      : (await this.io.readdir(path.posix.join(q, 'collection')).catch(() => [] as DirEntry[])).map((d) => d.name);
    const out: Array<{ name: string; db: string }> = [];
    for (const name of names.sort()) {
      const db = path.posix.join(q, 'collection', name, 'storage.sqlite');
      if (await exists(db, this.io)) out.push({ name, db });
    }
    return out;
  }

  /** @throws StoreNotFound when the directory is missing or holds neither history.db nor Qdrant storage. */
  async check(): Promise<void> {
    let st: FileStat;
    try {
      st = await this.io.stat(this.root);
    } catch (e) {
      if (e instanceof AgentKeepError) throw e;
      throw new AgentKeepError(
        'StoreNotFound',
        `mem0 directory ${this.location} does not exist.`,
        `Point --store at mem0's directory ($MEM0_DIR, default ~/.mem0, as an absolute path), e.g. mem0:${this.io.display('/home/me/.mem0')}.`,
      );
    }
    if (!st.isDirectory())
      throw new AgentKeepError(
        'StoreNotFound',
        `mem0 directory ${this.location} is not a directory.`,
        'Point --store at the directory that holds history.db.',
      );
    if (!(await exists(this.historyDb, this.io)) && !(await this.qdrantPath())) {
      throw new AgentKeepError(
        'StoreNotFound',
        `Not a mem0 directory: no history.db and no local Qdrant storage in ${this.location}.`,
        'Point at the directory that holds history.db ($MEM0_DIR or ~/.mem0); give the Qdrant path with ?qdrant=/abs/path when it lives elsewhere.',
      );
    }
  }

  /** Why entries cannot be edited from AgentKeep (no API URL configured), or undefined when one is set. */
  async readOnlyReason(): Promise<string | undefined> {
    if (this.apiUrl) return undefined;
    return (
      'mem0 changes memories only through its own API (Memory.update / Memory.delete, which also embed the text ' +
      "and write history.db); AgentKeep edits them through mem0's REST server: set AGENTKEEP_MEM0_URL (or add " +
      '?api=http://host:port to the store), and AGENTKEEP_MEM0_API_KEY when the server has auth on. AgentKeep ' +
      'never writes history.db or the vector store.'
    );
  }

  /**
   * The store's own history.db read once per version (size, mtime of the db and its WAL): the rows,
   * or the problem that keeps it from being read (damaged, not SQLite), so a damaged history.db costs
   * one read, not one per entry. @throws what history() throws other than FileError
   */
  private async ownHistory(): Promise<{ rows: Mem0HistoryRow[] } | { problem: StoreProblem }> {
    const [st, wal] = await this.io.stamps([this.historyDb, this.historyDb + '-wal']).catch((e: unknown) => {
      if (e instanceof AgentKeepError) throw e;
      return [undefined, undefined];
    });
    const key = `${st?.size}:${st?.mtime}:${st?.ino}:${wal?.size ?? 0}:${wal?.mtime ?? 0}`;
    if (this.hist?.key !== key) {
      try {
        this.hist = { key, rows: await this.history() };
      } catch (e) {
        if (!(e instanceof AgentKeepError && e.kind === 'FileError')) throw e;
        this.hist = { key, problem: problemOf(e) };
      }
    }
    return this.hist.problem ? { problem: this.hist.problem } : { rows: this.hist.rows! };
  }
  private hist?: { key: string; rows?: Mem0HistoryRow[]; problem?: StoreProblem };

  /**
   * All history.db rows, oldest first (empty when history.db is missing). `io`: the machine of
   * `dbPath` (default the store's; a capture's copy is local).
   * @throws FileError, "is damaged" with the recovery hint for a damaged database (../sqlite.ts)
   */
  async history(dbPath = this.historyDb, io: FileTransport = this.io): Promise<Mem0HistoryRow[]> {
    if (!(await exists(dbPath, io))) return [];
    return withReadOnlyDb(
      dbPath,
      (db) => {
        const cols = new Set(columns(db, 'history'));
        if (!cols.size) return [];
        const pick = (c: string): string => (cols.has(c) ? c : `NULL AS ${c}`);
        const sel = [
          'id',
          'memory_id',
          'old_memory',
          'new_memory',
          'event',
          'created_at',
          'updated_at',
          'is_deleted',
          'actor_id',
          'role',
        ]
          .map(pick)
          .join(', ');
        // created_at is the memory's creation time on every row; updated_at the time of the change
        return db.all(
          `SELECT ${sel} FROM history ORDER BY COALESCE(updated_at, created_at), rowid`,
        ) as unknown as Mem0HistoryRow[];
      },
      io,
    );
  }

  /**
   * The memories of one collection's storage.sqlite; with `vectors`, each point's dense vector too
   * (pointVector), keyed by embeddingKey(file, id), with `model`.
   * @throws FileError for a damaged database (../sqlite.ts), or an empty one (0 bytes, no tables: the
   *   collection's points are gone)
   */
  private readPoints(
    dbPath: string,
    collection: string,
    file: string,
    warnings: string[],
    io: FileTransport = this.io,
    vectors?: { into: Map<string, StoreEmbedding>; model: string },
  ): Promise<MemoryEntry[]> {
    return withReadOnlyDb(
      dbPath,
      (db) => {
        if (!columns(db, 'points').length) {
          if (!(db.all('SELECT name FROM sqlite_master') as unknown[]).length)
            // 0 bytes, or a database with nothing in it: the points are gone (Qdrant's local mode would
            // create the table again and load the collection empty), not "another kind of file"
            throw new AgentKeepError(
              'FileError',
              `SQLite database ${io.display(dbPath)} is empty (no tables): the points of Qdrant collection ` +
                `"${collection}" are gone, and mem0 would start it with no memories.`,
              `Keep a copy of ${io.display(dbPath)}, then restore it from a restore point (scope agent).`,
            );
          warnings.push(`${io.display(dbPath)} has no points table; not a Qdrant local collection.`);
          return [];
        }
        const rows = db.all('SELECT id, point FROM points') as Array<{ id: string; point: Uint8Array }>;
        const out: MemoryEntry[] = [];
        let bad = 0;
        for (const r of rows) {
          let point: unknown;
          try {
            point = new Parser().parse(r.point);
          } catch {
            bad++;
            continue;
          }
          const st = isObj(point) && isObj(point.__dict__) ? point.__dict__ : point;
          if (!isObj(st) || !isObj(st.payload)) {
            bad++;
            continue;
          }
          const payload = st.payload;
          const text =
            typeof payload.data === 'string'
              ? payload.data
              : typeof payload.memory === 'string'
                ? payload.memory
                : undefined;
          if (text === undefined) {
            bad++;
            continue;
          }
          const id = typeof st.id === 'string' || typeof st.id === 'number' ? String(st.id) : String(r.id);
          if (vectors) {
            const v = pointVector(st.vector);
            if (v) vectors.into.set(embeddingKey(file, id), { model: vectors.model, vector: v });
          }
          const meta: Record<string, unknown> = { collection };
          for (const [k, v] of Object.entries(payload))
            if (k !== 'data' && k !== 'memory' && k !== 'created_at' && k !== 'updated_at') meta[k] = v;
          const createdAt = mem0TimeToIso(payload.created_at);
          const updatedAt = mem0TimeToIso(payload.updated_at);
          const source =
            typeof payload.actor_id === 'string' && payload.actor_id
              ? payload.actor_id
              : typeof payload.role === 'string'
                ? payload.role
                : undefined;
          out.push({
            id,
            text,
            store: this.spec,
            file,
            ...(createdAt ? { createdAt } : {}),
            ...(updatedAt ? { updatedAt } : {}),
            ...(source ? { source } : {}),
            meta,
          });
        }
        if (bad)
          warnings.push(
            `${io.display(dbPath)}: ${bad} point(s) could not be read as mem0 memories (no payload data); skipped.`,
          );
        return out;
      },
      io,
    );
  }

  /**
   * The embedding model of this mem0, `<provider>/<model>`, from `<dir>/config.json` when it holds a
   * mem0 config with an embedder (`{"embedder": {"provider", "config": {"model"}}}`, the shape
   * Memory.from_config takes); mem0 itself writes only a user id there and keeps its embedder config in
   * the program that creates the Memory, so mostly `mem0:unknown-model <dir>`: an unknown model is
   * named with its store, so that two mem0 stores whose models are not known are never compared (their
   * models may differ).
   */
  private async embedderModel(): Promise<string> {
    const conf = await this.io
      .readFile(joinOn(this.io, this.root, 'config.json'))
      .then((b) => JSON.parse(b.toString('utf8')) as unknown)
      .catch(() => undefined);
    const emb = isObj(conf) && isObj(conf.embedder) ? conf.embedder : undefined;
    const model = emb && isObj(emb.config) ? emb.config.model : undefined;
    if (typeof model === 'string' && model)
      return typeof emb?.provider === 'string' && emb.provider ? `${emb.provider}/${model}` : model;
    return `mem0:unknown-model ${this.io.display(this.root)}`;
  }

  /**
   * The vectors of the memories (StoreLintProfile.embeddings): each local Qdrant point's vector, as
   * qdrant_client's local persistence pickled it with the PointStruct (a list of floats; a collection
   * with one named dense vector gives that one), keyed like list()'s entries (file = the collection's
   * storage.sqlite, id = the point id); model: embedderModel(). A storage.sqlite over MEM0_MAX_QDRANT_BYTES
   * is skipped with a note; a damaged one gives no vectors (list() reports it as broken); memories
   * reconstructed from history.db have none (mem0 keeps vectors only in the vector store).
   * @throws what the transport throws when the machine cannot be reached (AgentKeepError)
   */
  async embeddings(limits: { maxBytes?: number } = {}): Promise<StoreEmbeddings> {
    const max = limits.maxBytes ?? MEM0_MAX_QDRANT_BYTES;
    const into = new Map<string, StoreEmbedding>();
    const notes: string[] = [];
    const q = await this.qdrantPath();
    if (!q) return { vectors: into, notes };
    const model = await this.embedderModel();
    for (const c of await this.collections(q.path)) {
      const [st] = await this.io.stamps([c.db]);
      if (st && st.size > max) {
        notes.push(
          `The vectors of ${this.io.display(c.db)} were not read: the file is ${formatBytes(st.size)}, over the ` +
            `${formatBytes(max)} the lint reads, so its entries are compared by their words only.`,
        );
        continue;
      }
      try {
        await this.readPoints(c.db, c.name, this.io.display(c.db), [], this.io, { into, model });
      } catch (e) {
        if (!(e instanceof AgentKeepError && e.kind === 'FileError')) throw e; // damaged: list() reports it
      }
    }
    return { vectors: into, notes };
  }

  /** Entries reconstructed from history.db: the last state of every memory whose last event is not DELETE. */
  private fromHistory(rows: Mem0HistoryRow[], file = this.io.display(this.historyDb)): MemoryEntry[] {
    const last = new Map<
      string,
      { text: string | null; created?: string; updated?: string; deleted: boolean; actor?: string }
    >();
    for (const r of rows) {
      const prev = last.get(r.memory_id);
      const deleted = r.event === 'DELETE' || r.is_deleted === 1;
      const text = r.event === 'NONE' ? (prev?.text ?? r.new_memory) : r.new_memory;
      last.set(r.memory_id, {
        text,
        created: prev?.created ?? mem0TimeToIso(r.created_at),
        updated: mem0TimeToIso(r.updated_at ?? undefined) ?? prev?.updated,
        deleted,
        actor: r.actor_id ?? r.role ?? prev?.actor,
      });
    }
    const out: MemoryEntry[] = [];
    for (const [id, s] of last) {
      if (s.deleted || s.text == null) continue;
      out.push({
        id,
        text: s.text,
        store: this.spec,
        file,
        ...(s.created ? { createdAt: s.created } : {}),
        ...(s.updated ? { updatedAt: s.updated } : {}),
        ...(s.actor ? { source: s.actor } : {}),
        meta: { reconstructedFromHistory: true },
      });
    }
    return out;
  }

  /**
   * One MemoryFile (kind `mem0`) per Qdrant collection (file = its storage.sqlite), entries oldest
   * first; without Qdrant storage, one reconstructed from history.db. Warnings (first file): the
   * configuration is not durable (Qdrant or history.db under /tmp or another ephemeral dir, a
   * collection created with on_disk false, which makes mem0 delete the Qdrant path on every start),
   * history.db missing, Qdrant storage outside the store directory (not captured in restore points),
   * history.db damaged (the change history is unavailable; mem0 itself cannot open it).
   * A collection whose storage.sqlite is damaged is listed with `broken` and no entries (never as
   * empty); so is history.db when the entries come from it. Only when every file is broken is the
   * first problem thrown.
   * @throws StoreNotFound, FileError
   */
  async list(): Promise<MemoryFile[]> {
    await this.check();
    const readOnly = await this.readOnlyReason();
    const warnings: string[] = [];
    const hasHistory = await exists(this.historyDb, this.io);
    const hist = hasHistory ? await this.ownHistory() : { rows: [] as Mem0HistoryRow[] };
    if ('problem' in hist) {
      const fix = hist.problem.hint ? ` Fix: ${hist.problem.hint}` : '';
      const what = 'mem0 cannot open it either, and the change history of these memories (provenance) is unavailable.';
      warnings.push(`${hist.problem.message} ${what}${fix}`);
    }
    if (!hasHistory) {
      warnings.push(
        `history.db is missing in ${this.location}: mem0 keeps no record of how memories changed (check history_db_path / MEM0_DIR; mem0ai/mem0#3717: a history path inside a container without a volume is lost on redeploy).`,
      );
    } else if (isEphemeralPath(await this.io.realpath(this.historyDb))) {
      warnings.push(
        `history.db is under ${this.io.display(path.posix.dirname(this.historyDb))}, which does not survive a reboot: set history_db_path (or MEM0_DIR) to a persistent directory.`,
      );
    }
    const q = await this.qdrantPath();
    const files: MemoryFile[] = [];
    if (q) {
      const real = await this.io.realpath(q.path);
      const qShown = this.io.display(q.path);
      if (isEphemeralPath(real)) {
        warnings.push(
          `The Qdrant storage ${qShown} is under a temporary directory (mem0's default /tmp/qdrant): its memories are lost on reboot. Set vector_store.config.path to a persistent directory and on_disk: true.`,
        );
      }
      const rel = path.posix.relative(this.root, real);
      if (rel.startsWith('..') || path.posix.isAbsolute(rel)) {
        warnings.push(
          `The Qdrant storage ${qShown} is outside ${this.location}: restore points of this store capture history.db only. Move it into the store directory (vector_store.config.path) to capture it.`,
        );
      }
      const meta = await this.io
        .readFile(path.posix.join(q.path, 'meta.json'))
        .then((t) => JSON.parse(t.toString('utf8')) as unknown)
        .catch(() => undefined);
      const cols = await this.collections(q.path);
      if (!cols.length)
        warnings.push(`No collection with a storage.sqlite under ${qShown}/collection/${this.opts.collection ?? '*'}.`);
      for (const c of cols) {
        const conf = isObj(meta) && isObj(meta.collections) ? meta.collections[c.name] : undefined;
        const vectors = isObj(conf) ? conf.vectors : undefined;
        const onDisk = isObj(vectors) ? vectors.on_disk : undefined;
        if (!isObj(meta)) {
          warnings.push(
            `${qShown}/meta.json is missing or unreadable: cannot tell whether collection "${c.name}" was created with on_disk: true.`,
          );
        } else if (onDisk !== true) {
          warnings.push(
            `Collection "${c.name}" was created with on_disk ${onDisk === false ? 'false' : 'unset (false)'} (${qShown}/meta.json): with on_disk false, mem0 deletes the local Qdrant path each time it starts (mem0/vector_stores/qdrant.py), so these memories do not survive a restart. Set vector_store.config.on_disk: true.`,
          );
        }
        try {
          const entries = await this.readPoints(c.db, c.name, this.io.display(c.db), warnings);
          entries.sort(byCreatedThenId);
          files.push({ kind: 'mem0', file: this.io.display(c.db), store: this.spec, entries, readOnly });
        } catch (e) {
          if (!(e instanceof AgentKeepError && e.kind === 'FileError')) throw e;
          // the Qdrant local client loads every point at start: mem0 cannot open this collection either
          const problem = problemOf(e);
          const why =
            `Qdrant's local mode (and so mem0) cannot load collection "${c.name}" from it; ` +
            'its memories are not shown.';
          const broken = { ...problem, message: `${problem.message} ${why}` };
          files.push({ kind: 'mem0', file: this.io.display(c.db), store: this.spec, entries: [], readOnly, broken });
        }
      }
    }
    if (!files.length) {
      if (!q) {
        warnings.push(
          `No local Qdrant storage found (${this.io.display(this.opts.qdrant ?? joinOn(this.io, this.root, 'qdrant'))}); entries are reconstructed from history.db (a remote vector store cannot be read here).` +
            (this.opts.qdrant
              ? ''
              : ` If this mem0 uses its default path, name it: ${this.spec.split('?')[0]}?qdrant=${MEM0_DEFAULT_QDRANT} (that path does not survive a reboot).`),
        );
      }
      const file = { kind: 'mem0', file: this.io.display(this.historyDb), store: this.spec, readOnly };
      if ('problem' in hist) files.push({ ...file, entries: [], broken: hist.problem });
      else files.push({ ...file, entries: this.fromHistory(hist.rows) });
    }
    if (warnings.length) files[0].warnings = warnings;
    const broken = files.filter((f) => f.broken);
    if (broken.length === files.length) throw brokenError(broken[0].broken!); // nothing could be read
    return files;
  }

  /** See MemoryStoreAdapter.historyProblem: history.db that exists but cannot be read (one read, cached). */
  async historyProblem(): Promise<{ file: string; problem: StoreProblem } | undefined> {
    if (!(await exists(this.historyDb))) return undefined;
    const hist = await this.ownHistory();
    return 'problem' in hist ? { file: this.historyDb, problem: hist.problem } : undefined;
  }

  /**
   * The entry's history.db timeline, oldest first: ADD -> add, UPDATE -> update (with the previous
   * text), DELETE -> remove, NONE -> none; time = updated_at of the change (created_at for ADD),
   * source = actor_id or role. history.db does not link a memory to the message it came from
   * (mem0ai/mem0#7047), so `session`/`messageId` stay empty. A damaged history.db gives no traces and
   * `unavailable` (the FileError with the fix).
   */
  async provenance(entry: MemoryEntry): Promise<Provenance> {
    if (!(await exists(this.historyDb, this.io)))
      return {
        traces: [],
        note: `No trace: ${this.io.display(this.historyDb)} does not exist, so mem0 kept no history for this memory.`,
      };
    const hist = await this.ownHistory();
    if ('problem' in hist) {
      const note = `Provenance unavailable: ${hist.problem.message} Its change history is unknown (not "no history").`;
      return { traces: [], note, unavailable: hist.problem };
    }
    const rows = hist.rows.filter((r) => r.memory_id === entry.id);
    const traces: Provenance['traces'] = rows.map((r) => {
      const time = mem0TimeToIso(r.event === 'ADD' ? r.created_at : (r.updated_at ?? r.created_at));
      const src = r.actor_id ?? r.role ?? undefined;
      const msg = r.event === 'DELETE' ? r.old_memory : r.new_memory;
      return {
        action: EVENT_ACTION.get(r.event) ?? 'update',
        ...(time ? { time } : {}),
        ...(src ? { source: src } : {}),
        ...(msg ? { message: msg.slice(0, 2000) } : {}),
        ...(r.old_memory && r.event !== 'DELETE' && r.event !== 'ADD' ? { previous: r.old_memory } : {}),
        messageId: r.id,
      };
    });
    return {
      traces,
      note: traces.length
        ? "From mem0's history.db; mem0 does not record which message a memory was extracted from (mem0ai/mem0#7047)."
        : `No trace: history.db has no rows for memory ${entry.id} (added before history was kept, history.db reset, or written by another mem0 process with another history_db_path).`,
    };
  }

  /** The Qdrant dir relative to root when it lies inside root, else undefined. */
  private async qdrantRel(): Promise<string | undefined> {
    const q = await this.qdrantPath();
    if (!q) return undefined;
    const rel = path.posix.relative(this.root, q.path);
    return rel && !rel.startsWith('..') && !path.posix.isAbsolute(rel) ? rel : undefined;
  }

  /** history.db (+ -wal) and every file of the Qdrant storage when it lies inside the store dir; POSIX relative, sorted. */
  async agentStateFiles(): Promise<string[]> {
    const out: string[] = [];
    for (const f of ['history.db', 'history.db-wal'])
      if (await exists(joinOn(this.io, this.root, f), this.io)) out.push(f);
    const q = await this.qdrantRel();
    if (q) {
      const walk = async (rel: string): Promise<void> => {
        const ents = await this.io.readdir(joinOn(this.io, this.root, rel)).catch(() => [] as DirEntry[]);
        for (const e of ents) {
          const r = `${rel}/${e.name}`;
          if (e.isDirectory()) await walk(r);
          else if (e.isFile()) out.push(r);
        }
      };
      await walk(q);
    }
    return out.sort();
  }

  /** Whether `rel` is history.db, its -wal, or under the qdrant/ dir (the default place inside the store). */
  isAgentStatePath(rel: string): boolean {
    const p = path.posix.normalize(rel.replace(/\\/g, '/')).replace(/^\.\//, '');
    if (p.startsWith('../') || p === '..' || path.posix.isAbsolute(p)) return false;
    const qrel = this.opts.qdrant ? path.relative(this.root, this.opts.qdrant).split(path.sep).join('/') : 'qdrant';
    return p === 'history.db' || p === 'history.db-wal' || (!qrel.startsWith('..') && p.startsWith(`${qrel}/`));
  }

  /**
   * Consistent capture: SQLite files (history.db, storage.sqlite) are copied consistently with their
   * WAL checkpointed into the copy (sidecar/memory/sqlite.ts captureSqlite); `history.db-wal` is not
   * captured on its own (resolves false: its frames are in the captured history.db, and a restore
   * removes the current -wal instead of putting an old one next to the restored db); other files
   * are copied as they are.
   */
  async captureFile(rel: string, dest: string): Promise<boolean> {
    const src = joinOn(this.io, this.root, rel);
    if (rel.endsWith('-wal') || rel.endsWith('-journal')) return false;
    if (rel === 'history.db' || rel.endsWith('.sqlite')) await captureSqlite(src, dest, this.io);
    else await this.io.download(src, dest);
    return true;
  }

  /**
   * The memories as captured in a restore point (memory.diff): the captured Qdrant collections'
   * points, else entries reconstructed from the captured history.db. No durability warnings.
   * @throws FileError (a captured database that does not read)
   */
  async listCapture(src: CaptureSource): Promise<MemoryFile[]> {
    const readOnly = await this.readOnlyReason();
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'agentkeep-mem0-cap-'));
    try {
      const files: MemoryFile[] = [];
      for (const rel of src.files.filter((f) => /(^|\/)collection\/[^/]+\/storage\.sqlite$/.test(f)).sort()) {
        const buf = await src.read(rel);
        if (!buf) continue;
        const name = rel.split('/').slice(-2)[0];
        const tmp = path.join(dir, `${files.length}.sqlite`);
        await fs.writeFile(tmp, buf);
        const warnings: string[] = [];
        const points = await this.readPoints(tmp, name, src.display(rel), warnings, localTransport);
        const entries = points.sort(byCreatedThenId);
        files.push({
          kind: 'mem0',
          file: src.display(rel),
          store: this.spec,
          entries,
          readOnly,
          ...(warnings.length ? { warnings } : {}),
        });
      }
      if (!files.length) {
        const buf = src.files.includes('history.db') ? await src.read('history.db') : undefined;
        const tmp = path.join(dir, 'history.db');
        if (buf) await fs.writeFile(tmp, buf);
        const entries = buf ? this.fromHistory(await this.history(tmp, localTransport), src.display('history.db')) : [];
        files.push({ kind: 'mem0', file: src.display('history.db'), store: this.spec, entries, readOnly });
      }
      return files;
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  }

  // ------------------------------------------------------------------------------------------
  // writes, through mem0's REST server (./api.ts)

  /** The client, or Unsupported (with the reason) when no URL is configured. */
  private client(): Mem0Api {
    if (!this.apiUrl)
      throw new AgentKeepError(
        'Unsupported',
        `mem0 store ${this.spec} is read-only.`,
        "Set AGENTKEEP_MEM0_URL (or add ?api=http://host:port to the store) to mem0's REST server; AgentKeep never writes history.db or the vector store.",
      );
    return new Mem0Api(this.apiUrl, this.apiKey);
  }

  /**
   * sha256 (hex) of the memories as read now (each file's entries: id and text, in order; not where
   * the files are); with `file` (a MemoryFile.file), of that file's entries only. The compare-and-swap
   * token of edit/remove/add.
   */
  async contentHash(file?: string): Promise<string> {
    const h = createHash('sha256');
    for (const f of await this.list()) {
      if (file && f.file !== file) continue;
      // not the path: the same memories hash the same locally and over SSH
      h.update(`${f.kind}\0${f.broken ? 'broken' : ''}\n`);
      for (const e of f.entries) h.update(`${e.id}\0${e.text}\n`);
    }
    return h.digest('hex');
  }

  /**
   * Find one memory by id or unique id prefix (>= 4 chars, any case).
   * @throws EntryNotFound, Conflict (an ambiguous prefix)
   */
  async resolve(entryId: string): Promise<{ entry: MemoryEntry; file: MemoryFile }> {
    const files = await this.list();
    const all = files.flatMap((file) => file.entries.map((entry) => ({ entry, file })));
    const want = entryId.trim().toLowerCase();
    let hits = all.filter((h) => h.entry.id === entryId);
    if (!hits.length && want.length >= 4) hits = all.filter((h) => h.entry.id.toLowerCase().startsWith(want));
    if (hits.length === 1) return hits[0];
    if (!hits.length)
      throw new AgentKeepError('EntryNotFound', `No mem0 memory ${entryId} in ${this.location}.`, undefined, [
        memoryListAction([this.spec]),
      ]);
    throw new AgentKeepError(
      'Conflict',
      `Id ${entryId} is ambiguous: ${hits
        .slice(0, 8)
        .map((h) => h.entry.id)
        .join(', ')}.`,
      'Give more characters of the id.',
    );
  }

  /** Refuse (Conflict) when `expectedHash` is neither the store's nor `file`'s content hash now. */
  private async checkHash(expectedHash: string | undefined, file?: string): Promise<void> {
    if (expectedHash === undefined) return;
    if (expectedHash === (await this.contentHash())) return;
    if (file && expectedHash === (await this.contentHash(file))) return;
    throw new AgentKeepError(
      'Conflict',
      `The mem0 memories of ${this.location} changed since they were read (the agent or someone else wrote them in between). Nothing was changed.`,
      'List the store again (memory list) and redo the change on what is there now.',
    );
  }

  /**
   * The memory as mem0's server has it, checked against what AgentKeep read (compare-and-swap as far as
   * the API allows: mem0 has no conditional write, so the text is re-read right before the write).
   * @throws EntryNotFound (the server has no such memory), Conflict (its text differs from the read one)
   */
  private async serverCopy(api: Mem0Api, e: MemoryEntry): Promise<Record<string, unknown>> {
    const now = await api.get(e.id);
    if (!now)
      throw new AgentKeepError(
        'EntryNotFound',
        `mem0 at ${api.baseUrl} has no memory ${e.id}, though ${this.location} lists it.`,
        'The URL may belong to another mem0 than this directory (check ?api= / AGENTKEEP_MEM0_URL), or mem0 deleted it just now: list the store again.',
      );
    if (now.memory !== e.text)
      throw new AgentKeepError(
        'Conflict',
        `mem0 memory ${e.id} changed since it was read: mem0 has "${now.memory.slice(0, 80)}", AgentKeep read "${e.text.slice(0, 80)}". Nothing was changed.`,
        'List the store again (memory list) and redo the change on what is there now.',
      );
    return now as unknown as Record<string, unknown>;
  }

  private notReflected(what: string): AgentKeepError {
    return new AgentKeepError(
      'Conflict',
      `mem0 at ${this.apiUrl} reported the ${what} as done, but ${this.location} does not show it.`,
      'The URL probably belongs to another mem0 than this directory (its history_db_path / vector store are elsewhere): check ?api= / AGENTKEEP_MEM0_URL.',
    );
  }

  /** Hand the memory as the server had it to opts.beforeWrite (the core keeps it as the backup). */
  private async backup(e: MemoryEntry, server: Record<string, unknown>, opts?: WriteOptions): Promise<void> {
    await opts?.beforeWrite?.(`${e.file ?? this.location}#${e.id}.json`, Buffer.from(JSON.stringify(server, null, 2)));
  }

  /** The entry `id` as listed now, and the new content hash. */
  private async reread(id: string): Promise<{ entry?: MemoryEntry; hash: string }> {
    const entry = (await this.list()).flatMap((f) => f.entries).find((e) => e.id === id);
    return { entry, hash: await this.contentHash() };
  }

  /**
   * Replace a memory's text through `PUT /memories/{id}` (mem0's Memory.update: re-embeds, writes an
   * UPDATE row to history.db). Compare-and-swap: refuses (Conflict) when the content hash is no longer
   * `expectedHash`, or when mem0's copy differs from what was read (re-read right before the PUT); checks
   * afterwards that mem0 and this directory show the new text.
   * @throws Unsupported (no URL), InvalidParams, EntryNotFound, Conflict, AuthFailed, Internal
   */
  async edit(
    entryId: string,
    text: string,
    expectedHash?: string,
    opts?: WriteOptions,
  ): Promise<{ entry: MemoryEntry; previous: MemoryEntry; contentHash: string }> {
    const api = this.client();
    const clean = text.trim();
    if (!clean)
      throw new AgentKeepError(
        'InvalidParams',
        'The new text is empty.',
        'Give the new text, or remove the memory instead.',
      );
    const { entry } = await this.resolve(entryId);
    await this.checkHash(expectedHash, entry.file);
    const server = await this.serverCopy(api, entry);
    if (clean === entry.text) return { entry, previous: entry, contentHash: await this.contentHash() };
    await this.backup(entry, server, opts);
    await api.update(entry.id, clean);
    const after = await api.get(entry.id);
    if (after?.memory !== clean)
      throw new AgentKeepError(
        'Conflict',
        `mem0 at ${api.baseUrl} did not store the text as given (it has "${String(after?.memory ?? '(nothing)').slice(0, 80)}"): an older mem0 server passes the whole PUT body to Memory.update.`,
        `Update mem0's server (server/main.py with MemoryUpdate {text}), or edit the memory with mem0 itself. The previous text is "${entry.text.slice(0, 200)}".`,
      );
    const local = await this.reread(entry.id);
    if (local.entry?.text !== clean) throw this.notReflected('edit');
    return { entry: local.entry, previous: entry, contentHash: local.hash };
  }

  /**
   * Delete a memory through `DELETE /memories/{id}` (Memory.delete: a DELETE row in history.db), with
   * the same checks as edit. `file` of the result: its owner (`user_id=…`), for add (the undo).
   * @throws as edit
   */
  async remove(
    entryId: string,
    expectedHash?: string,
    opts?: WriteOptions,
  ): Promise<{ removed: MemoryEntry; contentHash: string; file?: string }> {
    const api = this.client();
    const { entry } = await this.resolve(entryId);
    await this.checkHash(expectedHash, entry.file);
    const server = await this.serverCopy(api, entry);
    await this.backup(entry, server, opts);
    await api.delete(entry.id);
    if (await api.get(entry.id)) throw this.notReflected('delete');
    const local = await this.reread(entry.id);
    if (local.entry) throw this.notReflected('delete');
    const owner = scopeOf({ ...entry, meta: { ...(entry.meta ?? {}), ...ownerOf(server) } });
    return { removed: entry, contentHash: local.hash, ...(owner ? { file: owner } : {}) };
  }

  /**
   * Add a memory through `POST /memories` with `infer: false` (stored as given, not re-extracted by
   * mem0's LLM), e.g. the undo of remove.
   * @param file whom it belongs to: `user_id=NAME` (or agent_id / run_id, joined with &); default the
   *   store options user_id / agent_id / run_id
   * @throws InvalidParams (no owner, empty text), Conflict (hash changed; mem0 queued or rewrote the
   *   text), as edit otherwise
   */
  async add(
    text: string,
    file?: string,
    expectedHash?: string,
    opts?: WriteOptions,
  ): Promise<{ entry: MemoryEntry; contentHash: string; alreadyPresent?: boolean }> {
    void opts; // nothing is replaced: no backup
    const api = this.client();
    const clean = text.trim();
    if (!clean) throw new AgentKeepError('InvalidParams', 'The text is empty.', 'Give the text of the memory.');
    const scope = parseMem0Scope(file) ?? this.opts.scope;
    if (!scope || !Object.keys(scope).length)
      throw new AgentKeepError(
        'InvalidParams',
        'mem0 needs to know whom the memory belongs to (user_id, agent_id or run_id).',
        `Give --file user_id=NAME, or add &user_id=NAME to the store (e.g. ${this.spec.split('?')[0]}?api=${this.apiUrl}&user_id=NAME).`,
      );
    await this.checkHash(expectedHash);
    const results = await api.add(clean, scope);
    const added = results.find((r) => (r.event ?? 'ADD') === 'ADD' && r.memory === clean);
    if (!added)
      throw new AgentKeepError(
        'Conflict',
        `mem0 at ${api.baseUrl} did not store the text as given: ${
          results.length
            ? results.map((r) => `${r.event ?? '?'} ${r.id} "${(r.memory ?? '').slice(0, 60)}"`).join(', ')
            : 'it reported no change'
        } (an older server ignores infer: false and lets its LLM rewrite the text).`,
        results.length
          ? `Check those memories (memory show --entry ID) and remove the ones you do not want.`
          : 'mem0 may already hold the same text: list the store again.',
      );
    const local = await this.reread(added.id);
    if (!local.entry) throw this.notReflected('add');
    return { entry: local.entry, contentHash: local.hash };
  }
}

/** The owner fields of a memory as mem0's server returns it. */
function ownerOf(m: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of SCOPE_KEYS) if (typeof m[k] === 'string' && m[k]) out[k] = m[k];
  return out;
}
