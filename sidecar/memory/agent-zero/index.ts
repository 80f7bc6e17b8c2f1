/**
 * Agent Zero memory store (`agent-zero:/abs/root[?url=http://host:port]`).
 *
 * The root is the Agent Zero install (Docker: `/a0`, or the host directory mounted there). Memory
 * lives in one FAISS database per memory subdir, in `<root>/usr/memory/<subdir>/` (current) or
 * `<root>/memory/<subdir>/` (older frdel/agent-zero); both are listed. Each holds `index.pkl`
 * (the LangChain docstore: ids, texts, metadata; read here), `index.faiss` (the vectors; read for memory lint),
 * `embedding.json` (`{model_provider, model_name}` the index was built with) and
 * `knowledge_import.json` (per knowledge file: checksum and ids).
 *
 * Reading is always possible. Changes go ONLY through Agent Zero's own memory dashboard API (see
 * ./api.ts), never by writing index.pkl; they need the URL of the running web UI: the store option
 * `?url=` or env AGENTKEEP_A0_URL, plus AGENTKEEP_A0_USER / AGENTKEEP_A0_PASSWORD when Agent Zero has
 * its login enabled. Without a URL the store is read-only and says why.
 * Sources: shared/reference/memory-stores.md §2 (agent0ai/agent-zero @ 2d95cd9f).
 */
import { createHash, randomInt } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { MemoryEntry, MemoryFile, Provenance, StoreProblem } from '../../protocol';
import { memoryListAction } from '../../core/actions';
import { AgentKeepError } from '../../core/errors';
import { brokenError, problemOf } from '../broken';
import { captureLocalFiles, changedLocalFiles, checkLocalRestore, restoreLocalFiles } from '../files';
import { joinOn, localTransport, type DirEntry, type FileTransport } from '../transport';
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
import { AgentZeroApi, type A0Credentials } from './api';
import { parseDocstore, type A0Document } from './docstore';

/**
 * Files of one memory subdir that are agent state. `index.faiss.sha256` (newer Agent Zero, written
 * after each save) belongs with index.faiss: restoring index.faiss without it makes Agent Zero see a
 * hash mismatch and replace the memory with an empty one (see faissProblem).
 */
export const A0_STATE_FILES = [
  'index.pkl',
  'index.faiss',
  'index.faiss.sha256',
  'embedding.json',
  'knowledge_import.json',
];
/** Areas in Agent Zero's order (`instruments` only in older versions). */
export const A0_AREAS = ['main', 'fragments', 'solutions', 'instruments'];
/** Agent Zero's default embedding model (plugins/_model_config/default_config.yaml). */
export const A0_DEFAULT_EMBEDDING = { provider: 'huggingface', name: 'sentence-transformers/all-MiniLM-L6-v2' };
/** The two layouts: current `usr/memory`, older `memory` (project memory is found under usr/projects). */
const LAYOUTS = ['usr/memory', 'memory'];
/** Where project memory lives: `usr/projects/<name>/.a0proj/memory` = subdir `projects/<name>` (helpers/projects.py). */
const PROJECTS = 'usr/projects';
/** Directories under a memory dir that are not memory subdirs (older embeddings cache). */
const NOT_SUBDIRS = new Set(['embeddings']);

/** Options of an Agent Zero store. */
export interface AgentZeroOptions {
  /** Base URL of the running Agent Zero web UI (enables edits). Default: env AGENTKEEP_A0_URL. */
  url?: string;
  /** Login, when Agent Zero has AUTH_LOGIN set. Default: env AGENTKEEP_A0_USER / AGENTKEEP_A0_PASSWORD. */
  credentials?: A0Credentials;
}

/** One memory subdir found under the root. */
export interface A0MemoryDir {
  /** Subdir name as Agent Zero calls it (`memory_subdir`, e.g. "default"). */
  subdir: string;
  /** Root-relative POSIX path of the directory, e.g. usr/memory/default. */
  rel: string;
  /** current (usr/memory) or legacy (memory). */
  layout: 'current' | 'legacy' | 'project';
}

/**
 * The memory dir a root-relative POSIX directory path denotes: `usr/memory/<s>`, `memory/<s>`, or
 * `usr/projects/<p>/.a0proj/memory` (subdir `projects/<p>`, as Agent Zero's abs_db_dir maps it).
 */
export function memoryDirOf(relDir: string): A0MemoryDir | undefined {
  let m = /^usr\/memory\/([^/]+)$/.exec(relDir);
  if (m && m[1] !== '..' && !NOT_SUBDIRS.has(m[1])) return { subdir: m[1], rel: relDir, layout: 'current' };
  m = /^memory\/([^/]+)$/.exec(relDir);
  if (m && m[1] !== '..' && !NOT_SUBDIRS.has(m[1])) return { subdir: m[1], rel: relDir, layout: 'legacy' };
  m = /^usr\/projects\/([^/]+)\/\.a0proj\/memory$/.exec(relDir);
  if (m && m[1] !== '..') return { subdir: `projects/${m[1]}`, rel: relDir, layout: 'project' };
  return undefined;
}

/** A parsed entry with the subdir it lives in. */
interface Located {
  entry: MemoryEntry;
  dir: A0MemoryDir;
  doc: A0Document;
}

/** Code-unit order (ISO times and ids; localeCompare is needlessly slow for 20,000 entries). */
function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

async function isDir(p: string, io: FileTransport = localTransport): Promise<boolean> {
  try {
    return (await io.stat(p)).isDirectory();
  } catch (e) {
    if (e instanceof AgentKeepError) throw e; // the other machine cannot be reached: not "no directory"
    return false;
  }
}

async function readJson(
  p: string,
  io: FileTransport = localTransport,
): Promise<{ value?: unknown; error?: string; missing?: boolean }> {
  let raw: string;
  try {
    raw = (await io.readFile(p)).toString('utf8');
  } catch (e) {
    if (e instanceof AgentKeepError) throw e;
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? { missing: true } : { error: (e as Error).message };
  }
  try {
    return { value: JSON.parse(raw) };
  } catch (e) {
    return { error: `not JSON (${(e as Error).message})` };
  }
}

/**
 * Agent Zero's timestamp ("%Y-%m-%d %H:%M:%S", the container's local time, no zone) as ISO 8601.
 * Read as UTC (Agent Zero's Docker image runs in UTC); the raw value stays in meta.timestamp.
 */
export function a0TimeToIso(ts: unknown): string | undefined {
  if (typeof ts !== 'string') return undefined;
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})/.exec(ts);
  if (!m) return undefined;
  const d = new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]));
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

const NOT_EMBEDDING = 'not {"model_provider", "model_name"}';

/** Whether embedding.json holds what Agent Zero reads from it (`model_provider`, `model_name` strings). */
function isEmbeddingConfig(v: unknown): boolean {
  const o = v as { model_provider?: unknown; model_name?: unknown } | undefined;
  return !!o && typeof o === 'object' && typeof o.model_provider === 'string' && typeof o.model_name === 'string';
}

