/**
 * agent.status: whether a target is reachable, what it is (its backend's description), its restore
 * points, its stores (missing or broken), an interrupted restore, the sidecar version. Reports
 * problems instead of throwing them. Also target.describe (no I/O).
 */
import { backendFor } from '../machine';
import { brokenSummary, describeAdapter, openStore, storeProblems } from '../memory';
import type { ParamsOf, ResultOf, RestorePoint } from '../protocol';
import { interruptedActions } from './actions';
import { VERSION, type CoreContext } from './context';
import { asAgentKeepError } from './errors';
import { recentHookWarnings } from './hookWarnings';
import { interruptedRestore } from './interrupted';
import { listRequests } from './requests';
import { describeParsedTarget, describeTarget, resolveTarget } from './target';
import { pendingWriteBack } from './writeback';

/** See Methods.targetDescribe: the target as its backend describes it (no I/O). @throws BadTarget */
export async function targetDescription(p: ParamsOf<'targetDescribe'>): Promise<ResultOf<'targetDescribe'>> {
  return describeTarget(p.target);
}

/**
 * Status of an agent: whether its target is reachable, its restore points, its stores (each with
 * its StoreDescription: kind, display name, location, capabilities, and what in it is broken:
 * memory/broken.ts storeProblems, one memory.list read and one history read per store, no lint),
 * the journal entries that are damaged (`damagedRestorePoints`: list() leaves them out), an
 * interrupted restore, a pending write-back of agent state into a VM (writeback.ts), per store the writes
 * the agent staged for approval (`pendingWrites`, adapter.pendingWrites), the sidecar
 * version. Never throws for an unreachable target or a broken store (reported instead:
 * a broken store is `ok: false` with `broken` and a one-line `message`).
 * @throws BadTarget for a target string that does not parse.
 */
export async function agentStatus(ctx: CoreContext, p: ParamsOf<'agentStatus'>): Promise<ResultOf<'agentStatus'>> {
  const target = await resolveTarget(p.target);
  let reachable = true;
  let message: string | undefined;
  try {
    await backendFor({ target, layout: ctx.layout, objects: ctx.objects }).check();
  } catch (e) {
    reachable = false;
    message = asAgentKeepError(e).oneLine();
  }
  const rps = await ctx
    .journalOf(target)
    .list()
    .catch(() => [] as RestorePoint[]);
  const stores: ResultOf<'agentStatus'>['stores'] = [];
  for (const spec of p.stores ?? []) {
    let description: ResultOf<'agentStatus'>['stores'][number]['description'];
    try {
      const s = openStore(spec);
      description = describeAdapter(s);
      await s.check();
      const broken = await storeProblems(s);
      const staged = (await s.pendingWrites?.().catch(() => 0)) ?? 0;
      const cp = await s.configProblem?.().catch(() => undefined);
      const pendingWrites = {
        ...(staged ? { pendingWrites: staged } : {}),
        ...(cp ? { configProblem: { file: cp.file, ...cp.problem } } : {}),
      };
      if (broken)
        stores.push({ store: spec, ok: false, message: brokenSummary(broken), description, broken, ...pendingWrites });
      else stores.push({ store: spec, ok: true, description, ...pendingWrites });
    } catch (e) {
      const message = asAgentKeepError(e).oneLine();
      stores.push({ store: spec, ok: false, message, ...(description ? { description } : {}) });
    }
  }
  const damaged = await ctx
    .journalOf(target)
    .damaged()
    .catch(() => []);
  const broken = await interruptedRestore(ctx.layout, target);
  const hookWarnings = await recentHookWarnings(ctx.stateDir, [...new Set([target.spec, p.target])]).catch(() => []);
  const pending = (await listRequests(ctx, { target: target.spec, status: 'pending' }).catch(() => [])).length;
  const writeBack = await pendingWriteBack(ctx.layout, target);
  return {
    target: target.spec,
    backend: target.backend,
    description: describeParsedTarget(target),
    reachable,
    ...(message ? { message } : {}),
    restorePoints: rps.length,
    ...(rps[0] ? { latest: rps[0] } : {}),
    stores,
    ...(broken ? { interruptedRestore: { ...broken, actions: interruptedActions(target.spec, broken) } } : {}),
    ...(hookWarnings.length ? { hookWarnings } : {}),
    ...(pending ? { pendingRequests: pending } : {}),
    ...(writeBack ? { pendingWriteBack: writeBack } : {}),
    ...(damaged.length ? { damagedRestorePoints: damaged } : {}),
    version: VERSION,
  };
}
