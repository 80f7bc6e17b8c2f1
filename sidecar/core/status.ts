/**
 * agent.status: whether a target is reachable, what it is (its backend's description), its restore
 * points, its stores, an interrupted restore, the sidecar version. Reports problems instead of
 * throwing them. Also target.describe (no I/O).
 */
import { backendFor } from '../machine';
import { openStore } from '../memory';
import type { ParamsOf, ResultOf, RestorePoint } from '../protocol';
import { VERSION, type CoreContext } from './context';
import { asAgentKeepError } from './errors';
import { recentHookWarnings } from './hookWarnings';
import { interruptedRestore } from './interrupted';
import { listRequests } from './requests';
import { describeParsedTarget, describeTarget, resolveTarget } from './target';

/** See Methods.targetDescribe: the target as its backend describes it (no I/O). @throws BadTarget */
export async function targetDescription(p: ParamsOf<'targetDescribe'>): Promise<ResultOf<'targetDescribe'>> {
  return describeTarget(p.target);
}

/**
 * Status of an agent: whether its target is reachable, its restore points, its stores, the
 * sidecar version. Never throws for an unreachable target or a broken store (reported instead).
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
  const rps = await ctx.journalOf(target).list().catch(() => [] as RestorePoint[]);
  const stores: ResultOf<'agentStatus'>['stores'] = [];
  for (const spec of p.stores ?? []) {
    try {
      await openStore(spec).check();
      stores.push({ store: spec, ok: true });
    } catch (e) {
      stores.push({ store: spec, ok: false, message: asAgentKeepError(e).oneLine() });
    }
  }
  const broken = await interruptedRestore(ctx.layout, target);
  const hookWarnings = await recentHookWarnings(ctx.stateDir, [...new Set([target.spec, p.target])]).catch(() => []);
  const pending = (await listRequests(ctx, { target: target.spec, status: 'pending' }).catch(() => [])).length;
  return {
    target: target.spec,
    backend: target.backend,
    description: describeParsedTarget(target),
    reachable,
    ...(message ? { message } : {}),
    restorePoints: rps.length,
    ...(rps[0] ? { latest: rps[0] } : {}),
    stores,
    ...(broken ? { interruptedRestore: broken } : {}),
    ...(hookWarnings.length ? { hookWarnings } : {}),
    ...(pending ? { pendingRequests: pending } : {}),
    version: VERSION,
  };
}
