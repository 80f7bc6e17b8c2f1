/**
 * Hermes Agent memory store: read, trace, edit safely.
 *
 * A Hermes home (HERMES_HOME, usually ~/.hermes; named profiles under profiles/<name>) holds
 * `memories/MEMORY.md` (the agent's notes) and `memories/USER.md` (the user profile), entries
 * separated by "\n§\n", counted in characters against `memory.memory_char_limit` (default 2200) and
 * `memory.user_char_limit` (default 1375) of config.yaml; plus SOUL.md, memories/ARCHIVE.jsonl and
 * skills/**\/SKILL.md (read-only here; see ./home.ts) and state.db, the session history (read-only,
 * the source of provenance; see ./history.ts).
 * Source: NousResearch/hermes-agent tools/memory_tool.py, hermes_state.py (shared/reference/memory-stores.md §1).
 *
 * Edits (edit/remove/add) do what Hermes' memory tool does, so neither side overwrites the other:
 * the exclusive flock on `memories/<FILE>.lock` (./lock.ts), re-read under the lock, Hermes' drift
 * rule (refuse, keep `<FILE>.bak.<unix ts>`), the char limit (OverBudget), a compare-and-swap on the
 * sha256 of the raw file (Conflict), then a temp file in the same directory + rename. Every check runs
 * before anything is written, so a refused edit leaves the memory files byte-identical.
 */
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { MemoryEntry, MemoryFile, Provenance, ProvenanceTrace } from '../../protocol';
import { memoryListAction } from '../../core/actions';
import { AgentKeepError } from '../../core/errors';
import { isTempName, tempNameFor } from '../../core/fsutil';
import type { StoreProblem } from '../../protocol';
import { problemOf } from '../broken';
import { captureSqlite } from '../sqlite';
import { captureLocalFiles, changedLocalFiles, checkLocalRestore, restoreLocalFiles } from '../files';
import { joinOn, localTransport, pathOn, type DirEntry, type FileStat, type FileTransport } from '../transport';
import type {
  AgentStateOptions,
  AgentWrite,
  CaptureSink,
  CaptureSource,
  CapturedFile,
  MemoryStoreAdapter,
  RestoreSource,
  StoreLintProfile,
  WriteOptions,
} from '../types';
import {
  ENTRY_DELIMITER,
  READ_ONLY,
  driftReason,
  entryId,
  isoTime,
  limitsFromConfig,
  parseEntries,
  readHermesConfig,
  readHome,
  sha256,
  usageChars,
  PENDING_MEMORY_DIR,
  type FileSource,
  type HermesLimits,
  type ReadFile,
} from './home';
import { ProvenanceIndex, outsideActions, readHistory, type HermesHistory } from './history';
import { lockHermesFile } from './lock';

export {
  ENTRY_DELIMITER,
  DEFAULT_MEMORY_CHAR_LIMIT,
  DEFAULT_USER_CHAR_LIMIT,
  parseEntries,
  usageChars,
  entryId,
  driftReason,
  limitsFromConfig,
  type HermesLimits,
} from './home';

/**
 * Directories of Hermes' staged writes (tools/write_approval.py: `<HERMES_HOME>/pending/{memory,skills}/<id>.json`),
 * agent state: a restore brings back what was waiting for approval at the time of the restore point.
 */
const PENDING_DIRS = [PENDING_MEMORY_DIR, 'pending/skills'];
/** A staged-write record path (not Hermes' own temp files while it writes one). */
const PENDING_RE = /^pending\/(memory|skills)\/[^/]+\.json$/;

/** Fixed agent-state files of a Hermes home (relative POSIX paths); skills/** is added on top. */
const FIXED_STATE_FILES = [
  'memories/MEMORY.md',
  'memories/USER.md',
  'memories/ARCHIVE.jsonl',
  'SOUL.md',
  'state.db',
  'state.db-wal',
  'state.db-shm',
];

/** The editable files: area -> root-relative path. */
const EDITABLE: Record<string, string> = { memory: 'memories/MEMORY.md', user: 'memories/USER.md' };

/** Minimum length of an id prefix that resolves. */
export const MIN_ID_PREFIX = 4;

/**
 * Read the char limits from `<home>/config.yaml`. A missing, unreadable or broken config (or a value
 * that is not a positive integer) falls back to the defaults; nothing here is fatal.
 */
export async function readLimits(home: string): Promise<HermesLimits> {
  return limitsFromConfig(await fs.readFile(path.join(home, 'config.yaml'), 'utf8').catch(() => undefined));
}

async function exists(p: string, io: FileTransport = localTransport): Promise<boolean> {
  return io.lstat(p).then(
    () => true,
    (e: unknown) => {
      if (e instanceof AgentKeepError) throw e; // the other machine cannot be reached: not "absent"
      return false;
    },
  );
}

/**
 * All regular files under `dir` (not following symlinked dirs), as POSIX paths relative to `base`,
 * on the machine of `io`.
 */
async function walkFiles(base: string, dir: string, out: string[], io: FileTransport = localTransport): Promise<void> {
  let entries: DirEntry[];
  try {
    entries = await io.readdir(joinOn(io, base, dir));
  } catch {
    return;
  }
  for (const e of entries) {
    const rel = dir ? `${dir}/${e.name}` : e.name;
    if (e.isDirectory()) await walkFiles(base, rel, out, io);
    else if ((e.isFile() || e.isSymbolicLink()) && !isTempName(e.name)) out.push(rel); // (a killed write's temp is never agent state)
  }
}

/**
 * Hermes homes on this machine: `$HERMES_HOME` (when set), `~/.hermes`, and each
 * `<home>/profiles/<name>` that is one (has memories/ or config.yaml; not a ".…" name, not tombstoned
 * in `profiles/.deleted/`, as hermes_constants.py named_profile_home). Absolute paths, deduplicated.
 * @param env environment to read HERMES_HOME from (default process.env)
 * @param homedir the user's home directory (default os.homedir())
 */
