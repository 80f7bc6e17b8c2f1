/**
 * Core: the restore-point services behind the CLI and both servers (CoreApi), as a thin facade over
 * one module per job (each takes the shared CoreContext of sidecar/core/context.ts):
 *   create.ts     restorePoint.create (snapshot + agent-state capture, retention, size cap)
 *   restore.ts    restorePoint.restore (scopes, pre-restore undo point, store locks)
 *   preview.ts    restorePoint.preview (what a restore of a scope would do; git repos: gitrepos.ts)
 *   inspect.ts    restorePoint.list / diff / compare / readFile
 *   manage.ts     restorePoint.delete / keep / label
 *   prune.ts      restorePoint.prune and the retention run after a create
 *   usage.ts      restorePoint.usage and the size-cap warning
 *   agentState.ts capture, restore and diff of the stores' agent-state files
 *   detect.ts     stores found in a target
 *   interrupted.ts the "restore in progress" marker
 *   gc.ts         garbage collection of the object store
 *   memory.ts     memory.* methods (sidecar/memory/ops)
 *   status.ts     agent.status, target.describe
 *   requests.ts   request.create / list / approve / deny (the agent's restore requests)
 *   hookWarnings.ts warnings of the agent hooks (agent.status hookWarnings)
 *   guest.ts      guest file I/O (Proxmox guest agent) and agent.discover, through the backends
 *   agents.ts     agent.list / add / remove / setDefault: the named agents in <stateDir>/config.json
 *   run.ts        a command between a pre and a post restore point (`agentkeep run`)
 * Params are validated once, at the boundary (sidecar/core/dispatch.ts: the servers, and the CLI
 * through `call`); these methods trust their params' shape. See sidecar/core/state.ts for the
 * state-dir layout.
 */
import type { MemoryStoreAdapter } from '../memory';
import type { ChangeSummary, ParamsOf, ResultOf, RestorePoint } from '../protocol';
import { addAgent, listAgents, removeAgent, setAgentSettings, setDefaultAgent } from './agents';
import { CoreContext } from './context';
import { beginRun, endRun, runWrapped, type RunEnd, type RunExit, type RunResult, type RunSpec } from './run';
import { createRestorePoint } from './create';
import { detectStores } from './detect';
import { collectGarbage } from './gc';
import { discoverAgents, guestFileRead, guestFileWrite } from './guest';
import { compareRestorePoints, diffRestorePoint, listRestorePoints, readRestorePointFile } from './inspect';
import { deleteRestorePoint, keepRestorePoint, labelRestorePoint } from './manage';
import * as memory from './memory';
import type { ObjectStore } from './objects';
import { previewRestore } from './preview';
import { pruneRestorePoints } from './prune';
import { approveRequest, createRequest, denyRequest, listRequests } from './requests';
import { restoreRestorePoint } from './restore';
import type { StateLayout } from './state';
import { agentStatus, targetDescription } from './status';
import { agentMemoryReach } from './memoryReach';
import { usageRestorePoints } from './usage';
import type { CoreApi, CoreOptions, RestoreWithUndo } from './service';

export { DEFAULT_LOCK_TIMEOUT_MS, VERSION } from './context';

/** The core services. One instance per process is enough; instances share nothing but the state dir. */
export class Core implements CoreApi {
  private readonly ctx: CoreContext;

  /** @throws AgentKeepError BadStateDir for a relative state dir. */
  constructor(opts: CoreOptions = {}) {
    this.ctx = new CoreContext(opts);
  }

  /** Absolute state dir in use. */
  get stateDir(): string {
    return this.ctx.stateDir;
  }
  get layout(): StateLayout {
    return this.ctx.layout;
  }
  get objects(): ObjectStore {
    return this.ctx.objects;
  }

  /** See gc.ts collectGarbage. */
  collectGarbage(): Promise<{ freedBytes: number; removed: number }> {
    return collectGarbage(this.ctx);
  }
  /** See detect.ts detectStores. */
  detectStores(targetPath: string): Promise<MemoryStoreAdapter[]> {
    return detectStores(targetPath);
  }

