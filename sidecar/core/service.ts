import type { ChangedParams, ChangeSummary, ParamsOf, ProgressParams, ResultOf, RestorePoint } from '../protocol';

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
}

/**
 * The core services that the CLI and both servers call (sidecar/core). Every method validates its
 * input and throws AgentKeepError (sidecar/core/errors.ts) with a message that names the problem and
 * a hint that names the fix.
 */
export interface CoreApi {
  createRestorePoint(p: ParamsOf<'restorePointCreate'>): Promise<RestorePoint>;
  listRestorePoints(p: ParamsOf<'restorePointList'>): Promise<RestorePoint[]>;
  diffRestorePoint(p: ParamsOf<'restorePointDiff'>): Promise<ChangeSummary>;
  restoreRestorePoint(p: ParamsOf<'restorePointRestore'>): Promise<ResultOf<'restorePointRestore'>>;
  deleteRestorePoint(p: ParamsOf<'restorePointDelete'>): Promise<ResultOf<'restorePointDelete'>>;
  keepRestorePoint(p: ParamsOf<'restorePointKeep'>): Promise<RestorePoint>;
  listMemory(p: ParamsOf<'memoryList'>): Promise<ResultOf<'memoryList'>>;
  agentStatus(p: ParamsOf<'agentStatus'>): Promise<ResultOf<'agentStatus'>>;
}