/** Now in Agent Zero's timestamp format (UTC, see a0TimeToIso). */
function a0Now(): string {
  return new Date().toISOString().slice(0, 19).replace('T', ' ');
}

/** A new id as Agent Zero makes them (`guids.generate_id(10)`: 10 alphanumerics). */
function newA0Id(): string {
  const abc = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let s = '';
  for (let i = 0; i < 10; i++) s += abc[randomInt(abc.length)];
  return s;
}

/** The embedding model Agent Zero is configured to use, and where that was read. */
export async function configuredEmbedding(
  root: string,
  io: FileTransport = localTransport,
): Promise<{ provider: string; name: string; from: string }> {
  // current: plugin config saved by the settings UI (helpers/plugins.py determine_plugin_asset_path)
  const plug = joinOn(io, root, 'usr/plugins/_model_config/config.json');
  const p = await readJson(plug, io);
  const em = (p.value as { embedding_model?: { provider?: unknown; name?: unknown } } | undefined)?.embedding_model;
  if (em && typeof em.provider === 'string' && typeof em.name === 'string')
    return { provider: em.provider, name: em.name, from: io.display(plug) };
  // older: settings.json keys embed_model_provider / embed_model_name
  for (const rel of ['usr/settings.json', 'tmp/settings.json']) {
    const f = joinOn(io, root, rel);
    const s = (await readJson(f, io)).value as
      { embed_model_provider?: unknown; embed_model_name?: unknown } | undefined;
    if (s && typeof s.embed_model_provider === 'string' && typeof s.embed_model_name === 'string') {
      return { provider: s.embed_model_provider, name: s.embed_model_name, from: io.display(f) };
    }
  }
  return {
    ...A0_DEFAULT_EMBEDDING,
    from: "Agent Zero's default (no usr/plugins/_model_config/config.json or settings.json with a model)",
  };
}

/** Flat FAISS indexes (IndexFlatIP, which Agent Zero creates, and the L2 / other-metric variants). */
const FLAT_FOURCC = ['IxFI', 'IxF2', 'IxFl'];

/**
 * Whether the bytes of an `index.faiss` are a FAISS index faiss.read_index can load: the fourcc
 * (every FAISS index type starts with "I"), and for the flat indexes Agent Zero writes the whole
 * layout of faiss/impl/index_write.cpp: fourcc, `d` int32, `ntotal` int64, two int64 dummies,
 * `is_trained` u8, `metric_type` int32 (+ float metric_arg when > 1), then the vectors as a uint64
 * count of floats and the float32 data (ntotal * d floats). Returns the reason it is damaged, or
 * undefined; `ntotal` is returned for a flat index that checks out.
 * @param buf the file, or only its first FAISS_HEAD_BYTES (then `size` is the file's size in bytes)
 * @param size the file's size in bytes (default buf.length): the layout is checked against it
 */
export function faissProblem(buf: Buffer, size = buf.length): { problem?: string; ntotal?: number; d?: number } {
  if (size < 4) return { problem: `it is ${size} bytes long, too short for a FAISS index` };
  const fourcc = buf.toString('latin1', 0, 4);
  if (fourcc[0] !== 'I') {
    return { problem: `it does not start with a FAISS index type (first bytes ${buf.subarray(0, 4).toString('hex')})` };
  }
  if (!FLAT_FOURCC.includes(fourcc)) return {}; // another index type: not checked further
  if (size < 37 || buf.length < 37) return { problem: `the ${fourcc} header is cut off (${size} bytes)` };
  const d = buf.readInt32LE(4);
  const ntotal = buf.readBigInt64LE(8);
  const metric = buf.readInt32LE(33);
  const head = 37 + (metric > 1 ? 4 : 0);
  if (d <= 0 || ntotal < 0n || size < head + 8 || buf.length < head + 8) {
    return { problem: `the ${fourcc} header is damaged (d ${d}, ntotal ${ntotal}, ${size} bytes)` };
  }
  const floats = buf.readBigUInt64LE(head);
  const want = BigInt(head + 8) + ntotal * BigInt(d) * 4n; // BigInt: a damaged header can say anything
  if (floats !== ntotal * BigInt(d) || BigInt(size) !== want) {
    return {
      problem:
        `its header says ${ntotal} vectors of dimension ${d} (${want} bytes), ` +
        `but the file has ${size} bytes (truncated, or written over)`,
    };
  }
  return { ntotal: Number(ntotal), d };
}

/** Bytes of an index.faiss that faissProblem needs (the flat header with its metric_arg and float count). */
export const FAISS_HEAD_BYTES = 64;

/**
 * How the rows of a flat index.faiss (`ntotal`) and the documents of its index.pkl disagree
 * (LangChain FAISS keeps row i ↔ `index_to_docstore_id[i]` ↔ a docstore document): `unmapped` rows
 * 0..ntotal-1 with no entry in the map (a search that finds one raises KeyError), `unindexed`
 * documents no row below ntotal maps to (never found by a search). Undefined: they match.
 */
export function rowMismatch(
  ntotal: number,
  indexToId: Map<number, string>,
  docs: A0Document[],
): { unmapped: number; unindexed: number; summary: string } | undefined {
  let mapped = 0;
  const found = new Set<string>();
  for (const [row, key] of indexToId)
    if (row < ntotal) {
      mapped++;
      found.add(key);
    }
  const unmapped = ntotal - mapped;
  const unindexed = docs.filter((d) => !found.has(d.key)).length;
  if (!unmapped && !unindexed) return undefined;
  return {
    unmapped,
    unindexed,
    summary:
      `index.faiss holds ${ntotal} vector(s), index.pkl ${docs.length} document(s) ` +
      `(${unmapped} row(s) without a document, ${unindexed} document(s) without a row)`,
  };
}

/** What a file that is not a regular file is, for messages (FileStat of a followed symlink). */
function specialKind(st: { isDirectory(): boolean; isFIFO(): boolean; isSocket(): boolean }): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isSocket()) return 'a socket';
  return 'a device or other special file';
}

/**
 * The first `bytes` of regular file `abs` on `io`'s machine, without reading the rest: locally with
 * one read(2), elsewhere with `head -c` (whole-file read only for a file of at most
 * A0_MAX_FAISS_BYTES when head is not there). The caller has checked that it is a regular file.
 * @throws as FileTransport.readFile
 */
async function readHead(io: FileTransport, abs: string, bytes: number, size: number): Promise<Buffer> {
  if (!io.remote) {
    const h = await fs.open(abs, 'r');
    try {
      const buf = Buffer.alloc(Math.min(bytes, size));
      const { bytesRead } = await h.read(buf, 0, buf.length, 0);
      return buf.subarray(0, bytesRead);
    } finally {
      await h.close();
    }
  }
  const r = await io.exec(['head', '-c', String(bytes), '--', abs]).catch((e: unknown) => {
    if (e instanceof AgentKeepError) throw e;
    return undefined;
  });
  if (r?.code === 0) return r.stdout.subarray(0, bytes);
  if (size > A0_MAX_FAISS_BYTES) throw new Error(`head -c ${bytes} failed on ${io.where}`);
  return (await io.readFile(abs)).subarray(0, bytes);
}