  /** See create.ts createRestorePoint. */
  createRestorePoint(p: ParamsOf<'restorePointCreate'>): Promise<ResultOf<'restorePointCreate'>> {
    return createRestorePoint(this.ctx, p);
  }
  /** See restore.ts restoreRestorePoint (without noUndoPoint the result always has its `undo`). */
  restoreRestorePoint(p: ParamsOf<'restorePointRestore'> & { noUndoPoint?: false }): Promise<RestoreWithUndo>;
  restoreRestorePoint(p: ParamsOf<'restorePointRestore'>): Promise<ResultOf<'restorePointRestore'>>;
  restoreRestorePoint(p: ParamsOf<'restorePointRestore'>): Promise<ResultOf<'restorePointRestore'>> {
    return restoreRestorePoint(this.ctx, p);
  }
  /** See preview.ts previewRestore. */
  previewRestorePoint(p: ParamsOf<'restorePointPreview'>): Promise<ResultOf<'restorePointPreview'>> {
    return previewRestore(this.ctx, p);
  }
  /** See inspect.ts listRestorePoints. */
  listRestorePoints(p: ParamsOf<'restorePointList'>): Promise<RestorePoint[]> {
    return listRestorePoints(this.ctx, p);
  }
  /** See inspect.ts diffRestorePoint. */
  diffRestorePoint(p: ParamsOf<'restorePointDiff'>): Promise<ChangeSummary> {
    return diffRestorePoint(this.ctx, p);
  }
  /** See inspect.ts compareRestorePoints. */
  compareRestorePoints(p: ParamsOf<'restorePointCompare'>): Promise<ChangeSummary> {
    return compareRestorePoints(this.ctx, p);
  }
  /** See inspect.ts readRestorePointFile. */
  readRestorePointFile(p: ParamsOf<'restorePointReadFile'>): Promise<ResultOf<'restorePointReadFile'>> {
    return readRestorePointFile(this.ctx, p);
  }
  /** See manage.ts deleteRestorePoint. */
  deleteRestorePoint(p: ParamsOf<'restorePointDelete'>): Promise<ResultOf<'restorePointDelete'>> {
    return deleteRestorePoint(this.ctx, p);
  }
  /** See manage.ts keepRestorePoint. */
  keepRestorePoint(p: ParamsOf<'restorePointKeep'>): Promise<RestorePoint> {
    return keepRestorePoint(this.ctx, p);
  }
  /** See manage.ts labelRestorePoint. */
  labelRestorePoint(p: ParamsOf<'restorePointLabel'>): Promise<RestorePoint> {
    return labelRestorePoint(this.ctx, p);
  }
  /** See prune.ts pruneRestorePoints. */
  pruneRestorePoints(p: ParamsOf<'restorePointPrune'>): Promise<ResultOf<'restorePointPrune'>> {
    return pruneRestorePoints(this.ctx, p);
  }
  /** See usage.ts usageRestorePoints. */
  usageRestorePoints(p: ParamsOf<'restorePointUsage'>): Promise<ResultOf<'restorePointUsage'>> {
    return usageRestorePoints(this.ctx, p);
  }
  /** See status.ts agentStatus. */
  agentStatus(p: ParamsOf<'agentStatus'>): Promise<ResultOf<'agentStatus'>> {
    return agentStatus(this.ctx, p);
  }
  /** See memoryReach.ts agentMemoryReach. */
  agentMemoryReach(p: ParamsOf<'agentMemoryReach'>): Promise<ResultOf<'agentMemoryReach'>> {
    return agentMemoryReach(this.ctx, p);
  }

  /** See memory.ts listMemory. */
  listMemory(p: ParamsOf<'memoryList'>): Promise<ResultOf<'memoryList'>> {
    return memory.listMemory(this.ctx, p);
  }
  /** See memory.ts describeStores. */
  describeStores(p: ParamsOf<'storeDescribe'>): Promise<ResultOf<'storeDescribe'>> {
    return memory.describeStores(p);
  }
  /** See memory.ts detectStoresIn. */
  detectStoresIn(p: ParamsOf<'storeDetect'>): Promise<ResultOf<'storeDetect'>> {
    return memory.detectStoresIn(p);
  }
  /** See memory.ts showMemory. */
  showMemory(p: ParamsOf<'memoryShow'>): Promise<ResultOf<'memoryShow'>> {
    return memory.showMemory(this.ctx, p);
  }
  /** See memory.ts editMemory. */
  editMemory(p: ParamsOf<'memoryEdit'>): Promise<ResultOf<'memoryEdit'>> {
    return memory.editMemory(this.ctx, p);
  }
  /** See memory.ts removeMemory. */
  removeMemory(p: ParamsOf<'memoryRemove'>): Promise<ResultOf<'memoryRemove'>> {
    return memory.removeMemory(this.ctx, p);
  }
  /** See memory.ts addMemory. */
  addMemory(p: ParamsOf<'memoryAdd'>): Promise<ResultOf<'memoryAdd'>> {
    return memory.addMemory(this.ctx, p);
  }
  /** See memory.ts lintMemory. */
  lintMemory(p: ParamsOf<'memoryLint'>): Promise<ResultOf<'memoryLint'>> {
    return memory.lintMemory(this.ctx, p);
  }
  /** See memory.ts diffMemory. */
  diffMemory(p: ParamsOf<'memoryDiff'>): Promise<ResultOf<'memoryDiff'>> {
    return memory.diffMemory(this.ctx, p);
  }

