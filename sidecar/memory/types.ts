import type { MemoryFile } from '../protocol';

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
}
