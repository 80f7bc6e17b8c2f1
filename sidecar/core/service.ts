import type { ChangedParams, ChangeSummary, ParamsOf, ProgressParams, ResultOf, RestorePoint } from '../protocol';
import type { RunEnd, RunExit, RunResult, RunSpec } from './run';

/** Options shared by every Core instance (CLI run, stdio server, WebSocket server). */
export interface CoreOptions {
  /**
   * Where the journal and object store live. Default: AGENTKEEP_STATE_DIR, else
   * $XDG_STATE_HOME/agentkeep, else ~/.local/state/agentkeep. Must not be inside a target.
   */
  stateDir?: string;
  /** How long create/restore wait for another operation's lock on the same target (ms). Default 30000. */
  lockTimeoutMs?: number;
  /** Progress of long operations (only for calls that pass a progressToken). */
  onProgress?: (p: ProgressParams) => void;
  /** Restore points or memory changed (after create/restore/delete/keep). */
  onChanged?: (c: ChangedParams) => void;
  /**
   * Stops a create or restore of this instance (the CLI aborts it on Ctrl+C / SIGTERM). A create
   * stops, removes its temp objects, writes no journal entry and releases the lock: the target is
   * untouched. A restore stopped before the target is touched changes nothing; stopped while writing,
   * it finishes no more files, removes its temp files in the target and throws an error whose next
   * actions restore the pre-restore point (Undo) or run the restore again (Finish the restore).
   * Either way the error message starts with "Interrupted: " (kind Internal).
   */
  signal?: AbortSignal;
  /**
   * Called by a restore once its pre-restore point exists, just before the target is changed
   * (the CLI prints the undo command from it when interrupted).
   */
  onRestoreWriting?: (undo: RestorePoint | undefined) => void;
  /**
   * This Core lives as long as a server (`serve` sets it): backends may keep state across calls,
   * e.g. the dir backend's change journal (inotify, sidecar/machine/dir/journal.ts), so a create
   * after a small change reads only what changed. Default false (a one-shot CLI run walks the
   * whole tree). AGENTKEEP_DIR_JOURNAL=0 turns the dir journal off anyway.
   */
  changeJournal?: boolean;
  /**
   * This Core makes one call and its process exits (the `agentkeep` CLI sets it for every command but
   * `serve`: sidecar/main.ts): a backend need keep nothing for later calls, e.g. the dir backend's
   * create streams its walk directory by directory and keeps no entry of the snapshot in memory
   * (dir/stream.ts; the peak memory of a create at 100,000 files). Default false.
   */
  oneShot?: boolean;
  /**
   * Target key -> id of the last snapshot made (the next create's stat cache, see create.ts), shared
   * by the Cores of one process that should continue each other's scans: a server that makes a Core
   * per call (with that call's own signal and lock timeout, e.g. a hook call handed to it) passes its
   * long-lived Core's map, so their creates and its own follow one another in the change journal.
   * Default: a map of this instance's own.
   */
  lastSnapshots?: Map<string, string>;
}

/** A restore's result when it took its undo point (every restore without noUndoPoint). */
export type RestoreWithUndo = ResultOf<'restorePointRestore'> & { undo: RestorePoint };

/**
 * The core services that the CLI and both servers call (sidecar/core). Params are validated once,
 * at the boundary, with the protocol's schemas (sidecar/core/dispatch.ts: `dispatch` for the
 * servers, `call` for the CLI); the methods check what a schema cannot (ids, paths, stores) and throw
 * AgentKeepError (sidecar/core/errors.ts) with a message that names the problem and a hint that
 * names the fix.
 */