/** Bigger index.faiss files are not read for their vectors (about 170,000 MiniLM vectors of 384 floats). */
export const A0_MAX_FAISS_BYTES = 256 * 1024 * 1024;

/**
 * The vectors of a flat `index.faiss` (IndexFlatIP, IndexFlatL2, other-metric IndexFlat) as
 * faiss/impl/index_write.cpp writes them (layout: see faissProblem): row i is `vectors[i]`, a
 * Float32Array of `d` floats (little-endian, as FAISS writes them on x86 and arm; views on one copy
 * of the data). `problem`: the file is damaged (faissProblem's reason: no vectors); `unsupported`:
 * another index type (IVF, HNSW, PQ ...), whose vectors are not stored as plain floats (no vectors).
 */
export function readFaissVectors(buf: Buffer): {
  vectors?: Float32Array[];
  d?: number;
  fourcc?: string;
  problem?: string;
  unsupported?: string;
} {
  const f = faissProblem(buf);
  if (f.problem) return { problem: f.problem };
  const fourcc = buf.toString('latin1', 0, 4);
  if (f.ntotal === undefined || f.d === undefined) return { fourcc, unsupported: fourcc };
  const head = 37 + (buf.readInt32LE(33) > 1 ? 4 : 0) + 8;
  const data = new Float32Array(f.ntotal * f.d);
  new Uint8Array(data.buffer).set(buf.subarray(head, head + data.byteLength)); // aligned copy (head is odd)
  const vectors: Float32Array[] = [];
  for (let i = 0; i < f.ntotal; i++) vectors.push(data.subarray(i * f.d, (i + 1) * f.d));
  return { vectors, d: f.d, fourcc };
}

/**
 * The Agent Zero memory store adapter, for a root on this machine or on another one (its
 * FileTransport: node:fs here, SFTP and exec over SSH for `agent-zero:ssh://user@host/abs/root`).
 */
export class AgentZeroStore implements MemoryStoreAdapter {
  readonly kind = 'agent-zero';
  private readonly url?: string;
  private readonly credentials?: A0Credentials;

  /**
   * @param root absolute Agent Zero root (the directory holding usr/ or memory/)
   * @param spec the store name as given
   * @param opts API URL and login (default: env AGENTKEEP_A0_URL, AGENTKEEP_A0_USER, AGENTKEEP_A0_PASSWORD)
   * @param io the machine the root is on (default this one)
   */
  constructor(
    readonly root: string,
    readonly spec: string = `agent-zero:${root}`,
    opts: AgentZeroOptions = {},
    readonly io: FileTransport = localTransport,
  ) {
    this.lintProfile = { ...(io.remote ? { machine: io } : {}), embeddings: (l) => this.embeddings(l) };
    this.url = opts.url ?? (process.env.AGENTKEEP_A0_URL || undefined);
    const user = process.env.AGENTKEEP_A0_USER;
    this.credentials =
      opts.credentials ?? (user ? { user, password: process.env.AGENTKEEP_A0_PASSWORD ?? '' } : undefined);
  }

  /**
   * For memory lint: the vectors of index.faiss (embeddings), and, for a root reached over SSH, its
   * machine, where stale claims are checked (StoreLintProfile.machine).
   */
  readonly lintProfile: StoreLintProfile;