  /** See memory.ts memoryHistory. */
  memoryHistory(p: ParamsOf<'memoryHistory'>): Promise<ResultOf<'memoryHistory'>> {
    return memory.memoryHistory(this.ctx, p);
  }
  /** See memory.ts memoryUndoWrite. */
  memoryUndoWrite(p: ParamsOf<'memoryUndoWrite'>): Promise<ResultOf<'memoryUndoWrite'>> {
    return memory.memoryUndoWrite(this.ctx, p);
  }
  /** See memory.ts memoryRestoreEntry. */
  memoryRestoreEntry(p: ParamsOf<'memoryRestoreEntry'>): Promise<ResultOf<'memoryRestoreEntry'>> {
    return memory.memoryRestoreEntry(this.ctx, p);
  }
  /** See memory.ts memoryForget. */
  memoryForget(p: ParamsOf<'memoryForget'>): Promise<ResultOf<'memoryForget'>> {
    return memory.memoryForget(this.ctx, p);
  }
  /** See memory.ts memoryLintFix. */
  memoryLintFix(p: ParamsOf<'memoryLintFix'>): Promise<ResultOf<'memoryLintFix'>> {
    return memory.memoryLintFix(this.ctx, p);
  }
  /** See memory.ts recordMemoryWrite. */
  recordMemoryWrite(p: ParamsOf<'memoryRecordWrite'>): Promise<ResultOf<'memoryRecordWrite'>> {
    return memory.recordMemoryWrite(this.ctx, p);
  }
  /** See requests.ts createRequest. */
  createRequest(p: ParamsOf<'requestCreate'>): Promise<ResultOf<'requestCreate'>> {
    return createRequest(this.ctx, p);
  }
  /** See requests.ts listRequests. */
  listRequests(p: ParamsOf<'requestList'>): Promise<ResultOf<'requestList'>> {
    return listRequests(this.ctx, p);
  }
  /** See requests.ts approveRequest. */
  approveRequest(p: ParamsOf<'requestApprove'>): Promise<ResultOf<'requestApprove'>> {
    return approveRequest(this.ctx, p);
  }
  /** See requests.ts denyRequest. */
  denyRequest(p: ParamsOf<'requestDeny'>): Promise<ResultOf<'requestDeny'>> {
    return denyRequest(this.ctx, p);
  }

  /** See guest.ts guestFileRead (the CLI's guest read). */
  guestFileRead(target: string, file: string): Promise<Buffer> {
    return guestFileRead(this.ctx, target, file);
  }
  /** See guest.ts guestFileWrite (the CLI's guest write): keeps a backup of the old content first. */
  guestFileWrite(target: string, file: string, content: string): Promise<{ bytes: number; backup?: string }> {
    return guestFileWrite(this.ctx, target, file, content);
  }
  /** See guest.ts discoverAgents. */
  discoverAgents(p: ParamsOf<'agentDiscover'>): Promise<ResultOf<'agentDiscover'>> {
    return discoverAgents(p);
  }
  /** See run.ts beginRun (CLI `agentkeep run`; no protocol method). */
  beginRun(spec: RunSpec): Promise<ResultOf<'restorePointCreate'>> {
    return beginRun(this.ctx, spec);
  }
  /** See run.ts endRun. */
  endRun(spec: RunSpec, pre: RestorePoint, exit: RunExit): Promise<RunEnd> {
    return endRun(this.ctx, spec, pre, exit);
  }
  /** See run.ts runWrapped. */
  runWrapped(spec: RunSpec, exec: (pre: RestorePoint) => Promise<RunExit>): Promise<RunResult> {
    return runWrapped(this.ctx, spec, exec);
  }
  /** See agents.ts listAgents. */
  listAgents(p: ParamsOf<'agentList'>): Promise<ResultOf<'agentList'>> {
    return listAgents(this.ctx, p);
  }
  /** See agents.ts addAgent. */
  addAgent(p: ParamsOf<'agentAdd'>): Promise<ResultOf<'agentAdd'>> {
    return addAgent(this.ctx, p);
  }
  /** See agents.ts removeAgent. */
  removeAgent(p: ParamsOf<'agentRemove'>): Promise<ResultOf<'agentRemove'>> {
    return removeAgent(this.ctx, p);
  }
  /** See agents.ts setAgentSettings. */
  setAgentSettings(p: ParamsOf<'agentSetSettings'>): Promise<ResultOf<'agentSetSettings'>> {
    return setAgentSettings(this.ctx, p);
  }
  /** See agents.ts setDefaultAgent. */
  setDefaultAgent(p: ParamsOf<'agentSetDefault'>): Promise<ResultOf<'agentSetDefault'>> {
    return setDefaultAgent(this.ctx, p);
  }
  /** See status.ts targetDescription. */
  describeTarget(p: ParamsOf<'targetDescribe'>): Promise<ResultOf<'targetDescribe'>> {
    return targetDescription(p);
  }
}
