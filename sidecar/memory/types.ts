import type { MemoryEntry, MemoryFile, Provenance, ProvenanceTrace, StoreProblem } from '../protocol';
import type { FileTransport } from './transport';

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

/**
 * One write of the agent's own memory tool as the store's session history keeps it (Hermes: a
 * `memory` tool call in state.db), for the memory timeline (sidecar/memory/ops/timeline.ts).
 */
export interface AgentWrite {
  action: 'add' | 'replace' | 'remove';
  /** Absolute path of the file it wrote (as MemoryFile.file shows it), where known. */
  file?: string;
  /** The tool's target (Hermes: memory | user). */
  target?: string;
  /** The tool's content (add, replace). */
  content?: string;
  /** The tool's old_text (replace, remove): a substring of the entry it changed. */
  oldText?: string;
  /** ISO 8601 UTC. */
  time?: string;
  session?: string;
  toolCallId?: string;
  /** Stable key within the history (Hermes: "<message id>:<n>"). */
  key: string;
  /** The tool said it refused the write (nothing was written). */
  refused?: boolean;
  /** The session message is not active (Hermes v30: compacted, or rewound): the file write still happened. */
  messageState?: string;
}

/** Options of edit/remove/add. */
export interface WriteOptions {
  /**
   * Called under the store's lock right before the write, with the absolute path and the exact
   * bytes about to be replaced (the core keeps them as a backup). A throw aborts the write.
   */
  beforeWrite?(file: string, previous: Buffer): Promise<void>;
  /**
   * Look the entry id up only in this file (MemoryFile.file): the same text in two files has the
   * same id (Hermes), and the timeline's writes know which file they act on.
   */
  file?: string;
}

/** One captured agent-state file: store-relative POSIX path, size in bytes, sha256 (hex) of the content. */
export interface CapturedFile {
  path: string;
  size: number;
  hash: string;
}

/**
 * Where a capture puts file content (the core's content-addressed object store, ObjectStore in
 * sidecar/core/objects.ts): the content is stored once under its sha256.
 */
export interface CaptureSink {
  /** Store the content of a local file. @throws Node fs errors (ENOENT when it vanished) */
  putFile(abs: string): Promise<{ hash: string; size: number }>;
  /** Store bytes (a store without local files, e.g. an API export). */
  putBuffer(data: Uint8Array): Promise<{ hash: string; size: number }>;
}

/** Where a restore reads captured content from (the core's object store). */
export interface RestoreSource {
  /** Write the content with sha256 `hash` to local file `dest` (temp + rename is the caller's job). */
  copyOut(hash: string, dest: string): Promise<void>;
  /** The content with sha256 `hash`. @throws CorruptSnapshot when missing */
  read(hash: string): Promise<Buffer>;
}

/** How capture/restore run. */
export interface AgentStateOptions {
  /** Stops the operation between files (the core's CoreOptions.signal). */
  signal?: AbortSignal;
  /** What an abort error says happened, e.g. "the restore was stopped part-way". */
  abortWhat?: string;
  /** Called once the files to capture are known (progress: `total` files). */
  onFiles?(total: number): void;
  /**
   * Restore only: store-relative paths the restore leaves as they are (neither written nor removed):
   * the files that were broken when the restore point was taken (AgentCapture.broken), so the capture
   * says nothing about them.
   */
  leaveAlone?: readonly string[];
}

/** A vector the store itself keeps for one entry (memory lint's LintEntry.embedding). */
export interface StoreEmbedding {
  /** Who made it, e.g. `huggingface/sentence-transformers/all-MiniLM-L6-v2`, or `<kind>:unknown-model`. */
  model: string;
  /** The float32 components as stored. */
  vector: Float32Array;
}

/** The vectors a store keeps for its entries (StoreLintProfile.embeddings). */
export interface StoreEmbeddings {
  /** Keyed by embeddingKey(MemoryFile.file, MemoryEntry.id) of the entries list() gives. */
  vectors: Map<string, StoreEmbedding>;
  /**
   * What was not read, and why, one sentence each (a vector file over the size cap, an index type
   * that is not read): each becomes a lint note, so that no vector is not read as "none kept".
   */
  notes: string[];
}

/** The key of an entry in StoreEmbeddings.vectors: its file (MemoryFile.file) and id. */
export function embeddingKey(file: string, id: string): string {
  return `${file}\0${id}`;
}

