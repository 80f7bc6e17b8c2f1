/**
 * Dispatch of protocol methods to the core: the one place where a wire method name becomes a call.
 * Used by both servers (stdio LSP and WebSocket). Params are validated with the method's zod schema;
 * results are returned as the core produced them.
 */
import { ResponseError } from 'vscode-jsonrpc';
import type { z } from 'zod';
import { Methods, type ErrorData, type MethodName } from '../protocol';
import { scanText } from '../risk';
import { AgentKeepError, asAgentKeepError } from './errors';
import type { CoreApi } from './service';

type Handler = (core: CoreApi, params: never) => Promise<unknown>;

/** Which core call serves each protocol method. */
const HANDLERS: { [K in MethodName]: (core: CoreApi, p: z.infer<(typeof Methods)[K]['params']>) => Promise<unknown> } = {
  restorePointCreate: (c, p) => c.createRestorePoint(p),
  restorePointList: (c, p) => c.listRestorePoints(p),
  restorePointDiff: (c, p) => c.diffRestorePoint(p),
  restorePointCompare: (c, p) => c.compareRestorePoints(p),
  restorePointReadFile: (c, p) => c.readRestorePointFile(p),
  restorePointRestore: (c, p) => c.restoreRestorePoint(p),
  restorePointDelete: (c, p) => c.deleteRestorePoint(p),
  restorePointPrune: (c, p) => c.pruneRestorePoints(p),
  restorePointUsage: (c, p) => c.usageRestorePoints(p),
  restorePointKeep: (c, p) => c.keepRestorePoint(p),
  restorePointLabel: (c, p) => c.labelRestorePoint(p),
  memoryList: (c, p) => c.listMemory(p),
  agentStatus: (c, p) => c.agentStatus(p),
  memoryShow: (c, p) => c.showMemory(p),
  memoryEdit: (c, p) => c.editMemory(p),
  memoryRemove: (c, p) => c.removeMemory(p),
  memoryAdd: (c, p) => c.addMemory(p),
  memoryLint: (c, p) => c.lintMemory(p),
  memoryDiff: (c, p) => c.diffMemory(p),
  agentDiscover: (c, p) => c.discoverAgents(p),
  targetDescribe: (c, p) => c.describeTarget(p),
  riskScan: async (_c, p) => scanText(p.file, p.text),
};

/** Wire name (`agentkeep/restorePoint.create`) → protocol key (`restorePointCreate`). */
const BY_WIRE = new Map<string, MethodName>(Object.entries(Methods).map(([k, d]) => [d.method, k as MethodName]));

/** All wire method names, e.g. `agentkeep/restorePoint.list`. */
export function wireMethods(): string[] {
  return [...BY_WIRE.keys()];
}

/** Describe a zod error as one sentence naming the field path and the expected shape. */
export function describeZodError(err: z.ZodError, what = 'params'): string {
  const parts = err.issues.slice(0, 3).map((i) => {
    const at = i.path.length ? `${what}.${i.path.map(String).join('.')}` : what;
    return `${at}: ${i.message}`;
  });
  return parts.join('; ');
}

/**
 * Call the core for one protocol method.
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
    throw new AgentKeepError('InvalidParams', `Unknown method ${wireMethod}.`, `Use one of: ${wireMethods().join(', ')}.`);
  }
  const def = Methods[key];
  const parsed = def.params.safeParse(params ?? {});
  if (!parsed.success) {
    const shape = Object.keys((def.params as unknown as z.ZodObject).shape ?? {}).join(', ');
    throw new AgentKeepError(
      'InvalidParams',
      `Invalid params for ${wireMethod}: ${describeZodError(parsed.error)}.`,
      `Send an object with: ${shape} (see sidecar/protocol/protocol.schema.json).`,
    );
  }
  const handler = HANDLERS[key] as Handler;
  return handler(core, parsed.data as never);
}

/** Turn any error into a JSON-RPC ResponseError: code = numeric protocol code, data = {code, hint}. */
export function toResponseError(e: unknown): ResponseError<ErrorData> {
  const err = asAgentKeepError(e);
  const data: ErrorData = { code: err.code };
  if (err.hint) data.hint = err.hint;
  return new ResponseError<ErrorData>(err.rpcCode, err.message, data);
}