export async function findHermesHomes(
  env: NodeJS.ProcessEnv = process.env,
  homedir: string = os.homedir(),
): Promise<string[]> {
  const roots = [env.HERMES_HOME, path.join(homedir, '.hermes')].filter((x): x is string => !!x && path.isAbsolute(x));
  const out: string[] = [];
  const isHome = async (p: string): Promise<boolean> =>
    (await exists(path.join(p, 'memories'))) || (await exists(path.join(p, 'config.yaml')));
  for (const r of roots) {
    const root = path.resolve(r);
    if (!out.includes(root) && (await isHome(root))) out.push(root);
    const names = await fs.readdir(path.join(root, 'profiles')).catch(() => [] as string[]);
    // as Hermes: not ".…" names (profiles/.deleted holds tombstones), not a profile being deleted
    const gone = new Set(await fs.readdir(path.join(root, 'profiles', '.deleted')).catch(() => [] as string[]));
    for (const n of names.filter((x) => !x.startsWith('.') && !gone.has(x)).sort()) {
      const p = path.join(root, 'profiles', n);
      if (!out.includes(p) && (await isHome(p))) out.push(p);
    }
  }
  return out;
}

/** state.db as read: the memory ops and their index, or why it could not be read. */
type HistoryRead = { h: HermesHistory; index: ProvenanceIndex } | { problem: StoreProblem };

/**
 * The Hermes memory store adapter for one home directory, on this machine or on another one: every
 * file operation, lock and probe goes through its FileTransport (../transport: node:fs here, SFTP and
 * exec over SSH for `hermes:ssh://user@host[:port]/abs/home`), so both work alike.
 */
export class HermesStore implements MemoryStoreAdapter {
  readonly kind = 'hermes';
  private history?: HistoryRead & { key: string };

  /**
   * @param root absolute path of the Hermes home (the directory holding memories/ and config.yaml) on
   *   the machine of `io`
   * @param spec the store name as given, `hermes:/abs/home` or `hermes:ssh://user@host/abs/home`
   * @param io the machine the home is on (default this one)
   */
  constructor(
    readonly root: string,
    readonly spec: string = `hermes:${root}`,
    readonly io: FileTransport = localTransport,
  ) {
    // stale claims are about the machine the home is on
    if (io.remote) this.lintProfile = { ...this.lintProfile, machine: io };
  }

  /** See MemoryStoreAdapter.location: the home directory (ssh://user@host:port/abs/home on another machine). */
  get location(): string {
    return this.io.display(this.root);
  }
  /** See MemoryStoreAdapter.localRoot: the home directory; none for a home on another machine. */
  get localRoot(): string | undefined {
    return this.io.remote ? undefined : this.root;
  }

  /** The absolute path of a home-relative POSIX path on the home's machine. */
  private abs(rel: string): string {
    return joinOn(this.io, this.root, rel);
  }

  /** MEMORY.md, USER.md, SOUL.md, ARCHIVE.jsonl and skills are text files. */
  readonly textFiles = true;

  /**
   * Lint knobs: char budgets (MEMORY.md/USER.md usage), history while state.db exists, Hermes' drift
   * rule on the raw MEMORY.md/USER.md, and "~" = the parent of a home named .hermes (else unknown).
   */
  readonly lintProfile: StoreLintProfile = {
    budgets: true,
    keepsHistory: () =>
      this.io.stat(this.abs('state.db')).then(
        () => true,
        () => false,
      ),
    historyChecks: ['age of MEMORY.md and USER.md entries (Hermes keeps their times only in state.db)'],
    driftText: async (f) => {
      if (f.kind !== 'hermes-memory' && f.kind !== 'hermes-user') return undefined;
      const rel = f.kind === 'hermes-memory' ? EDITABLE.memory : EDITABLE.user;
      const file = f.file === this.io.display(this.abs(rel)) ? this.abs(rel) : f.file;
      return this.io.readFile(file).then(
        (b) => b.toString('utf8'),
        () => undefined,
      );
    },
    agentHome: () => {
      const p = pathOn(this.io);
      return p.basename(this.root) === '.hermes' ? p.dirname(this.root) : null;
    },
  };