/**
 * What memory lint (sidecar/memory/lint/run.ts) needs to know about a store beyond its entries; the
 * lint asks the adapter, never the store's kind. Absent = no history beyond `provenance`, no drift
 * check, no opinion about the agent's home.
 */
export interface StoreLintProfile {
  /** Its files carry usage against a char limit (MemoryFile.usage): the budget rule applies. */
  readonly budgets?: boolean;
  /**
   * Whether the store keeps a write history right now (Hermes: state.db exists), so that an entry
   * with no trace is untraceable rather than unknown. Absent = yes, when the adapter has provenance.
   */
  keepsHistory?(): Promise<boolean>;
  /**
   * Checks, besides untraceable and which contradicting entry is newer, that need the history and
   * so do not run when it cannot be read, as the lint names them (Hermes: the age of MEMORY.md and
   * USER.md entries, whose times live only in state.db).
   */
  readonly historyChecks?: readonly string[];
  /**
   * The raw text of a file the drift rule checks (Hermes MEMORY.md / USER.md, entries split on
   * "\n§\n"), or undefined when this file is not checked (or cannot be read: nothing to drift).
   */
  driftText?(file: MemoryFile): Promise<string | undefined>;
  /**
   * The directory "~" means in this store's entries (Hermes: the parent of a `.hermes` home), null
   * when it cannot be known (a Hermes home elsewhere). Absent: no opinion (the sidecar user's home).
   */
  agentHome?(): string | null;
  /**
   * The machine the store's files are on when that is not the sidecar's (a store reached over SSH):
   * stale claims (paths, commands, tool versions, OS release) are checked there, through this
   * transport (sidecar/memory/lint/machine.ts transportProbe). Absent: this machine, or the target.
   */
  readonly machine?: FileTransport;
  /**
   * The vectors the store keeps for its entries (Agent Zero: index.faiss rows through index.pkl's
   * index_to_docstore_id; mem0: the local Qdrant points' vectors), read as list() reads the entries.
   * Bounded (a file over a size cap is skipped with a note); a damaged vector file gives no vectors
   * (list() reports it as broken). Absent: the store keeps none that AgentKeep reads.
   * @param limits.maxBytes the size cap of one vector file (default: the store's, 256 MiB)
   */
  embeddings?(limits?: { maxBytes?: number }): Promise<StoreEmbeddings>;
}

/**
 * One memory store format behind one interface (sidecar/memory/<kind>/). A store is named
 * `<kind>:<rest>` (e.g. `hermes:/home/me/.hermes`); the kind's StoreFactory (registered in
 * sidecar/memory/index.ts) parses the rest and creates the adapter. The core reaches the store's
 * agent state only through capture / restore / changedFiles: it never reads or writes the store's
 * files itself, so a store need not be local files at all (see `localRoot`).
 */
export interface MemoryStoreAdapter {
  /** Store kind, e.g. "hermes". */
  readonly kind: string;
  /**
   * Where the store is, for display and identity (with `kind`): an absolute path for file stores, a
   * URL or any other stable string for a store reached over the network.
   */
  readonly location: string;
  /**
   * Absolute local directory that holds the store's files, when it has one (the agent-state paths
   * are relative to it). The core uses it only to spare the store's files inside a target during a
   * machine restore; absent for a store reached through an API or another machine.
   */
  readonly localRoot?: string;
  /** The store name as given (`kind:...`). */
  readonly spec: string;
  /** What memory lint needs from this store (see StoreLintProfile). */
  readonly lintProfile?: StoreLintProfile;
  /**
   * Its memory files (MemoryFile.file) are plain text under localRoot, so a text diff of a file
   * against its capture shows the changes (Hermes). Absent: databases, pickles or no local files.
   */
  readonly textFiles?: boolean;
  /**
   * Check that the store exists and is of this kind.
   * @throws AgentKeepError StoreNotFound naming what is missing and how to fix it.
   */
  check(): Promise<void>;
  /** Read the memory files with entries and usage. @throws AgentKeepError StoreNotFound / FileError */
  list(): Promise<MemoryFile[]>;
  /**
   * Agent-state files that exist now, as store-relative POSIX paths, sorted. These are what a
   * restore point captures for this store and what scope `agent` restores.
   */
  agentStateFiles(): Promise<string[]>;
  /** Whether a store-relative POSIX path is agent state of this store (whether or not it exists). */
  isAgentStatePath(rel: string): boolean;
  /**
   * Capture every agent-state file into `sink` (file stores: sidecar/memory/files.ts
   * captureLocalFiles, a consistent copy of each agentStateFiles() entry).
   * @returns the captured files (a file that vanished meanwhile is left out)
   * @throws FileError naming an unreadable file; the abort error when `opts.signal` fires
   */
  capture(sink: CaptureSink, opts?: AgentStateOptions): Promise<CapturedFile[]>;
  /**
   * Make the store's agent state what `files` captured: write each file that differs, remove the
   * agent-state files the capture does not hold (never volatile paths). The caller has checked that
   * every object exists and holds the store's lock (lockAgentState).
   * @returns store-relative paths changed, in the order written
   */
  restore(files: readonly CapturedFile[], src: RestoreSource, opts?: AgentStateOptions): Promise<string[]>;
  /** Store-relative paths whose content now differs from `files` (changed, gone, or new since). */
  changedFiles(files: readonly CapturedFile[]): Promise<string[]>;

