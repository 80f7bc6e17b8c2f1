/**
 * Dispatch of protocol methods to the core: the one place where a method becomes a core call, and
 * the one place where params are validated (with the method's zod schema; the core trusts their
 * shape). The servers (stdio LSP and WebSocket) call `dispatch` with the wire name; the CLI calls
 * `call` with the protocol key. Results are returned as the core produced them.
 */
import { ResponseError } from 'vscode-jsonrpc';
import type { z } from 'zod';
import { Methods, type ErrorData, type MethodName, type ParamsOf, type ResultOf } from '../protocol';
import { scanText } from '../risk';
import { AgentKeepError, asAgentKeepError } from './errors';
import { parseParams } from './params';
import type { CoreApi } from './service';

export { describeZodError, InvalidParamsError, parseParams } from './params';

type Handler = (core: CoreApi, params: never) => Promise<unknown>;

/** Which core call serves each protocol method (typed from the protocol's Methods: params in, result out). */
type Handlers = {
  [K in MethodName]: (core: CoreApi, p: z.infer<(typeof Methods)[K]['params']>) => Promise<ResultOf<K>>;
};
const HANDLERS: Handlers = {
  restorePointCreate: (c, p) => c.createRestorePoint(p),
  restorePointList: (c, p) => c.listRestorePoints(p),
  restorePointDiff: (c, p) => c.diffRestorePoint(p),
  restorePointCompare: (c, p) => c.compareRestorePoints(p),
  restorePointReadFile: (c, p) => c.readRestorePointFile(p),
  restorePointRestore: (c, p) => c.restoreRestorePoint(p),
  restorePointPreview: (c, p) => c.previewRestorePoint(p),
  restorePointDelete: (c, p) => c.deleteRestorePoint(p),
  restorePointPrune: (c, p) => c.pruneRestorePoints(p),
  restorePointUsage: (c, p) => c.usageRestorePoints(p),
  restorePointKeep: (c, p) => c.keepRestorePoint(p),
  restorePointLabel: (c, p) => c.labelRestorePoint(p),
  memoryList: (c, p) => c.listMemory(p),
  storeDescribe: (c, p) => c.describeStores(p),
  storeDetect: (c, p) => c.detectStoresIn(p),
  agentStatus: (c, p) => c.agentStatus(p),
  agentMemoryReach: (c, p) => c.agentMemoryReach(p),
  memoryShow: (c, p) => c.showMemory(p),
  memoryEdit: (c, p) => c.editMemory(p),
  memoryRemove: (c, p) => c.removeMemory(p),
  memoryAdd: (c, p) => c.addMemory(p),
  memoryLint: (c, p) => c.lintMemory(p),
  memoryDiff: (c, p) => c.diffMemory(p),
  agentDiscover: (c, p) => c.discoverAgents(p),
  targetDescribe: (c, p) => c.describeTarget(p),
  memoryRecordWrite: (c, p) => c.recordMemoryWrite(p),
  memoryHistory: (c, p) => c.memoryHistory(p),
  memoryUndoWrite: (c, p) => c.memoryUndoWrite(p),
  memoryRestoreEntry: (c, p) => c.memoryRestoreEntry(p),
  memoryForget: (c, p) => c.memoryForget(p),
  memoryLintFix: (c, p) => c.memoryLintFix(p),
  requestCreate: (c, p) => c.createRequest(p),
  requestList: (c, p) => c.listRequests(p),
  requestApprove: (c, p) => c.approveRequest(p),
  requestDeny: (c, p) => c.denyRequest(p),
  agentList: (c, p) => c.listAgents(p),
  agentAdd: (c, p) => c.addAgent(p),
  agentRemove: (c, p) => c.removeAgent(p),
  agentSetDefault: (c, p) => c.setDefaultAgent(p),
  agentSetSettings: (c, p) => c.setAgentSettings(p),
  riskScan: async (_c, p) => scanText(p.file, p.text),
};

/** Wire name (`agentkeep/restorePoint.create`) → protocol key (`restorePointCreate`). */
const BY_WIRE = new Map<string, MethodName>(Object.entries(Methods).map(([k, d]) => [d.method, k as MethodName]));

/** All wire method names, e.g. `agentkeep/restorePoint.list`. */
export function wireMethods(): string[] {
  return [...BY_WIRE.keys()];
}

/**
 * Call the core for one protocol method by its key (the CLI's path; `dispatch` is the servers').
 * @param key e.g. `restorePointCreate`
 * @param params the method's params (validated here, as over the wire)
 * @returns the method's result (shape: Methods[key].result)
 * @throws AgentKeepError InvalidParams (params failing the schema), or whatever the core throws
 */
export async function call<K extends MethodName>(core: CoreApi, key: K, params: ParamsOf<K>): Promise<ResultOf<K>> {
  const handler = HANDLERS[key] as Handler;
  return (await handler(core, parseParams(key, params) as never)) as ResultOf<K>;
}

/**
 * Call the core for one protocol method by its wire name.
 * @param core the core services
 * @param wireMethod e.g. `agentkeep/restorePoint.create`
 * @param params the JSON-RPC params (validated here)
 * @returns the method's result (shape: Methods[...].result)
 * @throws AgentKeepError InvalidParams (unknown method or params failing the schema; the message
 *   names the field path and the expected shape), or whatever the core throws.
 */
export async function dispatch(core: CoreApi, wireMethod: string, params: unknown): Promise<unknown> {
  const key = BY_WIRE.get(wireMethod);
  if (!key) {
    throw new AgentKeepError(
      'InvalidParams',
      `Unknown method ${wireMethod}.`,
      `Use one of: ${wireMethods().join(', ')}.`,
    );
  }
  return call(core, key, params as ParamsOf<typeof key>);
}

/** Turn any error into a JSON-RPC ResponseError: code = numeric protocol code, data = {code, hint, actions}. */
export function toResponseError(e: unknown): ResponseError<ErrorData> {
  const err = asAgentKeepError(e);
  const data: ErrorData = { code: err.code };
  if (err.hint) data.hint = err.hint;
  if (err.actions?.length) data.actions = err.actions;
  return new ResponseError<ErrorData>(err.rpcCode, err.message, data);
}