  /** See MemoryStoreAdapter.location: the Agent Zero root (ssh://user@host:port/abs/root on another machine). */
  get location(): string {
    return this.io.display(this.root);
  }
  /** See MemoryStoreAdapter.localRoot: the Agent Zero root; none on another machine. */
  get localRoot(): string | undefined {
    return this.io.remote ? undefined : this.root;
  }
  /** The absolute path of root-relative POSIX path(s) on the root's machine. */
  private abs(...rel: string[]): string {
    return joinOn(this.io, this.root, rel.join('/'));
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

  /** @throws StoreNotFound when root is not a directory or has neither usr/memory/ nor memory/. */
  async check(): Promise<void> {
    if (!(await isDir(this.root, this.io))) {
      throw new AgentKeepError(
        'StoreNotFound',
        `Agent Zero root ${this.location} does not exist or is not a directory.`,
        `Point --store at the Agent Zero directory (Docker: the host folder mounted at /a0, or at /a0/usr with its parent), e.g. agent-zero:${this.io.display('/srv/agent-zero')}.`,
      );
    }
    for (const l of LAYOUTS) if (await isDir(this.abs(l), this.io)) return;
    throw new AgentKeepError(
      'StoreNotFound',
      `Not an Agent Zero root: no usr/memory/ or memory/ in ${this.location}.`,
      'Point at the directory that holds usr/ (Docker: mounted at /a0). If Agent Zero never saved a memory yet, there is nothing to read.',
    );
  }

  /**
   * Memory subdirs that hold at least one memory file: current layout, project memory
   * (`usr/projects/<p>/.a0proj/memory`), then the older layout; each by name.
   */
  async memoryDirs(): Promise<A0MemoryDir[]> {
    const candidates: string[] = [];
    const sub = async (d: string): Promise<string[]> =>
      (await this.io.readdir(this.abs(d)).catch(() => [] as DirEntry[]))
        .filter((n) => n.isDirectory())
        .map((n) => n.name)
        .sort(cmp);
    for (const n of await sub(LAYOUTS[0])) candidates.push(`${LAYOUTS[0]}/${n}`);
    for (const n of await sub(PROJECTS)) candidates.push(`${PROJECTS}/${n}/.a0proj/memory`);
    for (const n of await sub(LAYOUTS[1])) candidates.push(`${LAYOUTS[1]}/${n}`);
    const out: A0MemoryDir[] = [];
    for (const rel of candidates) {
      const dir = memoryDirOf(rel);
      if (!dir) continue;
      const files = await this.io.readdir(this.abs(rel)).catch(() => [] as DirEntry[]);
      if (files.some((f) => A0_STATE_FILES.includes(f.name))) out.push(dir);
    }
    return out;
  }

  /** Why edits are not possible (no URL configured), or undefined when an API URL is set. */
  async readOnlyReason(): Promise<string | undefined> {
    if (this.url) return undefined;
    return "Agent Zero keeps memory in a FAISS index; AgentKeep edits it only through Agent Zero's own API: set AGENTKEEP_A0_URL (or add ?url=http://host:port to the store) to the running Agent Zero web UI.";
  }

  private toEntry(doc: A0Document, dir: A0MemoryDir, file: string): MemoryEntry {
    const md = doc.metadata;
    const id = typeof md.id === 'string' && md.id ? md.id : doc.key;
    const area = typeof md.area === 'string' && md.area ? md.area : 'main';
    const rest: Record<string, unknown> = { subdir: dir.subdir };
    for (const [k, v] of Object.entries(md)) if (k !== 'id' && k !== 'area') rest[k] = v;
    if (id !== doc.key) rest.docstoreKey = doc.key;
    const knowledge = md.knowledge_source === true;
    const src = knowledge ? `knowledge:${String(md.source_path ?? md.source_file ?? 'unknown file')}` : 'conversation';
    const createdAt = a0TimeToIso(md.timestamp);
    return {
      id,
      text: doc.text,
      store: this.spec,
      file,
      area,
      ...(createdAt ? { createdAt } : {}),
      source: src,
      meta: rest,
    };
  }

  /** Warnings about one memory dir that do not depend on the docstore (embedding model, layout). */
  private async dirWarnings(dir: A0MemoryDir, all: A0MemoryDir[], ids: Set<string>): Promise<string[]> {
    const w: string[] = [];
    const emb = await readJson(this.abs(dir.rel, 'embedding.json'), this.io);
    const conf = await configuredEmbedding(this.root, this.io);
    if (emb.missing) {
      w.push(
        `${dir.rel}/embedding.json is missing: Agent Zero will re-embed every memory of "${dir.subdir}" on its next load (memory.py initialize).`,
      );
    } else if (emb.error || !isEmbeddingConfig(emb.value)) {
      /* broken: reported by dirProblems */
    } else {
      const e = emb.value as { model_provider?: unknown; model_name?: unknown };
      if (e.model_provider !== conf.provider || e.model_name !== conf.name) {
        w.push(
          `Embedding model mismatch in ${dir.rel}: the index was built with ${String(e.model_provider)}/${String(e.model_name)} but Agent Zero is configured for ${conf.provider}/${conf.name} (${conf.from}); it will re-embed every memory on its next load, and searches until then compare vectors of different models.`,
        );
      }
    }
    if (dir.layout === 'legacy' && all.some((d) => d.layout === 'current' && d.subdir === dir.subdir)) {
      w.push(
        `Both usr/memory/${dir.subdir} and the older memory/${dir.subdir} exist: current Agent Zero reads only usr/memory/${dir.subdir}; the older one is a leftover of an earlier version.`,
      );
    }
    const ki = await readJson(this.abs(dir.rel, 'knowledge_import.json'), this.io);
    if (ki.value && typeof ki.value === 'object') {
      const missing: string[] = [];
      for (const rec of Object.values(ki.value as Record<string, { ids?: unknown }>)) {
        if (Array.isArray(rec?.ids))
          for (const id of rec.ids) if (typeof id === 'string' && !ids.has(id)) missing.push(id);
      }
      if (missing.length)
        w.push(
          `${dir.rel}/knowledge_import.json lists ${missing.length} id(s) that are not in index.pkl (e.g. ${missing[0]}): Agent Zero will re-import those knowledge files.`,
        );
    }
    return w;
  }

  /**
   * What is broken in one memory subdir, worst first (empty: nothing). Each is a FileError naming
   * the file, what Agent Zero does with it (agent0ai/agent-zero @ 0b89c417
   * plugins/_memory/helpers/memory.py `Memory.initialize`, the same in frdel/agent-zero @ 00ba24c0
   * python/helpers/memory.py but without the hash check: it loads the subdir only when index.faiss
   * exists, with FAISS.load_local, which needs index.pkl too; it checks index.faiss against
   * index.faiss.sha256 when that exists; it reads embedding.json with json.loads), and the fix:
   *   - index.pkl missing while index.faiss exists: Agent Zero fails to load the subdir;
   *   - index.faiss missing while index.pkl exists: Agent Zero starts an EMPTY index and saves it over
   *     index.pkl on its next load (the memories are lost then);
   *   - index.faiss not a regular file (a FIFO, a device such as a symlink to /dev/zero): refused,
   *     never read; otherwise only its header is read (readHead) and checked against its size;
   *   - index.faiss not a FAISS index, or a flat index truncated (faissProblem): load fails;
   *   - its rows do not match the documents of index.pkl (`store`, rowMismatch): a search that finds a
   *     row without a document fails (KeyError), a document without a row is never recalled;
   *   - index.faiss.sha256 does not match index.faiss: Agent Zero discards the index and saves an
   *     empty one over it (memories lost on the next load);
   *   - embedding.json not JSON or without model_provider/model_name (with index.faiss present):
   *     Agent Zero's load fails.
   * (index.pkl that does not unpickle is found by readAll, from parseDocstore.)
   */
  private async dirProblems(
    dir: A0MemoryDir,
    hasPkl: boolean,
    store?: { docs: A0Document[]; indexToId: Map<number, string> },
  ): Promise<AgentKeepError[]> {
    const abs = this.abs(dir.rel); // for commands on that machine (cp -a …)
    const shown = this.io.display(abs);
    const out: AgentKeepError[] = [];
    const restore =
      'restore the memory subdir from a restore point (scope agent restores index.pkl, index.faiss and their ' +
      'hash together)';
    const fileError = (message: string, hint: string): AgentKeepError => new AgentKeepError('FileError', message, hint);
    const perms = 'Check the permissions of the Agent Zero directory (Docker volumes are often owned by root).';
    const faissAbs = this.abs(dir.rel, 'index.faiss');
    let faiss: { head: Buffer; size: number } | undefined;
    try {
      const st = await this.io.stat(faissAbs); // follows a symlink: only to a regular file is it read
      if (!st.isFile()) {
        const what = specialKind(st);
        out.push(
          fileError(
            `${dir.rel}/index.faiss is ${what}, not a regular file: Agent Zero cannot load memory subdir ` +
              `"${dir.subdir}" from it, and AgentKeep does not read it (reading ${what} may never end).`,
            `Put the real index.faiss back (a symlink must point to a regular file): ${restore}.`,
          ),
        );
      } else {
        faiss = { head: await readHead(this.io, faissAbs, FAISS_HEAD_BYTES, st.size), size: st.size };
      }
    } catch (e) {
      if (e instanceof AgentKeepError) throw e;
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
        out.push(fileError(`Cannot read ${shown}/index.faiss: ${(e as Error).message}.`, perms));
      }
    }
    const faissMissing = !faiss && !out.length;
    if (!hasPkl && faiss) {
      out.push(
        fileError(
          `${dir.rel}/index.pkl is missing but ${dir.rel}/index.faiss exists: Agent Zero cannot load memory subdir ` +
            `"${dir.subdir}" (FAISS.load_local needs both), and its documents (texts, ids) are not there to show.`,
          `Put index.pkl back: ${restore}.`,
        ),
      );
    }
    if (hasPkl && faissMissing) {
      out.push(
        fileError(
          `${dir.rel}/index.faiss is missing but index.pkl holds the memories of "${dir.subdir}": on its next load ` +
            'Agent Zero starts an empty index and saves it over index.pkl, and these memories are lost.',
          `Before Agent Zero starts again, keep a copy (cp -a ${abs} ${abs}.bak), then ${restore}.`,
        ),
      );
    }
    if (faiss) {
      const f = faissProblem(faiss.head, faiss.size);
      if (f.problem) {
        out.push(
          fileError(
            `${dir.rel}/index.faiss is damaged: ${f.problem}. Agent Zero cannot load memory subdir "${dir.subdir}".`,
            `Keep a copy of ${shown}, then ${restore}. The texts are in index.pkl, which AgentKeep still shows.`,
          ),
        );
      }
      const rows = f.ntotal !== undefined && store ? rowMismatch(f.ntotal, store.indexToId, store.docs) : undefined;
      if (rows) {
        out.push(
          fileError(
            `${dir.rel}/index.faiss does not match ${dir.rel}/index.pkl: ${rows.summary}. ` +
              (rows.unmapped
                ? `An Agent Zero memory search that finds one of the ${rows.unmapped} row(s) without a document fails ` +
                  '(LangChain looks the row up in index_to_docstore_id: KeyError)'
                : `Agent Zero never recalls the ${rows.unindexed} document(s) without a row (a search finds only rows)`) +
              (rows.unmapped && rows.unindexed
                ? `, and it never recalls the ${rows.unindexed} document(s) without a row`
                : '') +
              '.',
            `Keep a copy (cp -a ${abs} ${abs}.bak), then ${restore}. The texts are in index.pkl, which AgentKeep still shows.`,
          ),
        );
      }
      const stored = await this.io.readFile(this.abs(dir.rel, 'index.faiss.sha256')).then(
        (b) => b.toString('utf8'),
        () => undefined,
      );
      const hashOk = async (want: string): Promise<boolean> =>
        (await this.io.hashFile(faissAbs).catch((e: unknown) => {
          if (e instanceof AgentKeepError) throw e;
          return want; // unreadable now: not a mismatch we can show
        })) === want;
      if (stored !== undefined && !(await hashOk(stored.trim()))) {
        out.push(
          fileError(
            `${dir.rel}/index.faiss does not match ${dir.rel}/index.faiss.sha256: on its next load Agent Zero ` +
              'discards this index and saves an empty one in its place ("FAISS index hash mismatch … index will be ' +
              `rebuilt"), and the memories of "${dir.subdir}" are lost.`,
            `Before Agent Zero starts again, keep a copy (cp -a ${abs} ${abs}.bak). If index.faiss is intact (it ` +
              `loads, and its vector count matches index.pkl), delete the stale index.faiss.sha256; else ${restore}.`,
          ),
        );
      }
      const emb = await readJson(this.abs(dir.rel, 'embedding.json'), this.io);
      if (!emb.missing && (emb.error || !isEmbeddingConfig(emb.value))) {
        out.push(
          fileError(
            `${dir.rel}/embedding.json is ${emb.error ? `unreadable (${emb.error})` : NOT_EMBEDDING}: ` +
              `Agent Zero fails to load memory subdir "${dir.subdir}" (it reads the embedding model from it).`,
            `Delete ${shown}/embedding.json (Agent Zero then re-embeds every memory of the subdir on its next load and ` +
              'keeps them), or restore it from a restore point.',
          ),
        );
      }
    }
    return out;
  }