  // ---- optional capabilities (issue 4); absent = the store cannot do it, and the core says so ----

  /**
   * Whether a store-relative POSIX path is volatile: a file the store's own writers use for
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
   * Whether the history `provenance` reads (Hermes state.db, mem0 history.db) can be read: undefined
   * when it can or when there is none; else its absolute path and the problem that makes provenance
   * `unavailable` (the same FileError, with the fix). One read of the history, cached like provenance's
   * (agent.status asks it for every store).
   */
  historyProblem?(): Promise<{ file: string; problem: StoreProblem } | undefined>;
  /**
   * How many writes the agent staged for approval wait now (Hermes memory.write_approval:
   * `pending/memory/*.json`; list() shows each one in a MemoryFile with `pending`). Absent: the store
   * stages nothing. agent.status reports it per store.
   */
  pendingWrites?(): Promise<number>;
  /**
   * Check, before anything is written, that `restore(files)` can put every file in place without
   * deleting data the undo point does not hold (its capture is agentStateFiles()): e.g. a non-empty
   * directory where a captured file goes. Absent: nothing to check.
   * @throws FileError naming the path, what is in the way and the fix; nothing written
   */
  checkRestore?(files: readonly CapturedFile[]): Promise<void>;
  /**
   * Agent-state files that exist now but are broken so that capture() cannot hold them (Hermes: a
   * MEMORY.md that is a directory, a FIFO or socket, a dangling symlink, unreadable): store-relative
   * path, what is wrong, the fix. The core records them in the capture (AgentCapture.broken), says so
   * in the create's notices, and a restore leaves them alone. Absent: the store has no such files.
   */
  brokenAgentState?(): Promise<Array<{ path: string; message: string; hint?: string }>>;
  /**
   * The store's own config file, when it exists but cannot be used (Hermes: config.yaml that does not
   * parse as YAML, or is a directory, a FIFO, unreadable): its absolute path and the problem (the
   * YAML error with its line, the fix). The agent then runs on its defaults (Hermes
   * hermes_cli/config.py: "Falling back to default config"), so memory lint warns and agent.status
   * says it. undefined when there is none or it is fine.
   */
  configProblem?(): Promise<{ file: string; problem: StoreProblem } | undefined>;
  /**
   * Replace an entry's text. Under the store's own lock, temp file + rename; refuses (Conflict) when
   * the content hash is no longer `expectedHash`, (EntryNotFound) for an unknown id, (OverBudget)
   * over the char limit; on any refusal the store is byte-identical.
   */
  edit?(
    entryId: string,
    text: string,
    expectedHash?: string,
    opts?: WriteOptions,
  ): Promise<{ entry: MemoryEntry; previous: MemoryEntry; contentHash: string }>;
  /** Delete an entry, with the same safety as edit. */
  remove?(
    entryId: string,
    expectedHash?: string,
    opts?: WriteOptions,
  ): Promise<{ removed: MemoryEntry; contentHash: string; file?: string }>;
  /**
   * Add an entry (e.g. undo of remove); `file` is store-specific (hermes: memory | user).
   * `alreadyPresent`: the exact entry was there already and nothing was written.
   */
  add?(
    text: string,
    file?: string,
    expectedHash?: string,
    opts?: WriteOptions,
  ): Promise<{ entry: MemoryEntry; contentHash: string; alreadyPresent?: boolean }>;
  /**
   * Rewrite the entries of one memory file (`file`: MemoryFile.file) in one write, for the reviewed
   * edit sets (memory.forget, memory.lintFix): under the store's lock, read the file, refuse
   * (Conflict) when its sha256 is not `expectedHash`, let `change` compute the new entry texts from
   * all of the current ones (a throw there writes nothing), back up (opts.beforeWrite), then temp
   * file + rename: the file holds its bytes before or all of the change, never a part.
   * @returns the new content hash, whether anything was written, and the entry a text is in this store
   * @throws Conflict (changed, drifted), Unsupported (not a file it edits), OverBudget, TargetBusy, what `change` throws
   */
  rewriteEntries?(
    file: string,
    change: (entries: string[]) => string[],
    expectedHash: string,
    opts?: WriteOptions,
  ): Promise<{ contentHash: string; written: boolean; entry: (text: string) => MemoryEntry }>;
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
  /**
   * The agent's own memory writes in the store's session history, oldest first (Hermes: the memory
   * tool calls in state.db). Absent: the store keeps no such history.
   * @throws FileError when the history exists but cannot be read (damaged state.db)
   */
  agentWrites?(): Promise<AgentWrite[]>;
  /**
   * Entry texts of a memory file's raw text, as the store splits them (Hermes: on "\n§\n"), and
   * back: the text a file holding exactly `entries` has. Used to read the agent hooks' file
   * before/after records and to show an edit set as a diff. Absent: no text files.
   */
  splitEntries?(text: string): string[];
  joinEntries?(entries: string[]): string;
  /** The raw text of memory file `file` (MemoryFile.file) now; undefined when it does not exist. */
  fileText?(file: string): Promise<string | undefined>;
  /** The memory files as they were in a restore point's capture of this store (memory.diff). */
  listCapture?(src: CaptureSource): Promise<MemoryFile[]>;
  /**
   * Agent actions at or after `sinceIso` (and before `untilIso` when given) that reach the outside
   * world (messages sent, web requests, git pushes, ...), from the store's session history, oldest first.
   */
  actionsSince?(sinceIso: string, untilIso?: string): Promise<ProvenanceTrace[]>;
}

