import type { MemoryEntry, MemoryFile, Provenance } from '../protocol';

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

  /** Whether a root-relative POSIX path is agent state of this store (whether or not it exists). */

  // ---- optional capabilities (issue 4); absent = the store cannot do it, and the core says so ----

  /** Why entries cannot be edited from AgentKeep (absent = editable through edit/remove/add). */
  readOnlyReason?(): Promise<string | undefined>;
  /** sha256 (hex) of the store's editable content as read now; passed back as expectedHash. */
  contentHash?(): Promise<string>;
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
  edit?(entryId: string, text: string, expectedHash?: string): Promise<{ entry: MemoryEntry; previous: MemoryEntry; contentHash: string }>;
  /** Delete an entry, with the same safety as edit. */
  remove?(entryId: string, expectedHash?: string): Promise<{ removed: MemoryEntry; contentHash: string; file?: string }>;
  /** Add an entry (e.g. undo of remove); `file` is store-specific (hermes: memory | user). */
  add?(text: string, file?: string, expectedHash?: string): Promise<{ entry: MemoryEntry; contentHash: string }>;
  /**
   * Write a consistent copy of agent-state file `rel` to `dest` (e.g. a SQLite database in WAL mode:
   * never a torn copy). Absent = a plain file copy is consistent.
   */
  captureFile?(rel: string, dest: string): Promise<void>;
}