  /**
   * MemoryFiles of one subdir from its parsed docstore: one per area (canonical order), entries
   * oldest first; `warnings` go on the first file only, so they are not repeated; `broken` (what is
   * damaged in the subdir) goes on each, as each is refused for writes.
   */
  private filesOf(
    dir: A0MemoryDir,
    docs: A0Document[],
    file: string,
    warnings: string[],
    readOnly: string | undefined,
    located: Located[],
    broken?: StoreProblem,
  ): MemoryFile[] {
    const byArea = new Map<string, MemoryEntry[]>();
    for (const doc of docs) {
      const entry = this.toEntry(doc, dir, file);
      located.push({ entry, dir, doc });
      const a = entry.area ?? 'main';
      if (!byArea.has(a)) byArea.set(a, []);
      byArea.get(a)!.push(entry);
    }
    const rank = (a: string): number => (A0_AREAS.indexOf(a) < 0 ? 99 : A0_AREAS.indexOf(a));
    const areas = [...byArea.keys()].sort((a, b) => rank(a) - rank(b) || cmp(a, b));
    if (areas.length === 0) areas.push('main');
    return areas.map((a, i) => ({
      kind: `agent-zero-${a}`,
      file,
      store: this.spec,
      entries: (byArea.get(a) ?? []).sort((x, y) => cmp(x.createdAt ?? '', y.createdAt ?? '') || cmp(x.id, y.id)),
      ...(readOnly ? { readOnly } : {}),
      ...(i === 0 && warnings.length ? { warnings } : {}),
      ...(broken ? { broken } : {}),
    }));
  }