/**
 * A store kind: owns its store strings (forms, parsing, typed options), describes a store, creates
 * its adapter and finds its stores in a target's local root. Registered with one line in
 * sidecar/memory/index.ts (or from a plugin module: sidecar/plugins.ts). `O`: its parsed options.
 */
export interface StoreFactory<O = unknown> {
  /** The kind before the colon, lower case, e.g. "hermes". */
  readonly kind: string;
  /** The kind as people write it, e.g. "Hermes", "Agent Zero". */
  readonly kindName: string;
  /** The forms of its store strings for help texts, e.g. ["hermes:/abs/path/to/.hermes"]. */
  readonly forms: readonly string[];
  /** An example store string, e.g. "hermes:/home/me/.hermes". */
  readonly example: string;
  /**
   * Parse the part of a store string after `<kind>:` (no I/O).
   * @param rest e.g. `/home/me/.hermes` for `hermes:/home/me/.hermes`
   * @param spec the whole store string as given, for messages
   * @throws AgentKeepError BadStore naming the wrong part and the right form
   */
  parse(rest: string, spec: string): O;
  /** The adapter for a parsed store (no I/O; its check() says whether the store exists). */
  create(p: ParsedStore<O>): MemoryStoreAdapter;
  /**
   * Store strings of this kind found in a target's local root (a directory tree the sidecar can
   * read), each one whose check() passes; [] when none. Only sure markers count (a false positive
   * would capture and restore files that are not agent state).
   */
  detect?(localRoot: string): Promise<string[]>;
  /** Display name for views (default: the last two parts of localRoot, else the location). */
  displayName?(adapter: MemoryStoreAdapter): string;
}

/** A store string split and parsed by its factory. */
export interface ParsedStore<O = unknown> {
  kind: string;
  /** The store string as given. */
  spec: string;
  options: O;
}
