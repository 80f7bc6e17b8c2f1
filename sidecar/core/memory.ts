/**
 * The memory methods of the core (memory.list/show/edit/remove/add/lint/diff): thin bindings of
 * sidecar/memory (adapters, and sidecar/memory/ops for the operations) to this core's state dir,
 * journal and object store, plus the `changed` notification after a write.
 */
import * as path from 'node:path';
import { describeAdapter, describeStore, detectStores } from '../memory';
import * as memoryOps from '../memory/ops';
import type { ParamsOf, ResultOf } from '../protocol';
import type { CoreContext } from './context';
import { AgentKeepError } from './errors';

/** What sidecar/memory/ops needs from the core: restore points and their captured objects. */
function opsContext(ctx: CoreContext): memoryOps.MemoryOpsContext {
  return {
    stateDir: ctx.stateDir,
    getRestorePoint: async (target, id) => (await ctx.open(target, { mustExist: false })).journal.get(id),
    listRestorePoints: async (target) => (await ctx.open(target, { mustExist: false })).journal.list(),
    readObject: (hash) => ctx.objects.read(hash),
  };
}

/**
 * Entries and usage of each store's memory files, and each store's description (kind, display
 * name, location, capabilities). @throws BadStore, StoreNotFound, FileError
 */
export async function listMemory(ctx: CoreContext, p: ParamsOf<'memoryList'>): Promise<ResultOf<'memoryList'>> {
  const out: ResultOf<'memoryList'>['stores'] = [];
  const descriptions: ResultOf<'memoryList'>['descriptions'] = [];
  for (const s of ctx.openStores(p.stores)) {
    // every file names its store (the front ends group files by it)
    out.push(...(await s.list()).map((f) => (f.store ? f : { ...f, store: s.spec })));
    descriptions.push(describeAdapter(s));
  }
  return { stores: out, descriptions };
}

/**
 * See Methods.storeDetect: the stores every registered kind finds in a local directory, described.
 * @throws InvalidParams for a relative path
 */
export async function detectStoresIn(p: ParamsOf<'storeDetect'>): Promise<ResultOf<'storeDetect'>> {
  if (!path.isAbsolute(p.root)) {
    throw new AgentKeepError(
      'InvalidParams',
      `store.detect needs an absolute directory, not "${p.root}".`,
      'Pass the absolute path of the folder to look in.',
    );
  }
  return (await detectStores(path.resolve(p.root))).map(describeAdapter);
}

/** See Methods.storeDescribe: each store string's description (no I/O). @throws BadStore */
export async function describeStores(p: ParamsOf<'storeDescribe'>): Promise<ResultOf<'storeDescribe'>> {
  return p.stores.map(describeStore);
}

/** See Methods.memoryShow; implemented in sidecar/memory/ops. */
export function showMemory(ctx: CoreContext, p: ParamsOf<'memoryShow'>): Promise<ResultOf<'memoryShow'>> {
  return memoryOps.showMemory(opsContext(ctx), p);
}

/** See Methods.memoryEdit; implemented in sidecar/memory/ops. */
export async function editMemory(ctx: CoreContext, p: ParamsOf<'memoryEdit'>): Promise<ResultOf<'memoryEdit'>> {
  const r = await memoryOps.editMemory(opsContext(ctx), p);
  ctx.changed('', 'memory');
  return r;
}

/** See Methods.memoryRemove; implemented in sidecar/memory/ops. */
export async function removeMemory(ctx: CoreContext, p: ParamsOf<'memoryRemove'>): Promise<ResultOf<'memoryRemove'>> {
  const r = await memoryOps.removeMemory(opsContext(ctx), p);
  ctx.changed('', 'memory');
  return r;
}

/** See Methods.memoryAdd; implemented in sidecar/memory/ops. */
export async function addMemory(ctx: CoreContext, p: ParamsOf<'memoryAdd'>): Promise<ResultOf<'memoryAdd'>> {
  const r = await memoryOps.addMemory(opsContext(ctx), p);
  ctx.changed('', 'memory');
  return r;
}

/** See Methods.memoryLint; implemented in sidecar/memory/ops. */
export function lintMemory(ctx: CoreContext, p: ParamsOf<'memoryLint'>): Promise<ResultOf<'memoryLint'>> {
  return memoryOps.lintMemory(opsContext(ctx), p);
}

/**
 * See Methods.memoryDiff: entries added/removed/changed between a restore point's agent-state
 * capture and now (or another restore point).
 * @throws RestorePointNotFound, BadStore, Unsupported
 */
export function diffMemory(ctx: CoreContext, p: ParamsOf<'memoryDiff'>): Promise<ResultOf<'memoryDiff'>> {
  return memoryOps.diffMemory(opsContext(ctx), p);
}

/** See Methods.memoryRecordWrite; implemented in sidecar/memory/ops (the store's write log). */
export async function recordMemoryWrite(
  ctx: CoreContext,
  p: ParamsOf<'memoryRecordWrite'>,
): Promise<ResultOf<'memoryRecordWrite'>> {
  const r = await memoryOps.recordWrite(opsContext(ctx), p);
  if (r.changed) ctx.changed('', 'memory');
  return r;
}

/** See Methods.memoryHistory; implemented in sidecar/memory/ops/timeline.ts. */
export function memoryHistory(ctx: CoreContext, p: ParamsOf<'memoryHistory'>): Promise<ResultOf<'memoryHistory'>> {
  return memoryOps.memoryHistory(opsContext(ctx), p);
}

/** See Methods.memoryUndoWrite; implemented in sidecar/memory/ops/timeline.ts. */
export async function memoryUndoWrite(
  ctx: CoreContext,
  p: ParamsOf<'memoryUndoWrite'>,
): Promise<ResultOf<'memoryUndoWrite'>> {
  const r = await memoryOps.undoWrite(opsContext(ctx), p);
  ctx.changed('', 'memory');
  return r;
}

/** See Methods.memoryRestoreEntry; implemented in sidecar/memory/ops/timeline.ts. */
export async function memoryRestoreEntry(
  ctx: CoreContext,
  p: ParamsOf<'memoryRestoreEntry'>,
): Promise<ResultOf<'memoryRestoreEntry'>> {
  const r = await memoryOps.restoreEntry(opsContext(ctx), p);
  if (!r.alreadyPresent) ctx.changed('', 'memory');
  return r;
}

/** See Methods.memoryForget; implemented in sidecar/memory/ops/editset.ts. */
export async function memoryForget(ctx: CoreContext, p: ParamsOf<'memoryForget'>): Promise<ResultOf<'memoryForget'>> {
  const r = await memoryOps.forgetMemory(opsContext(ctx), p);
  if (r.applied) ctx.changed('', 'memory');
  return r;
}

/** See Methods.memoryLintFix; implemented in sidecar/memory/ops/editset.ts. */
export async function memoryLintFix(
  ctx: CoreContext,
  p: ParamsOf<'memoryLintFix'>,
): Promise<ResultOf<'memoryLintFix'>> {
  const r = await memoryOps.lintFix(opsContext(ctx), p);
  if (r.applied) ctx.changed('', 'memory');
  return r;
}