  /** @throws AgentKeepError StoreNotFound when root is not a directory or has neither memories/ nor config.yaml. */
  async check(): Promise<void> {
    let st: FileStat;
    const shown = this.location;
    try {
      st = await this.io.stat(this.root);
    } catch (e) {
      if (e instanceof AgentKeepError) throw e; // the other machine cannot be reached or refused us
      if (this.io.remote && (e as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new AgentKeepError(
          'StoreNotFound',
          `Cannot read the Hermes home ${shown}: ${(e as Error).message}.`,
          `Check that ${this.io.user} may read ${this.root} on that machine, or log in as the user Hermes runs as.`,
        );
      }
      throw new AgentKeepError(
        'StoreNotFound',
        `Hermes home ${shown} does not exist.`,
        this.io.remote
          ? `Point the store at the HERMES_HOME there (an absolute path on that machine), e.g. ` +
              `hermes:${this.io.display(`${this.io.user === 'root' ? '/root' : `/home/${this.io.user}`}/.hermes`)}.`
          : 'Point --store at the HERMES_HOME, usually hermes:~/.hermes written as an absolute path.',
      );
    }
    if (!st.isDirectory()) {
      throw new AgentKeepError(
        'StoreNotFound',
        `Hermes home ${shown} is not a directory.`,
        'Point --store at the HERMES_HOME directory, usually ~/.hermes.',
      );
    }
    if (!(await exists(this.abs('memories'), this.io)) && !(await exists(this.abs('config.yaml'), this.io))) {
      throw new AgentKeepError(
        'StoreNotFound',
        `Not a Hermes home: no memories/ or config.yaml in ${shown}.`,
        'Point at the HERMES_HOME, usually ~/.hermes.',
      );
    }
  }

  private disk(): FileSource {
    return {
      read: async (rel) => {
        const io = this.io;
        const file = this.abs(rel);
        const abs = io.display(file);
        const fail = (e: unknown): AgentKeepError => {
          if (e instanceof AgentKeepError) return e; // the connection to the other machine
          const perm = (e as NodeJS.ErrnoException).code === 'EACCES' || (e as NodeJS.ErrnoException).code === 'EPERM';
          return new AgentKeepError(
            'FileError',
            `Cannot read ${abs}: ${perm ? `permission denied for ${io.user}` : (e as Error).message}.`,
            perm
              ? io.remote
                ? `Give ${io.user} read access on that machine (e.g. chmod u+r ${file}), or log in as the agent's user.`
                : `Give the user running AgentKeep read access (e.g. chmod u+r ${abs}, or run AgentKeep as the ` +
                  "agent's user)."
              : 'Check the file permissions of the Hermes home.',
          );
        };
        let st: FileStat;
        try {
          st = await io.stat(file); // first: a FIFO would block readFile, a directory is not "absent"
        } catch (e) {
          const code = (e as NodeJS.ErrnoException).code;
          if (code === 'ENOTDIR') return undefined;
          if (code !== 'ENOENT') throw fail(e);
          const link = await io.readlink(file).catch(() => undefined);
          if (link === undefined) return undefined;
          throw new AgentKeepError(
            'FileError',
            `${abs} is a symbolic link to ${link}, which does not exist: Hermes sees no entries there, and a write ` +
              'would replace the link with a file.',
            'Restore the file the link points to, or replace the link with the file (e.g. from a restore point, ' +
              'restored with scope agent).',
          );
        }
        if (!st.isFile()) {
          const kind = st.isFIFO() ? 'a FIFO' : st.isSocket() ? 'a socket' : 'a device';
          const what = st.isDirectory() ? 'a directory' : kind;
          throw new AgentKeepError(
            'FileError',
            `${abs} is ${what}, not a file: Hermes cannot read ${path.posix.basename(file)} from it (its memory tool then ` +
              'sees no entries and fails to write), and AgentKeep does not write there.',
            st.isDirectory()
              ? `Move it away (mv ${file} ${file}.dir), then put the file back: restore a restore point with scope ` +
                  'agent, or write its entries into a file of that name (one line holding only "§" between entries).'
              : `Remove it (rm ${file}) and restore the file: a restore point restored with scope agent.`,
          );
        }
        try {
          return await io.readFile(file);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined; // removed meanwhile
          throw fail(e);
        }
      },
      list: async (dir) => {
        const out: string[] = [];
        await walkFiles(this.root, dir, out, this.io);
        return out;
      },
      display: (rel) => this.io.display(this.abs(rel)),
    };
  }

  private async read(): Promise<ReadFile[]> {
    await this.check();
    return readHome(this.disk(), this.spec);
  }

  /**
   * MEMORY.md (kind hermes-memory) and USER.md (hermes-user) always (zero entries when missing), then
   * SOUL.md (hermes-soul), ARCHIVE.jsonl (hermes-archive) and the skills (hermes-skill) when present,
   * read-only ones with `readOnly` set. @throws StoreNotFound (see check), FileError (unreadable file)
   */
  async list(): Promise<MemoryFile[]> {
    return (await this.read()).map((r) => r.file);
  }

  /** See MemoryStoreAdapter.listCapture: the same files read from a restore point's capture. */
  async listCapture(src: CaptureSource): Promise<MemoryFile[]> {
    const fsrc: FileSource = {
      read: (rel) => src.read(rel),
      list: async (dir) => src.files.filter((f) => f.startsWith(dir + '/')),
      display: (rel) => src.display(rel),
    };
    return (await readHome(fsrc, this.spec)).map((r) => r.file);
  }

  /**
   * Existing agent-state files (memories, ARCHIVE.jsonl, SOUL.md, state.db and its -wal/-shm, skills/**,
   * the staged writes pending/memory/*.json and pending/skills/*.json), POSIX relative, sorted.
   */
  async agentStateFiles(): Promise<string[]> {
    const out: string[] = [];
    for (const rel of FIXED_STATE_FILES) {
      try {
        const st = await this.io.lstat(this.abs(rel));
        if (st.isFile() || st.isSymbolicLink()) out.push(rel);
      } catch (e) {
        if (e instanceof AgentKeepError) throw e; // the other machine cannot be reached: not "absent"
      }
    }
    await walkFiles(this.root, 'skills', out, this.io);
    for (const dir of PENDING_DIRS) {
      const staged: string[] = [];
      await walkFiles(this.root, dir, staged, this.io);
      out.push(...staged.filter((r) => PENDING_RE.test(r)));
    }
    return out.sort();
  }

  /**
   * How many memory writes wait for approval: the `pending/memory/*.json` records, counted as Hermes'
   * pending_count does (tools/write_approval.py). 0 without the directory.
   */
  async pendingWrites(): Promise<number> {
    const names = await this.io.readdir(this.abs(PENDING_MEMORY_DIR)).catch((e: unknown) => {
      if (e instanceof AgentKeepError) throw e; // the other machine cannot be reached: not "none"
      return [] as DirEntry[];
    });
    return names.filter((n) => !n.isDirectory() && n.name.endsWith('.json')).length;
  }

  /** Whether `rel` (root-relative, POSIX) is Hermes agent state: the fixed files or anything under skills/. */
  isAgentStatePath(rel: string): boolean {
    const p = path.posix.normalize(rel.replace(/\\/g, '/')).replace(/^\.\//, '');
    if (p.startsWith('../') || p === '..' || path.posix.isAbsolute(p)) return false;
    return (
      FIXED_STATE_FILES.includes(p) || (p.startsWith('skills/') && p.length > 'skills/'.length) || PENDING_RE.test(p)
    );
  }

  /**
   * Hermes' lock files `memories/MEMORY.md.lock` and `memories/USER.md.lock` (and any other
   * `memories/*.lock`): held with fcntl.flock by Hermes' memory tool, so a restore of any scope must
   * leave them alone (deleting one while Hermes holds it lets the next writer lock a new inode).
   */
  isVolatilePath(rel: string): boolean {
    const p = path.posix.normalize(rel.replace(/\\/g, '/')).replace(/^\.\//, '');
    return /^memories\/[^/]+\.lock$/.test(p);
  }

  /**
   * Before a restore writes MEMORY.md / USER.md: the same exclusive flocks Hermes' memory tool and
   * AgentKeep's edits take (`memories/MEMORY.md.lock`, then `USER.md.lock`; ./lock.ts), waiting up to
   * 10 s each. The lock file is created when missing, as Hermes does (empty); without a memories/
   * directory there is nothing to lock. @throws TargetBusy naming the holder (nothing written yet)
   */
  async lockAgentState(): Promise<{ release(): Promise<void> }> {
    const held: Array<{ release(): Promise<void> }> = [];
    const release = async (): Promise<void> => {
      for (const l of held.reverse()) await l.release();
    };
    if (!(await exists(this.abs('memories'), this.io))) return { release };
    try {
      for (const rel of Object.values(EDITABLE)) {
        held.push(await lockHermesFile(this.abs(rel) + '.lock', undefined, this.io));
      }
    } catch (e) {
      await release();
      throw e;
    }
    return { release };
  }

  /**
   * state.db: one consistent, self-contained copy (db + WAL copied as a pair, WAL checkpointed into
   * the copy; ../sqlite.ts). state.db-wal and -shm: not captured on their own (false). Others: a copy.
   */
  async captureFile(rel: string, dest: string): Promise<void | boolean> {
    if (rel === 'state.db-wal' || rel === 'state.db-shm') return false;
    if (rel === 'state.db') return captureSqlite(this.abs('state.db'), dest, this.io);
    await this.io.download(this.abs(rel), dest);
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

  /**
   * See MemoryStoreAdapter.brokenAgentState: MEMORY.md, USER.md, SOUL.md and ARCHIVE.jsonl that exist
   * but cannot be read as a file (a directory, a FIFO or socket, a dangling symlink, no permission:
   * the same FileError, message and fix as memory list's `broken`), and a state.db that is not a
   * file. A file that is only not valid UTF-8 is captured as it is (its bytes), so it is not listed.
   */
  async brokenAgentState(): Promise<Array<{ path: string; message: string; hint?: string }>> {
    const out: Array<{ path: string; message: string; hint?: string }> = [];
    const disk = this.disk();
    for (const rel of [EDITABLE.memory, EDITABLE.user, 'SOUL.md', 'memories/ARCHIVE.jsonl']) {
      try {
        await disk.read(rel);
      } catch (e) {
        if (!(e instanceof AgentKeepError && e.kind === 'FileError')) throw e; // the connection: not "broken"
        out.push({ path: rel, message: e.message, ...(e.hint ? { hint: e.hint } : {}) });
      }
    }
    const db = this.abs('state.db');
    const l = await this.io.lstat(db).catch((e: unknown) => {
      if (e instanceof AgentKeepError) throw e;
      return undefined;
    });
    if (l && !l.isFile()) {
      const st = l.isSymbolicLink() ? await this.io.stat(db).catch(() => undefined) : l;
      const what = !st
        ? 'a symbolic link to something that does not exist'
        : st.isDirectory()
          ? 'a directory'
          : st.isFile()
            ? undefined
            : 'not a regular file';
      if (what)
        out.push({
          path: 'state.db',
          message: `${this.io.display(db)} is ${what}, not Hermes' session database.`,
          hint: `Move it away (mv ${db} ${db}.moved); Hermes creates a new state.db on its next start.`,
        });
    }
    return out;
  }

  /** Hermes readOnlyReason: none (MEMORY.md and USER.md are editable; other files say so per file). */
  async readOnlyReason(): Promise<string | undefined> {
    return undefined;
  }

  /**
   * sha256 of a file's raw bytes (`file`: absolute path of MEMORY.md or USER.md), or of the store's
   * editable content (both files) without `file`. A missing file hashes as empty.
   */
  async contentHash(file?: string): Promise<string> {
    // a broken file (a directory, a dangling link, unreadable) hashes as its error, so it differs from
    // an empty file and stays stable while it stays broken
    const raw = async (rel: string): Promise<Buffer> => {
      try {
        return (await this.disk().read(rel)) ?? Buffer.alloc(0);
      } catch (e) {
        return Buffer.from(`broken\0${(e as Error).message}`);
      }
    };
    if (file) {
      const rel = Object.values(EDITABLE).find((r) => this.io.display(this.abs(r)) === file);
      if (!rel) {
        // another file of the home (MemoryFile.file is shown as a URL on another machine)
        const mine = this.io.remote && file.startsWith(`${this.location}/`);
        const own = mine ? this.abs(decodeURI(file.slice(this.location.length))) : file;
        return sha256(await this.io.readFile(own).catch(() => Buffer.alloc(0)));
      }
      return sha256(await raw(rel));
    }
    return sha256(sha256(await raw(EDITABLE.memory)) + sha256(await raw(EDITABLE.user)));
  }

  /**
   * Find an entry by id or unique prefix (>= 4 hex chars) across all files of the home.
   * @throws InvalidParams (prefix too short), EntryNotFound, Conflict (ambiguous: names the candidates)
   */
  async resolve(id: string): Promise<{ entry: MemoryEntry; file: MemoryFile }> {
    return resolveIn(await this.list(), id, this.spec);
  }

  /**
   * state.db read once per version (size and mtime of the db and its WAL): the memory ops, or the
   * problem that keeps it from being read (damaged, not SQLite, unreadable), cached the same way so a
   * damaged state.db costs one read, not one per entry. undefined: no state.db.
   */
  private async historyIndex(): Promise<HistoryRead | undefined> {
    const db = this.abs('state.db');
    const [st, wal] = await this.io.stamps([db, db + '-wal']).catch((e: unknown) => {
      if (e instanceof AgentKeepError) throw e; // the other machine cannot be reached
      return [undefined, undefined]; // cannot even stat it: as if there were none (as before)
    });
    if (!st) return undefined;
    const key = `${st.size}:${st.mtime}:${st.ino}:${wal?.size ?? 0}:${wal?.mtime ?? 0}`;
    if (this.history?.key !== key) {
      try {
        const h = await readHistory(db, undefined, this.io);
        this.history = { key, h, index: new ProvenanceIndex(h.memoryOps) };
      } catch (e) {
        if (!(e instanceof AgentKeepError && e.kind === 'FileError')) throw e;
        this.history = { key, problem: problemOf(e) };
      }
    }
    return this.history;
  }

  /**
   * Provenance of an entry: the `memory` tool calls in state.db that added or replaced it, oldest
   * first (exact text, else whitespace/case-normalised, then the replace chain through old_text).
   * SOUL.md, skills and the archive are not written by the memory tool; the note says so.
   * A state.db that exists but cannot be read (damaged, not SQLite, no permission) gives no traces
   * and `unavailable` (the FileError, with the fix): the entry's origin is unknown, not "by hand".
   */
  async provenance(entry: MemoryEntry): Promise<Provenance> {
    if (entry.area === 'pending') {
      const md = entry.meta ?? {};
      const action = String(md.action ?? '');
      return {
        traces: [
          {
            action: action === 'add' || action === 'replace' || action === 'remove' ? action : 'update',
            ...(entry.createdAt ? { time: entry.createdAt } : {}),
            ...(entry.source ? { source: entry.source } : {}),
            message: typeof md.summary === 'string' ? md.summary : entry.text.slice(0, 2000),
            messageId: entry.id,
            ...(typeof md.oldText === 'string' && action === 'replace' ? { previous: md.oldText } : {}),
          },
        ],
        note:
          `Staged for approval (memory.write_approval), not written yet: Hermes applies it on /memory approve ${entry.id} ` +
          `and drops it on /memory reject ${entry.id}.`,
      };
    }
    if (entry.area && entry.area !== 'memory' && entry.area !== 'user') {
      const what =
        entry.area === 'soul'
          ? 'SOUL.md is written by hand'
          : entry.area === 'skill'
            ? 'skills are written by skill_manage or by hand'
            : "archived entries were moved by Hermes' eviction";
      return { traces: [], note: `Not traced: ${what}, not by the memory tool.` };
    }
    const hi = await this.historyIndex();
    if (!hi)
      return {
        traces: [],
        note: `no state.db in this home (${this.location}), so there is no session history to trace this entry to`,
      };
    if ('problem' in hi) {
      return {
        traces: [],
        note:
          `Provenance unavailable: ${hi.problem.message} ` +
          'Which session wrote this entry is unknown (not "edited by hand").',
        unavailable: hi.problem,
      };
    }
    const r = hi.index.tracesFor(entry.area ?? 'memory', entry.text);
    const states = new Set(r.traces.map((t) => t.messageState));
    const said = [...hi.h.notes];
    if (states.has('rewound'))
      said.push(
        'the call that wrote it is in a rewound part of its session (state.db active 0, compacted 0: Hermes hides ' +
          'that message, but the write had reached the file)',
      );
    if (states.has('compacted'))
      said.push(
        'a call is in messages compaction summarised out of the context (compacted 1: Hermes still keeps them)',
      );
    const extra = said.length ? ` (${said.join('; ')})` : '';
    if (r.how === 'none')
      return {
        traces: [],
        note: `no memory tool call in state.db wrote this text: it was probably edited by hand${extra}`,
      };
    if (r.how === 'normalised')
      return {
        traces: r.traces,
        note: `matched ignoring whitespace and case: the text was changed by hand after the tool call${extra}`,
      };
    return { traces: r.traces, ...(extra ? { note: extra.trim() } : {}) };
  }

  /**
   * See MemoryStoreAdapter.configProblem: config.yaml that exists but does not parse as YAML or cannot
   * be read as a file (./home.ts readHermesConfig), with the fix. Hermes then uses its default limits.
   */
  async configProblem(): Promise<{ file: string; problem: StoreProblem } | undefined> {
    const c = await readHermesConfig(this.disk());
    return c.problem ? { file: this.io.display(this.abs('config.yaml')), problem: c.problem } : undefined;
  }

  /** See MemoryStoreAdapter.historyProblem: state.db that exists but cannot be read (one read, cached). */
  async historyProblem(): Promise<{ file: string; problem: StoreProblem } | undefined> {
    const hi = await this.historyIndex();
    return hi && 'problem' in hi ? { file: path.join(this.root, 'state.db'), problem: hi.problem } : undefined;
  }

  /** Provenance of many entries (one state.db read); same rules as provenance(). */
  async provenanceAll(entries: MemoryEntry[]): Promise<Provenance[]> {
    await this.historyIndex();
    return Promise.all(entries.map((e) => this.provenance(e)));
  }

  /**
   * See MemoryStoreAdapter.agentWrites: the `memory` tool calls in state.db, in message order (none
   * without a state.db). @throws FileError when state.db exists but cannot be read
   */
  async agentWrites(): Promise<AgentWrite[]> {
    const hi = await this.historyIndex();
    if (!hi) return [];
    if ('problem' in hi) {
      throw new AgentKeepError('FileError', hi.problem.message, hi.problem.hint);
    }
    return hi.h.memoryOps.map((o) => ({
      action: o.action,
      file: this.io.display(this.abs(o.target === 'user' ? EDITABLE.user : EDITABLE.memory)),
      target: o.target,
      ...(o.content !== undefined ? { content: o.content } : {}),
      ...(o.oldText !== undefined ? { oldText: o.oldText } : {}),
      ...(o.time !== undefined && isoTime(o.time) ? { time: isoTime(o.time) } : {}),
      ...(o.session ? { session: o.session } : {}),
      ...(o.callId ? { toolCallId: o.callId } : {}),
      key: `${o.messageId}:${o.n}`,
      ...(o.ok ? {} : { refused: true }),
      ...(o.state ? { messageState: o.state } : {}),
    }));
  }

  /** See MemoryStoreAdapter.splitEntries: Hermes' own split (entries between "\n§\n", trimmed). */
  splitEntries(text: string): string[] {
    return parseEntries(text);
  }

  /** See MemoryStoreAdapter.joinEntries: as Hermes writes the file. */
  joinEntries(entries: string[]): string {
    return entries.join(ENTRY_DELIMITER);
  }

  /** See MemoryStoreAdapter.fileText: MEMORY.md or USER.md as it is now (undefined: absent). */
  async fileText(file: string): Promise<string | undefined> {
    const rel = Object.values(EDITABLE).find((r) => this.io.display(this.abs(r)) === file);
    if (!rel) return undefined;
    const b = await this.disk().read(rel);
    return b === undefined ? undefined : b.toString('utf8');
  }

  /** See MemoryStoreAdapter.actionsSince: outside-world tool calls in state.db (./history.ts classifyAction). */
  async actionsSince(sinceIso: string, untilIso?: string): Promise<ProvenanceTrace[]> {
    const db = this.abs('state.db');
    if (!(await exists(db, this.io))) return [];
    const since = Date.parse(sinceIso) / 1000;
    const until = untilIso ? Date.parse(untilIso) / 1000 : Infinity;
    const h = await readHistory(db, since, this.io);
    return outsideActions(h.toolCalls.filter((c) => c.time === undefined || c.time < until));
  }

  // ------------------------------------------------------------------------------------------
  // writes

  /**
   * Replace the text of a MEMORY.md / USER.md entry (the whole entry, as Hermes' replace does).
   * @throws EntryNotFound, Conflict (ambiguous id, hash changed, drift), OverBudget, Unsupported
   *   (read-only file), InvalidParams (empty text or text containing the delimiter), TargetBusy (lock)
   */
  async edit(
    id: string,
    text: string,
    expectedHash?: string,
    opts?: WriteOptions,
  ): Promise<{ entry: MemoryEntry; previous: MemoryEntry; contentHash: string }> {
    const clean = checkText(text);
    let previous!: MemoryEntry;
    const r = await this.write(id, undefined, expectedHash, opts, (entries, e) => {
      previous = e!;
      const i = entries.indexOf(e!.text);
      if (clean !== e!.text && entries.includes(clean)) {
        throw new AgentKeepError(
          'Conflict',
          `Entry ${entryId(clean)} in ${e!.file ?? 'the same file'} already has exactly this text, so the edit would make ${e!.id} a duplicate of it. Nothing was changed.`,
          `Remove ${e!.id} instead (memory remove --entry ${e!.id}), or give a different text.`,
        );
      }
      const next = [...entries];
      next[i] = clean;
      return next;
    });
    return { entry: r.entry(clean), previous, contentHash: r.hash };
  }

  /** Delete a MEMORY.md / USER.md entry; same checks as edit. @returns the removed entry and its file (memory | user) */
  async remove(
    id: string,
    expectedHash?: string,
    opts?: WriteOptions,
  ): Promise<{ removed: MemoryEntry; contentHash: string; file?: string }> {
    let removed!: MemoryEntry;
    const r = await this.write(id, undefined, expectedHash, opts, (entries, e) => {
      removed = e!;
      const i = entries.indexOf(e!.text);
      return [...entries.slice(0, i), ...entries.slice(i + 1)];
    });
    return { removed, contentHash: r.hash, file: removed.area };
  }

  /**
   * Append an entry to MEMORY.md (`file` memory, default) or USER.md (`user`). Like Hermes' add, no
   * drift guard; an exact duplicate is not added again: nothing is written and the existing entry is
   * returned with `alreadyPresent: true`. Without `expectedHash` the file is re-read under the lock
   * and the entry appended to what is there then (parallel adds all land); with it, the CAS holds.
   * @throws InvalidParams (bad file or text), OverBudget, Conflict (hash changed), TargetBusy
   */
  async add(
    text: string,
    file = 'memory',
    expectedHash?: string,
    opts?: WriteOptions,
  ): Promise<{ entry: MemoryEntry; contentHash: string; alreadyPresent?: boolean }> {
    const clean = checkText(text);
    const area =
      file === 'user' || file === 'USER.md' ? 'user' : file === 'memory' || file === 'MEMORY.md' ? 'memory' : undefined;
    if (!area)
      throw new AgentKeepError(
        'InvalidParams',
        `Unknown Hermes memory file "${file}".`,
        'Use file memory (MEMORY.md) or user (USER.md).',
      );
    const r = await this.write(undefined, area, expectedHash, opts, (entries) =>
      entries.includes(clean) ? entries : [...entries, clean],
    );
    return { entry: r.entry(clean), contentHash: r.hash, ...(r.written ? {} : { alreadyPresent: true }) };
  }

  /**
   * See MemoryStoreAdapter.rewriteEntries: MEMORY.md or USER.md (`file` as MemoryFile.file shows it)
   * rewritten in one write through the one write path (lock, CAS on `expectedHash`, drift and budget
   * checks, backup, temp file + rename). New texts `change` returns are checked as edit checks them.
   * @throws Unsupported (not MEMORY.md or USER.md of this home), InvalidParams (a bad new text),
   *   Conflict, OverBudget, TargetBusy as edit; whatever `change` throws (nothing written)
   */
  async rewriteEntries(
    file: string,
    change: (entries: string[]) => string[],
    expectedHash: string,
    opts?: WriteOptions,
  ): Promise<{ contentHash: string; written: boolean; entry: (text: string) => MemoryEntry }> {
    const area = Object.keys(EDITABLE).find((a) => this.io.display(this.abs(EDITABLE[a])) === file);
    if (!area)
      throw new AgentKeepError(
        'Unsupported',
        `${file} is not a memory file AgentKeep edits in ${this.location} (MEMORY.md and USER.md are).`,
        'Make the proposal again (without --apply): it names the files it changes.',
      );
    const r = await this.write(
      undefined,
      area,
      expectedHash,
      opts,
      (entries) => {
        const next = change(entries);
        return next.map((t) => (entries.includes(t) ? t : checkText(t)));
      },
      true,
    );
    return { contentHash: r.hash, written: r.written, entry: r.entry };
  }

  /**
   * The one write path: resolve, check (CAS, drift, budget) on a first read, then under Hermes' lock
   * re-read, re-check, back up, temp file + rename. Nothing is written unless every check passes.
   */
  private async write(
    id: string | undefined,
    addArea: string | undefined,
    expectedHash: string | undefined,
    opts: WriteOptions | undefined,
    change: (entries: string[], e?: MemoryEntry) => string[],
    rewrite = false,
  ): Promise<{ hash: string; written: boolean; entry: (text: string) => MemoryEntry }> {
    // an edit, a remove or a rewrite acts on entries that are there (drift guard, conflict on change)
    const existing = id !== undefined || rewrite;
    const redo = rewrite
      ? 'Make the proposal again (without --apply), review it, and apply that one.'
      : id !== undefined
        ? 'Show the entry again (memory show) and redo the edit on what is there now.'
        : 'List the memory again (memory list) and add the entry again if it is still missing.';
    // abs: the path on the home's machine; shown: how it is shown (the same path here, a URL over SSH)
    type Plan = { area: string; abs: string; shown: string; raw: Buffer; next: string[] | undefined; e?: MemoryEntry };
    const plan = async (): Promise<Plan> => {
      const files = await this.read();
      if (expectedHash) {
        // first: the content changed since it was read (that is why an id may no longer resolve)
        const hashes = files
          .filter((f) => Object.values(EDITABLE).includes(f.rel))
          .map((f) => sha256(f.raw ?? Buffer.alloc(0)));
        if (!hashes.includes(expectedHash) && expectedHash !== sha256(hashes.join(''))) {
          throw new AgentKeepError(
            'Conflict',
            `The memory of ${this.location} changed since it was read (no file has sha256 ${expectedHash.slice(0, 12)}… any more): the agent or someone else wrote it in between. Nothing was changed.`,
            redo,
          );
        }
      }
      let area = addArea;
      let e: MemoryEntry | undefined;
      if (id !== undefined) {
        const found = resolveIn(
          files.map((f) => f.file).filter((f) => !opts?.file || f.file === opts.file),
          id,
          this.spec,
        );
        e = found.entry;
        area = e.area;
        if (!area || !EDITABLE[area]) {
          throw new AgentKeepError(
            'Unsupported',
            `Entry ${e.id} is in ${found.file.file}, which AgentKeep does not edit: ${READ_ONLY[area ?? ''] ?? 'read-only'}.`,
            'Edit entries of MEMORY.md or USER.md, or that file by hand.',
          );
        }
      }
      const rf = files.find((f) => f.rel === EDITABLE[area!])!;
      if (rf.error) throw rf.error; // unreadable: never write over what we could not read
      const raw = rf.raw ?? Buffer.alloc(0);
      const abs = this.abs(EDITABLE[area!]);
      const shown = this.io.display(abs);
      const hash = sha256(raw);
      if (expectedHash && expectedHash !== hash && expectedHash !== (await this.contentHash())) {
        throw new AgentKeepError(
          'Conflict',
          `${shown} changed since it was read (sha256 ${hash.slice(0, 12)}…, expected ${expectedHash.slice(0, 12)}…): the agent or someone else wrote it in between. Nothing was changed.`,
          redo,
        );
      }
      const text = raw.toString('utf8');
      const entries = parseEntries(text);
      const limit = rf.file.usage!.limit;
      if (existing) {
        const drift = driftReason(text, limit);
        if (drift) {
          const bak = `${abs}.bak.${Math.floor(Date.now() / 1000)}`;
          await this.io.writeNew(bak, raw, 0o644).catch(() => undefined);
          throw new AgentKeepError(
            'Conflict',
            `${shown} has drifted: ${drift}. As Hermes does, the edit is refused and a copy was kept as ${this.io.display(bak)}. Nothing else was changed.`,
            `Fix the file by hand (entries separated by a line holding only "§"), or restore it from a restore point, then edit again.`,
          );
        }
      }
      const next = change(entries, e);
      const before = usageChars(entries);
      const after = usageChars(next);
      if (after > limit && after > before) {
        throw new AgentKeepError(
          'OverBudget',
          `The change would make ${path.posix.basename(abs)} ${after} chars, over its ${limit}-char limit (now ${before}). Nothing was written.`,
          `Shorten the text or remove other entries first (limit: memory.${area === 'user' ? 'user' : 'memory'}_char_limit in config.yaml).`,
        );
      }
      return {
        area: area!,
        abs,
        shown,
        raw,
        next: next.length === entries.length && next.every((x, i) => x === entries[i]) ? undefined : next,
        e,
      };
    };

    const first = await plan(); // every refusal happens here, before the lock file is touched
    let written = false;
    if (!first.next) {
      // nothing to change (an exact duplicate add, an edit to the same text): no lock, nothing touched
      return {
        hash: sha256(first.raw),
        written,
        entry: (text) => ({ id: entryId(text), text, store: this.spec, file: first.shown, area: first.area }),
      };
    }
    const lock = await lockHermesFile(`${first.abs}.lock`, undefined, this.io);
    let hash: string;
    try {
      const p = await plan(); // re-read under the lock: what Hermes wrote meanwhile counts
      // An add without expectedHash appends to what is there now (plan re-checked it); an edit or
      // remove (or an add with expectedHash) acted on what it read, so a change meanwhile is a conflict.
      if (!p.raw.equals(first.raw) && (existing || expectedHash)) {
        throw new AgentKeepError(
          'Conflict',
          `${p.shown} changed while AgentKeep waited for Hermes' lock. Nothing was changed.`,
          redo,
        );
      }
      written = !!p.next;
      if (!p.next) {
        hash = sha256(p.raw);
      } else {
        await opts?.beforeWrite?.(p.shown, p.raw);
        const data = p.next.join(ENTRY_DELIMITER);
        const io = this.io;
        const notConnection = (e: unknown): undefined => {
          if (e instanceof AgentKeepError) throw e; // the other machine cannot be reached: never "absent"
          return undefined;
        };
        const st = await io.stat(p.abs).catch(notConnection);
        await io.mkdirp(path.posix.dirname(p.abs));
        const tmp = tempNameFor(p.abs);
        try {
          await io.writeNew(tmp, Buffer.from(data, 'utf8'), st ? st.mode & 0o7777 : 0o644);
          // last compare-and-swap right before the rename (covers a writer that ignores the lock)
          const now = (await io.readFile(p.abs).catch(notConnection)) ?? Buffer.alloc(0);
          if (!now.equals(p.raw)) {
            throw new AgentKeepError(
              'Conflict',
              `${p.shown} changed while AgentKeep was writing (a writer that does not take Hermes' lock). Nothing was changed.`,
              redo,
            );
          }
          await io.rename(tmp, p.abs);
        } catch (e) {
          await io.rm(tmp).catch(() => undefined);
          throw e;
        }
        await io.fsyncDir(path.posix.dirname(p.abs));
        hash = sha256(Buffer.from(data, 'utf8'));
      }
    } finally {
      await lock.release();
    }
    const area = first.area;
    const file = first.shown;
    return { hash, written, entry: (text) => ({ id: entryId(text), text, store: this.spec, file, area }) };
  }
}

/** Reject text Hermes would not store as one entry. @throws InvalidParams */
function checkText(text: string): string {
  const t = text.replace(/\r\n/g, '\n').trim();
  if (!t)
    throw new AgentKeepError(
      'InvalidParams',
      'The entry text is empty.',
      'Give the text with --text, or remove the entry instead.',
    );
  if (t.includes(ENTRY_DELIMITER) || /(^|\n)§(\n|$)/.test(t)) {
    throw new AgentKeepError(
      'InvalidParams',
      'The text contains a line holding only "§", Hermes\' entry delimiter: it would become two entries.',
      'Add each entry on its own (memory add), or drop the "§" line.',
    );
  }
  return t;
}

/**
 * Resolve an id or unique id prefix among the files' entries (identical entries with the same id in
 * one file count once: Hermes acts on the first).
 * @throws InvalidParams, EntryNotFound, Conflict
 */
export function resolveIn(files: MemoryFile[], id: string, spec: string): { entry: MemoryEntry; file: MemoryFile } {
  const want = id.trim().toLowerCase();
  if (want.length < MIN_ID_PREFIX) {
    throw new AgentKeepError(
      'InvalidParams',
      `Entry id "${id}" is too short.`,
      `Give at least ${MIN_ID_PREFIX} characters of the id (see memory list).`,
    );
  }
  const hits: Array<{ entry: MemoryEntry; file: MemoryFile }> = [];
  for (const f of files) {
    for (const e of f.entries) {
      if (!e.id.startsWith(want)) continue;
      if (hits.some((h) => h.entry.id === e.id && h.file.file === f.file)) continue;
      hits.push({ entry: e, file: f });
    }
  }
  const exact = hits.filter((h) => h.entry.id === want);
  const pick = exact.length === 1 ? exact : hits;
  if (pick.length === 1) return pick[0];
  if (!pick.length) {
    throw new AgentKeepError('EntryNotFound', `No entry ${id} in ${spec}.`, 'Ids change when the text changes.', [
      memoryListAction([spec]),
    ]);
  }
  const names = pick
    .slice(0, 8)
    .map((h) => `${h.entry.id} (${path.basename(h.file.file)}: ${h.entry.text.split('\n')[0].slice(0, 40)})`);
  throw new AgentKeepError(
    'Conflict',
    `Entry id ${id} is ambiguous in ${spec}: ${names.join(', ')}${pick.length > 8 ? ', …' : ''}.`,
    'Give more characters of the id.',
  );
}