export interface CoreApi {
  createRestorePoint(p: ParamsOf<'restorePointCreate'>): Promise<ResultOf<'restorePointCreate'>>;
  listRestorePoints(p: ParamsOf<'restorePointList'>): Promise<RestorePoint[]>;
  diffRestorePoint(p: ParamsOf<'restorePointDiff'>): Promise<ChangeSummary>;
  compareRestorePoints(p: ParamsOf<'restorePointCompare'>): Promise<ChangeSummary>;
  readRestorePointFile(p: ParamsOf<'restorePointReadFile'>): Promise<ResultOf<'restorePointReadFile'>>;
  /** Without noUndoPoint the result always has its `undo` (the pre-restore point). */
  restoreRestorePoint(p: ParamsOf<'restorePointRestore'> & { noUndoPoint?: false }): Promise<RestoreWithUndo>;
  restoreRestorePoint(p: ParamsOf<'restorePointRestore'>): Promise<ResultOf<'restorePointRestore'>>;
  /** What a restore would do, changing nothing; see Methods.restorePointPreview. */
  previewRestorePoint(p: ParamsOf<'restorePointPreview'>): Promise<ResultOf<'restorePointPreview'>>;
  deleteRestorePoint(p: ParamsOf<'restorePointDelete'>): Promise<ResultOf<'restorePointDelete'>>;
  /** Apply retention (sidecar/core/retention.ts) to a target; see Methods.restorePointPrune. */
  pruneRestorePoints(p: ParamsOf<'restorePointPrune'>): Promise<ResultOf<'restorePointPrune'>>;
  /** Disk use of a target's restore points against the size cap; see Methods.restorePointUsage. */
  usageRestorePoints(p: ParamsOf<'restorePointUsage'>): Promise<ResultOf<'restorePointUsage'>>;
  keepRestorePoint(p: ParamsOf<'restorePointKeep'>): Promise<RestorePoint>;
  /** See Methods.restorePointLabel. */
  labelRestorePoint(p: ParamsOf<'restorePointLabel'>): Promise<RestorePoint>;
  listMemory(p: ParamsOf<'memoryList'>): Promise<ResultOf<'memoryList'>>;
  /** What store strings name and can do (no I/O); see Methods.storeDescribe. */
  describeStores(p: ParamsOf<'storeDescribe'>): Promise<ResultOf<'storeDescribe'>>;
  /** Stores the registered kinds find in a local directory; see Methods.storeDetect. */
  detectStoresIn(p: ParamsOf<'storeDetect'>): Promise<ResultOf<'storeDetect'>>;
  agentStatus(p: ParamsOf<'agentStatus'>): Promise<ResultOf<'agentStatus'>>;
  /** Whether the agent's memory is reachable and how; see Methods.agentMemoryReach. */
  agentMemoryReach(p: ParamsOf<'agentMemoryReach'>): Promise<ResultOf<'agentMemoryReach'>>;
  /** See Methods.memoryShow. */
  showMemory(p: ParamsOf<'memoryShow'>): Promise<ResultOf<'memoryShow'>>;
  /** See Methods.memoryEdit. */
  editMemory(p: ParamsOf<'memoryEdit'>): Promise<ResultOf<'memoryEdit'>>;
  /** See Methods.memoryRemove. */
  removeMemory(p: ParamsOf<'memoryRemove'>): Promise<ResultOf<'memoryRemove'>>;
  /** See Methods.memoryAdd. */
  addMemory(p: ParamsOf<'memoryAdd'>): Promise<ResultOf<'memoryAdd'>>;
  /** See Methods.memoryLint. */
  lintMemory(p: ParamsOf<'memoryLint'>): Promise<ResultOf<'memoryLint'>>;
  /** See Methods.memoryDiff. */
  diffMemory(p: ParamsOf<'memoryDiff'>): Promise<ResultOf<'memoryDiff'>>;
  /** See Methods.memoryHistory (the memory timeline). */
  memoryHistory(p: ParamsOf<'memoryHistory'>): Promise<ResultOf<'memoryHistory'>>;
  /** See Methods.memoryUndoWrite. */
  memoryUndoWrite(p: ParamsOf<'memoryUndoWrite'>): Promise<ResultOf<'memoryUndoWrite'>>;
  /** See Methods.memoryRestoreEntry. */
  memoryRestoreEntry(p: ParamsOf<'memoryRestoreEntry'>): Promise<ResultOf<'memoryRestoreEntry'>>;
  /** See Methods.memoryForget. */
  memoryForget(p: ParamsOf<'memoryForget'>): Promise<ResultOf<'memoryForget'>>;
  /** See Methods.memoryLintFix. */
  memoryLintFix(p: ParamsOf<'memoryLintFix'>): Promise<ResultOf<'memoryLintFix'>>;
  /** See Methods.memoryRecordWrite (agent hooks around the agent's memory tool). */
  recordMemoryWrite(p: ParamsOf<'memoryRecordWrite'>): Promise<ResultOf<'memoryRecordWrite'>>;
  /** See Methods.requestCreate. */
  createRequest(p: ParamsOf<'requestCreate'>): Promise<ResultOf<'requestCreate'>>;
  /** See Methods.requestList. */
  listRequests(p: ParamsOf<'requestList'>): Promise<ResultOf<'requestList'>>;
  /** See Methods.requestApprove. */
  approveRequest(p: ParamsOf<'requestApprove'>): Promise<ResultOf<'requestApprove'>>;
  /** See Methods.requestDeny. */
  denyRequest(p: ParamsOf<'requestDeny'>): Promise<ResultOf<'requestDeny'>>;
  /** CLI only (no protocol method): read a file in a guest through the hypervisor (Proxmox guest agent). */
  guestFileRead(target: string, file: string): Promise<Buffer>;
  /**
   * CLI only (no protocol method): replace a file in a guest (at most capabilities.guestWriteMaxBytes),
   * after saving its old content under <stateDir>/guest-backups/ (`backup`: that file; absent for a new file).
   */
  guestFileWrite(target: string, file: string, content: string): Promise<{ bytes: number; backup?: string }>;
  /** See Methods.agentDiscover. */
  discoverAgents(p: ParamsOf<'agentDiscover'>): Promise<ResultOf<'agentDiscover'>>;
  /** CLI only (no protocol method): the pre restore point of a wrapped command (sidecar/core/run.ts). */
  beginRun(spec: RunSpec): Promise<ResultOf<'restorePointCreate'>>;
  /** CLI only: the post restore point of a wrapped command and what changed (never throws for the post). */
  endRun(spec: RunSpec, pre: RestorePoint, exit: RunExit): Promise<RunEnd>;
  /** Both halves around `exec` (the editor's Snapshot & run can use it). */
  runWrapped(spec: RunSpec, exec: (pre: RestorePoint) => Promise<RunExit>): Promise<RunResult>;
  /** See Methods.agentList: the named agents of the state dir's config.json. */
  listAgents(p: ParamsOf<'agentList'>): Promise<ResultOf<'agentList'>>;
  /** See Methods.agentAdd. */
  addAgent(p: ParamsOf<'agentAdd'>): Promise<ResultOf<'agentAdd'>>;
  /** See Methods.agentRemove. */
  removeAgent(p: ParamsOf<'agentRemove'>): Promise<ResultOf<'agentRemove'>>;
  /** See Methods.agentSetDefault. */
  setDefaultAgent(p: ParamsOf<'agentSetDefault'>): Promise<ResultOf<'agentSetDefault'>>;
  /** See Methods.agentSetSettings. */
  setAgentSettings(p: ParamsOf<'agentSetSettings'>): Promise<ResultOf<'agentSetSettings'>>;
  /** See Methods.targetDescribe: capabilities, local root and guest of a target (no I/O). */
  describeTarget(p: ParamsOf<'targetDescribe'>): Promise<ResultOf<'targetDescribe'>>;
}