  /**
   * Every subdir's files and entries. A subdir with a problem (dirProblems, or an index.pkl that
   * cannot be read or unpickled) is listed with `broken` (and what could still be read); only when
   * no subdir's index.pkl could be read at all is the first problem thrown.
   */
  private async readAll(): Promise<{ files: MemoryFile[]; located: Located[]; broken: Map<string, StoreProblem> }> {
    await this.check();
    const readOnly = await this.readOnlyReason();
    const dirs = await this.memoryDirs();
    const files: MemoryFile[] = [];
    const located: Located[] = [];
    const brokenDirs = new Map<string, StoreProblem>();
    const unread: AgentKeepError[] = [];
    for (const dir of dirs) {
      const pklAbs = this.abs(dir.rel, 'index.pkl');
      const pkl = this.io.display(pklAbs);
      let buf: Buffer | undefined;
      const warnings: string[] = [];
      const problems: AgentKeepError[] = [];
      try {
        buf = await this.io.readFile(pklAbs);
      } catch (e) {
        if (e instanceof AgentKeepError) throw e;
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
          const fix =
            (e as NodeJS.ErrnoException).code === 'EINVAL' // a FIFO, socket or device (readLocalFile)
              ? 'Put the docstore Agent Zero saved back in its place (restore it from a restore point).'
              : 'Check the permissions of the Agent Zero directory (Docker volumes are often owned by root).';
          problems.push(new AgentKeepError('FileError', `Cannot read ${pkl}: ${(e as Error).message}.`, fix));
        } else if (!(await this.io.stat(this.abs(dir.rel, 'index.faiss')).catch(() => undefined))) {
          const first = '(Agent Zero creates it on the first save)';
          warnings.push(`${dir.rel}/index.pkl is missing: no memories in "${dir.subdir}" ${first}.`);
        } // with index.faiss present a missing index.pkl is broken (dirProblems)
      }
      let docs: { docs: A0Document[]; indexToId: Map<number, string>; warnings: string[] } = {
        docs: [],
        indexToId: new Map(),
        warnings: [],
      };
      if (buf) {
        try {
          docs = parseDocstore(buf, pkl);
        } catch (e) {
          if (!(e instanceof AgentKeepError)) throw e;
          problems.push(e);
        }
      }
      if (problems.length) unread.push(problems[0]);
      problems.push(...(await this.dirProblems(dir, buf !== undefined, buf && !problems.length ? docs : undefined)));
      for (const p of problems.slice(1)) warnings.push(`Also broken: ${p.message} ${p.hint ?? ''}`.trim());
      warnings.push(...docs.warnings);
      warnings.push(
        ...(await this.dirWarnings(
          dir,
          dirs,
          new Set(docs.docs.map((d) => (typeof d.metadata.id === 'string' && d.metadata.id ? d.metadata.id : d.key))),
        )),
      );
      const broken = problems.length ? problemOf(problems[0]) : undefined;
      if (broken) brokenDirs.set(dir.rel, broken);
      files.push(...this.filesOf(dir, docs.docs, pkl, warnings, readOnly, located, broken));
    }
    if (dirs.length && unread.length === dirs.length) throw unread[0]; // nothing at all could be read
    return { files, located, broken: brokenDirs };
  }

  /**
   * @throws FileError (what is broken, the fix) when memory subdir `rel` is broken: AgentKeep does not
   *   change a damaged store.
   */
  private refuseBroken(broken: Map<string, StoreProblem>, rel: string): void {
    const p = broken.get(rel);
    if (!p) return;
    const refused = 'AgentKeep does not change a damaged memory subdir; nothing was sent to Agent Zero.';
    throw brokenError({ ...p, message: `${p.message} ${refused}` });
  }

  /**
   * The memories as captured in a restore point (memory.diff): every captured
   * `[usr/]memory/<subdir>/index.pkl`, parsed like list() (file = the capture's display name;
   * pickle warnings only). @throws FileError for a captured file that is not a docstore pickle
   */
  async listCapture(src: CaptureSource): Promise<MemoryFile[]> {
    const readOnly = await this.readOnlyReason();
    const files: MemoryFile[] = [];
    const located: Located[] = [];
    const order = { current: 0, project: 1, legacy: 2 };
    const pkls = src.files
      .filter((f) => f.endsWith('/index.pkl'))
      .map((f) => ({ rel: f, dir: memoryDirOf(f.slice(0, -'/index.pkl'.length)) }))
      .filter((x): x is { rel: string; dir: A0MemoryDir } => !!x.dir)
      .sort((a, b) => order[a.dir.layout] - order[b.dir.layout] || cmp(a.rel, b.rel));
    for (const { rel, dir } of pkls) {
      const buf = await src.read(rel);
      if (!buf) continue;
      const docs = parseDocstore(buf, src.display(rel));
      files.push(...this.filesOf(dir, docs.docs, src.display(rel), docs.warnings, readOnly, located));
    }
    return files;
  }

  /**
   * The vectors Agent Zero keeps for its memories (StoreLintProfile.embeddings): for each memory
   * subdir, row i of its flat `index.faiss` (readFaissVectors) belongs to the document
   * `index_to_docstore_id[i]` of its `index.pkl` (LangChain FAISS.save_local), keyed like list()'s
   * entries (file = the subdir's index.pkl, id = metadata.id, else the docstore key). Model: the
   * subdir's embedding.json (`<model_provider>/<model_name>`, what the index was built with; the
   * configured model can differ until Agent Zero re-embeds: list() warns about that), else
   * `agent-zero:unknown-model`. A subdir whose index.faiss is over A0_MAX_FAISS_BYTES, or not a flat
   * index, is skipped with a note; one that is missing, damaged, or whose index.pkl does not unpickle
   * gives no vectors (list() reports it as broken). Rows without a document, and documents without a
   * row (rowMismatch: list() reports the subdir as broken), are left out with a note; so are vectors
   * with a NaN or Infinity component.
   * @throws what the transport throws when the machine cannot be reached (AgentKeepError)
   */
  async embeddings(limits: { maxBytes?: number } = {}): Promise<StoreEmbeddings> {
    const max = limits.maxBytes ?? A0_MAX_FAISS_BYTES;
    const vectors = new Map<string, StoreEmbedding>();
    const notes: string[] = [];
    for (const dir of await this.memoryDirs()) {
      const faissAbs = this.abs(dir.rel, 'index.faiss');
      const st = await this.io.stat(faissAbs).catch((e: unknown) => {
        if (e instanceof AgentKeepError) throw e;
        return undefined;
      });
      if (!st?.isFile()) continue; // missing: broken or empty (list() says which)
      if (st.size > max) {
        notes.push(
          `The vectors of ${this.io.display(faissAbs)} were not read: the file is ${formatBytes(st.size)}, over the ` +
            `${formatBytes(max)} the lint reads, so its entries are compared by their words only.`,
        );
        continue;
      }
      let faiss: Buffer;
      let pkl: Buffer;
      try {
        faiss = await this.io.readFile(faissAbs);
        pkl = await this.io.readFile(this.abs(dir.rel, 'index.pkl'));
      } catch (e) {
        if (e instanceof AgentKeepError) throw e;
        continue; // unreadable: reported by list() (dirProblems)
      }
      const rows = readFaissVectors(faiss);
      if (rows.unsupported) {
        notes.push(
          `The vectors of ${this.io.display(faissAbs)} were not read: it is a FAISS ${rows.unsupported} index, and ` +
            'the lint reads flat indexes only (IndexFlatIP, which Agent Zero writes, IndexFlatL2), so its entries are ' +
            'compared by their words only.',
        );
        continue;
      }
      if (!rows.vectors) continue; // damaged: reported by list() (dirProblems)
      let docs: A0Document[];
      let indexToId: Map<number, string>;
      try {
        ({ docs, indexToId } = parseDocstore(pkl, this.io.display(this.abs(dir.rel, 'index.pkl'))));
      } catch (e) {
        if (e instanceof AgentKeepError) continue; // does not unpickle: reported by list()
        throw e;
      }
      const emb = await readJson(this.abs(dir.rel, 'embedding.json'), this.io);
      const model = isEmbeddingConfig(emb.value)
        ? `${(emb.value as { model_provider: string }).model_provider}/${(emb.value as { model_name: string }).model_name}`
        : `agent-zero:unknown-model ${this.io.display(this.abs(dir.rel, ''))}`; // unknown: never compared across subdirs or stores
      const byKey = new Map(docs.map((d) => [d.key, d]));
      const file = this.io.display(this.abs(dir.rel, 'index.pkl'));
      const shownFaiss = this.io.display(faissAbs);
      const mismatch = rowMismatch(rows.vectors.length, indexToId, docs);
      if (mismatch)
        notes.push(
          `${shownFaiss} does not match its index.pkl (${mismatch.summary}): only the rows that belong to a ` +
            'document were read; the other entries are compared by their words only (the store is reported as broken).',
        );
      let nonFinite = 0;
      for (const [row, key] of indexToId) {
        const doc = byKey.get(key);
        const vector = rows.vectors[row];
        if (!doc || !vector) continue;
        if (!vector.every(Number.isFinite)) {
          nonFinite++;
          continue;
        }
        const id = typeof doc.metadata.id === 'string' && doc.metadata.id ? doc.metadata.id : doc.key;
        vectors.set(embeddingKey(file, id), { model, vector });
      }
      if (nonFinite)
        notes.push(
          `${nonFinite} vector(s) of ${shownFaiss} hold NaN or Infinity (not a model's output): those entries are ` +
            'compared by their words only.',
        );
    }
    return { vectors, notes };
  }

  /**
   * One MemoryFile per memory subdir and area (kind `agent-zero-<area>`, file = the subdir's
   * index.pkl), entries oldest first. Warnings (on the subdir's first file): embedding model
   * mismatch, missing embedding.json, unknown pickle shapes, stale knowledge_import.json, a leftover
   * older layout. A broken subdir (see dirProblems) is listed with `broken` on each of its files.
   * @throws StoreNotFound, FileError (no subdir's index.pkl could be read or unpickled)
   */
  async list(): Promise<MemoryFile[]> {
    return (await this.readAll()).files;
  }

  /** Existing agent-state files of every memory subdir (both layouts), root-relative POSIX, sorted. */
  async agentStateFiles(): Promise<string[]> {
    const out: string[] = [];
    for (const d of await this.memoryDirs()) {
      for (const f of A0_STATE_FILES) {
        try {
          if ((await this.io.lstat(this.abs(d.rel, f))).isFile()) out.push(`${d.rel}/${f}`);
        } catch (e) {
          if (e instanceof AgentKeepError) throw e; // the other machine cannot be reached: not "absent"
        }
      }
    }
    return out.sort();
  }

  /**
   * Whether `rel` is one of the memory files (index.pkl, index.faiss, embedding.json,
   * knowledge_import.json) in `usr/memory/<s>/`, `memory/<s>/` or `usr/projects/<p>/.a0proj/memory/`.
   */
  isAgentStatePath(rel: string): boolean {
    const p = path.posix.normalize(rel.replace(/\\/g, '/')).replace(/^\.\//, '');
    const i = p.lastIndexOf('/');
    return i > 0 && A0_STATE_FILES.includes(p.slice(i + 1)) && !!memoryDirOf(p.slice(0, i));
  }

  /**
   * Capture one agent-state file without tearing it: Agent Zero's save (FAISS.save_local) rewrites
   * index.faiss and index.pkl in place, so the copy is retried while size/mtime change across it
   * and, for index.pkl, while the copy does not unpickle (a write in progress). A pickle that stays
   * unreadable after the retries is captured as it is (the restore point keeps what is there).
   */
  async captureFile(rel: string, dest: string): Promise<boolean> {
    const src = this.abs(rel);
    const shown = this.io.display(src);
    const stamp = async (): Promise<string> => {
      const [st] = await this.io.stamps([src]);
      if (!st) throw Object.assign(new Error(`${shown} does not exist`), { code: 'ENOENT' }); // vanished: not captured
      return `${st.ino}:${st.size}:${st.mtime}`;
    };
    for (let attempt = 0; ; attempt++) {
      const before = await stamp();
      await this.io.download(src, dest);
      const stable = before === (await stamp());
      let ok = stable;
      if (stable && rel.endsWith('/index.pkl')) {
        try {
          parseDocstore(await fs.readFile(dest), shown);
        } catch {
          ok = false;
        }
      }
      if (ok || (stable && attempt >= 5)) return true;
      if (attempt >= 10)
        throw new AgentKeepError(
          'FileError',
          `${shown} kept changing while it was captured.`,
          'Agent Zero is saving memory right now; try again in a moment.',
        );
      await new Promise((r) => setTimeout(r, 25 * (attempt + 1)));
    }
  }

  /** sha256 (hex) over every subdir's index.pkl (path + content hash), as read now. */
  async contentHash(): Promise<string> {
    const h = createHash('sha256');
    for (const d of await this.memoryDirs()) {
      let buf: Buffer;
      try {
        buf = await this.io.readFile(this.abs(d.rel, 'index.pkl'));
      } catch (e) {
        if (e instanceof AgentKeepError) throw e;
        continue;
      }
      h.update(`${d.rel}/index.pkl\0${createHash('sha256').update(buf).digest('hex')}\n`);
    }
    return h.digest('hex');
  }

  /**
   * What the entry's own metadata says about its origin: Agent Zero keeps no change history, so
   * traces are the insert time, a knowledge import (source file) and a consolidation (merged ids).
   */
  async provenance(entry: MemoryEntry): Promise<Provenance> {
    const md = entry.meta ?? {};
    const traces: Provenance['traces'] = [];
    const knowledge = md.knowledge_source === true;
    traces.push({
      action: 'add',
      ...(entry.createdAt ? { time: entry.createdAt } : {}),
      source: knowledge ? 'knowledge' : 'agent',
      message: knowledge
        ? `Imported from knowledge file ${String(md.source_path ?? md.source_file ?? '?')}`
        : `Saved to area "${entry.area ?? 'main'}" of memory subdir "${String(md.subdir ?? 'default')}"`,
    });
    if (typeof md.consolidation_action === 'string' && md.consolidation_action) {
      const from = [md.consolidated_from, md.replaced_memories].flatMap((v) => (Array.isArray(v) ? v.map(String) : []));
      traces.push({
        action: 'consolidate',
        ...(entry.createdAt ? { time: entry.createdAt } : {}),
        source: 'agent',
        message: `Memory consolidation: ${md.consolidation_action}${from.length ? ` of ${from.join(', ')}` : ''}${md.safety_reason ? ` (${String(md.safety_reason)})` : ''}`,
      });
    }
    return {
      traces,
      note: knowledge
        ? 'Agent Zero keeps no history of memory changes; this entry came from a knowledge file.'
        : "Agent Zero keeps no history of memory changes or of the conversation that saved a memory; the traces are what the entry's own metadata says (time, area, consolidation).",
    };
  }

  private api(): AgentZeroApi {
    if (!this.url) {
      throw new AgentKeepError(
        'Unsupported',
        `Agent Zero store ${this.spec} is read-only.`,
        'Set AGENTKEEP_A0_URL (or add ?url=http://host:port to the store) to the running Agent Zero web UI; AgentKeep never rewrites index.pkl.',
      );
    }
    return new AgentZeroApi(this.url, this.credentials);
  }

  /** Hand the current index.pkl bytes to opts.beforeWrite (the core's backup) before an API change. */
  private async backup(rel: string, opts?: WriteOptions): Promise<void> {
    if (!opts?.beforeWrite) return;
    const file = this.abs(rel, 'index.pkl');
    const prev = await this.io.readFile(file).catch(() => undefined);
    if (prev) await opts.beforeWrite(this.io.display(file), prev);
  }

  /** Find an entry by id, or by a unique id prefix (>= 4 chars, any case), after the CAS check. */
  private async locate(entryId: string, expectedHash?: string): Promise<{ target: Located; hash: string }> {
    const hash = await this.contentHash();
    if (expectedHash !== undefined && expectedHash !== hash) {
      throw new AgentKeepError(
        'Conflict',
        `Agent Zero memory in ${this.location} changed since it was read.`,
        'List the store again and retry; nothing was changed.',
      );
    }
    const { located, broken } = await this.readAll();
    let hits = located.filter((l) => l.entry.id === entryId);
    if (!hits.length && entryId.trim().length >= 4) {
      const want = entryId.trim().toLowerCase();
      hits = located.filter((l) => l.entry.id.toLowerCase().startsWith(want));
    }
    if (hits.length === 0)
      throw new AgentKeepError(
        'EntryNotFound',
        `No Agent Zero memory with id ${entryId} in ${this.location}.`,
        undefined,
        [memoryListAction([this.spec])],
      );
    if (hits.length > 1) {
      throw new AgentKeepError(
        'Conflict',
        `Id ${entryId} is ambiguous: ${hits
          .slice(0, 8)
          .map((h) => `${h.entry.id} in ${h.dir.rel}`)
          .join(', ')}.`,
        'Give more characters of the id; an id in several subdirs (ids are unique per subdir only) is edited in the Agent Zero dashboard of that subdir.',
      );
    }
    this.refuseBroken(broken, hits[0].dir.rel);
    return { target: hits[0], hash };
  }

  /** Re-read after an API change and return the entry with `id` (if any) and the new content hash. */
  private async reread(subdirRel: string, id: string): Promise<{ entry?: MemoryEntry; hash: string }> {
    const { located } = await this.readAll();
    const entry = located.find((l) => l.dir.rel === subdirRel && l.entry.id === id)?.entry;
    return { entry, hash: await this.contentHash() };
  }

  private notReflected(what: string): AgentKeepError {
    return new AgentKeepError(
      'Conflict',
      `Agent Zero at ${this.url} reported the ${what} as done, but ${this.location} does not show it.`,
      'The URL probably belongs to another Agent Zero instance than this root (or a different volume): check ?url= / AGENTKEEP_A0_URL.',
    );
  }

  /**
   * Replace an entry's text through the dashboard `update` action (Agent Zero deletes and re-adds
   * the document under the same id and metadata, re-embedding it). Compare-and-swap: refuses
   * (Conflict) when the content hash is no longer `expectedHash`; checked just before the call, so a
   * save by the agent in the instant between is not detected.
   * @throws Unsupported (no URL), EntryNotFound, Conflict, AuthFailed, Internal (API refused or unreachable)
   */
  async edit(
    entryId: string,
    text: string,
    expectedHash?: string,
    opts?: WriteOptions,
  ): Promise<{ entry: MemoryEntry; previous: MemoryEntry; contentHash: string }> {
    const api = this.api();
    if (!text.trim())
      throw new AgentKeepError(
        'InvalidParams',
        'The new text is empty.',
        'Give the new text, or remove the entry instead.',
      );
    const { target } = await this.locate(entryId, expectedHash);
    await this.backup(target.dir.rel, opts);
    const md = { ...target.doc.metadata, id: target.entry.id };
    const original = this.dashboardFormat(target.doc.text, md);
    await api.dashboard('update', {
      memory_subdir: target.dir.subdir,
      original,
      edited: { ...original, content_full: text },
    });
    const after = await this.reread(target.dir.rel, target.entry.id);
    if (!after.entry || after.entry.text !== text) throw this.notReflected('edit');
    return { entry: after.entry, previous: target.entry, contentHash: after.hash };
  }

  /** Delete an entry through the dashboard `delete` action; the area is returned as `file` (for add). @throws as edit */
  async remove(
    entryId: string,
    expectedHash?: string,
    opts?: WriteOptions,
  ): Promise<{ removed: MemoryEntry; contentHash: string; file?: string }> {
    const api = this.api();
    const { target } = await this.locate(entryId, expectedHash);
    await this.backup(target.dir.rel, opts);
    await api.dashboard('delete', { memory_subdir: target.dir.subdir, memory_id: target.entry.id });
    const after = await this.reread(target.dir.rel, target.entry.id);
    if (after.entry) throw this.notReflected('delete');
    const area = target.entry.area ?? 'main';
    return {
      removed: target.entry,
      contentHash: after.hash,
      file: target.dir.subdir === 'default' ? area : `${target.dir.subdir}/${area}`,
    };
  }

  /**
   * Add a memory (e.g. undo of remove) through the dashboard `update` action with a new id: Agent
   * Zero's update deletes the id (absent) and adds the document, so it inserts.
   * @param file the area (main | fragments | solutions; default main), optionally `<subdir>/<area>`
   *   (e.g. `projects/web/main`); default subdir: `default`
   * @throws as edit
   */
  async add(
    text: string,
    file?: string,
    expectedHash?: string,
    opts?: WriteOptions,
  ): Promise<{ entry: MemoryEntry; contentHash: string }> {
    const api = this.api();
    if (!text.trim()) throw new AgentKeepError('InvalidParams', 'The text is empty.', 'Give the text of the memory.');
    const hash = await this.contentHash();
    if (expectedHash !== undefined && expectedHash !== hash) {
      throw new AgentKeepError(
        'Conflict',
        `Agent Zero memory in ${this.location} changed since it was read.`,
        'List the store again and retry; nothing was changed.',
      );
    }
    const cut = file ? file.lastIndexOf('/') : -1;
    const [subdirPart, areaPart] = file && cut > 0 ? [file.slice(0, cut), file.slice(cut + 1)] : [undefined, file];
    const dirs = await this.memoryDirs();
    const dir = subdirPart
      ? dirs.find((d) => d.subdir === subdirPart)
      : (dirs.find((d) => d.layout === 'current' && d.subdir === 'default') ?? dirs[0]);
    if (!dir)
      throw new AgentKeepError(
        'EntryNotFound',
        `No memory subdir ${subdirPart ?? 'default'} in ${this.location}.`,
        `Use one of: ${dirs.map((d) => d.subdir).join(', ') || '(none: let Agent Zero save a first memory)'}.`,
      );
    this.refuseBroken((await this.readAll()).broken, dir.rel);
    const area = areaPart || 'main';
    const id = newA0Id();
    const md = { id, area, timestamp: a0Now() };
    await this.backup(dir.rel, opts);
    await api.dashboard('update', {
      memory_subdir: dir.subdir,
      original: this.dashboardFormat(text, md),
      edited: this.dashboardFormat(text, md),
    });
    const after = await this.reread(dir.rel, id);
    if (!after.entry) throw this.notReflected('add');
    return { entry: after.entry, contentHash: after.hash };
  }

  /** A memory as the dashboard sends it back (memory_dashboard.py `_format_memory_for_dashboard`). */
  private dashboardFormat(text: string, md: Record<string, unknown>): Record<string, unknown> {
    return {
      id: md.id,
      area: md.area ?? 'main',
      timestamp: md.timestamp ?? 'unknown',
      content_full: text,
      knowledge_source: md.knowledge_source ?? false,
      source_file: md.source_file ?? '',
      file_type: md.file_type ?? '',
      consolidation_action: md.consolidation_action ?? '',
      tags: md.tags ?? [],
      metadata: md,
    };
  }
}
