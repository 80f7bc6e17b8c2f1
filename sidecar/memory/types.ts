import type { MemoryEntry, MemoryFile, Provenance, ProvenanceTrace } from '../protocol';

/**
 * Files of an agent-state capture in a restore point (memory.diff reads entries from it), keyed by
 * store-relative POSIX path.
 */
export interface CaptureSource {
  /** Store-relative POSIX paths captured. */
  files: string[];
  /** Content of a captured file (undefined when not captured). */
  read(rel: string): Promise<Buffer | undefined>;
  /** How paths are shown, e.g. `<store>:<rel>@<restore point id>`. */
  display(rel: string): string;
}

/** Options of edit/remove/add. */
export interface WriteOptions {
  /**
   * Called under the store's lock right before the write, with the absolute path and the exact
   * bytes about to be replaced (the core keeps them as a backup). A throw aborts the write.
   */
  beforeWrite?(file: string, previous: Buffer): Promise<void>;
}


/**
 * One memory store format behind one interface (sidecar/memory/<kind>/). A store is named
 * `<kind>:/abs/path` (e.g. `hermes:/home/me/.hermes`); `openStore` in sidecar/memory/index.ts parses
 * the name and returns the adapter.
 */
export interface MemoryStoreAdapter {
  /** Store kind, e.g. "hermes". */
  readonly kind: string;
  /** Absolute root of the store (e.g. the Hermes home). */
  readonly root: string;
  /** The store name as given (`kind:/abs/path`). */
  readonly spec: string;
  /**
   * Check that the store exists and is of this kind.
   * @throws AgentKeepError StoreNotFound naming what is missing and how to fix it.
   */
  check(): Promise<void>;
  /** Read the memory files with entries and usage. @throws AgentKeepError StoreNotFound / FileError */
  list(): Promise<MemoryFile[]>;
  /**
   * Agent-state files that exist now, as POSIX paths relative to `root`, sorted. These are what a
   * restore point captures for this store and what scope `agent` restores.
   */
  agentStateFiles(): Promise<string[]>;
  /** Whether a root-relative POSIX path is agent state of this store (whether or not it exists). */
  isAgentStatePath(rel: string): boolean;

  // ---- optional capabilities (issue 4); absent = the store cannot do it, and the core says so ----

  /**
   * Whether a root-relative POSIX path is volatile: a file the store's own writers use for
   * coordination (Hermes: `memories/MEMORY.md.lock`, `USER.md.lock`). A restore of any scope never
   * creates, deletes or modifies these (the core passes them to the backend's skip filter), and
   * agentStateFiles never lists them.
   */
  isVolatilePath?(rel: string): boolean;
  /**
   * Take the store's own write lock(s) before a restore writes its agent-state files, waiting as an
   * edit does (Hermes: the exclusive flock on `memories/MEMORY.md.lock` and `USER.md.lock`, up to
   * 10 s each). Resolves to a release function; absent = the store has no lock.
   * @throws AgentKeepError TargetBusy naming the holder when the lock stays held
   */
  lockAgentState?(): Promise<{ release(): Promise<void> }>;

  /** Why entries cannot be edited from AgentKeep (absent = editable through edit/remove/add). */
  readOnlyReason?(): Promise<string | undefined>;
  /**
   * sha256 (hex) of the store's editable content as read now; passed back as expectedHash. With
   * `file` (an absolute path from MemoryFile.file): that file's hash (what memory.show returns).
   */
  contentHash?(file?: string): Promise<string>;
  /**
   * Where an entry came from (Hermes: the `memory` tool calls in state.db that added or replaced it).
   * Says plainly in `note` when no trace exists.
   */
  provenance?(entry: MemoryEntry): Promise<Provenance>;
  /**
   * Replace an entry's text. Under the store's own lock, temp file + rename; refuses (Conflict) when
   * the content hash is no longer `expectedHash`, (EntryNotFound) for an unknown id, (OverBudget)
   * over the char limit; on any refusal the store is byte-identical.
   */
  edit?(entryId: string, text: string, expectedHash?: string, opts?: WriteOptions): Promise<{ entry: MemoryEntry; previous: MemoryEntry; contentHash: string }>;
  /** Delete an entry, with the same safety as edit. */
  remove?(entryId: string, expectedHash?: string, opts?: WriteOptions): Promise<{ removed: MemoryEntry; contentHash: string; file?: string }>;
  /**
   * Add an entry (e.g. undo of remove); `file` is store-specific (hermes: memory | user).
   * `alreadyPresent`: the exact entry was there already and nothing was written.
   */
  add?(text: string, file?: string, expectedHash?: string, opts?: WriteOptions): Promise<{ entry: MemoryEntry; contentHash: string; alreadyPresent?: boolean }>;
  /**
   * Write a consistent copy of agent-state file `rel` to `dest` (e.g. a SQLite database in WAL mode:
   * never a torn copy). Absent = a plain file copy is consistent. Resolves `false` when `rel` is
   * not captured on its own because another file's capture already holds it (e.g. Hermes
   * `state.db-wal`, checkpointed into the copy of `state.db`); a restore then removes it.
   */
  captureFile?(rel: string, dest: string): Promise<void | boolean>;
  /**
   * Find one entry by id or unique id prefix (>= 4 chars).
   * @throws EntryNotFound (no such id), Conflict (an ambiguous prefix; the message names the candidates)
   */
  resolve?(entryId: string): Promise<{ entry: MemoryEntry; file: MemoryFile }>;
  /** The memory files as they were in a restore point's capture of this store (memory.diff). */
  listCapture?(src: CaptureSource): Promise<MemoryFile[]>;
  /**
   * Agent actions at or after `sinceIso` (and before `untilIso` when given) that reach the outside
   * world (messages sent, web requests, git pushes, ...), from the store's session history, oldest first.
   */
  actionsSince?(sinceIso: string, untilIso?: string): Promise<ProvenanceTrace[]>;
}
