/**
 * Retention: restorePoint.prune, and the prune that runs after every create. The plan itself is
 * pure (sidecar/core/retention.ts planPrune); this module applies it to a target under its lock and
 * finds the pre/post pairs that do not differ.
 */
import type { ParamsOf, ResultOf, RestorePoint } from '../protocol';
import { definedOnly, type CoreContext, type TargetCtx } from './context';
import { compareCaptures } from './compare';
import { collectGarbage } from './gc';
import { DEFAULT_MIN_AGE_MS, planPrune, type PruneOptions } from './retention';
import { readStateConfig } from './stateConfig';
import { freeEstimate } from './usage';
import { PairCache } from './paircache';
import { pendingWriteBack } from './writeback';

/** How pruneTarget runs. */
export interface PruneRun {
  /** Only plan (and estimate); delete nothing. */
  dryRun: boolean;
  /** How long to wait for the target lock (ms). Default: CoreOptions.lockTimeoutMs. */
  lockTimeoutMs?: number;
  /**
   * Estimate what the deletion frees (estimatedFreeBytes). Default true; the prune after a create
   * skips it (for btrfs the estimate walks the deleted snapshots, which would make create O(n)).
   */
  estimate?: boolean;
}

/**
 * Apply retention (planPrune) to one opened target, holding its lock: delete the planned restore
 * points (journal entry first, then the backend snapshot), then garbage-collect once.
 * @throws TargetBusy, and the backend's delete errors
 */
export async function pruneTarget(
  ctx: CoreContext,
  t: TargetCtx,
  opts: Pick<PruneOptions, 'keep' | 'keepImportant' | 'minAgeMs'>,
  { dryRun, lockTimeoutMs = ctx.lockTimeoutMs, estimate = true }: PruneRun,
): Promise<ResultOf<'restorePointPrune'>> {
  const res = await ctx.withTarget(
    t,
    { op: dryRun ? 'prune (dry run)' : 'prune', timeoutMs: lockTimeoutMs },
    async () => {
      const points = await t.journal.list();
      const minAgeMs = opts.minAgeMs ?? DEFAULT_MIN_AGE_MS;
      const same = await identicalPairs(ctx, t, points, minAgeMs);
      const plan = planPrune(points, { keep: opts.keep, keepImportant: opts.keepImportant, minAgeMs }, same);
      // the pre-restore point whose capture waits to be written back into a VM (writeback.ts) stays
      const waiting = (await pendingWriteBack(ctx.layout, t.target))?.undo;
      const held = plan.delete.find((d) => d.id === waiting);
      if (held) {
        plan.delete = plan.delete.filter((d) => d !== held);
        plan.keep = [
          ...plan.keep,
          { id: held.id, reason: 'holds agent state still to be written back into the guest' },
        ];
      }
      if (!plan.delete.length) return { deleted: plan.delete, kept: plan.keep, freedBytes: 0, estimatedFreeBytes: 0 };
      const gone = new Set(plan.delete.map((d) => d.id));
      const estimatedFreeBytes = estimate
        ? await freeEstimate(
            t,
            points.filter((r) => gone.has(r.id)),
            points.filter((r) => !gone.has(r.id)),
          ).catch(() => undefined)
        : undefined;
      const est = estimatedFreeBytes === undefined ? {} : { estimatedFreeBytes };
      if (dryRun) return { deleted: plan.delete, kept: plan.keep, freedBytes: 0, ...est };
      for (const d of plan.delete) {
        await t.journal.remove(d.id);
        await t.backend.delete(d.id);
      }
      const gc = await collectGarbage(ctx);
      return { deleted: plan.delete, kept: plan.keep, freedBytes: gc.freedBytes, ...est };
    },
  );
  if (res.deleted.length && !dryRun) ctx.changed(t.target.spec, 'restorePoints');
  return res;
}

/**
 * The retention run after a create: `points` (the target's restore points, listed once after the
 * create) are planned first without the lock; only when the plan deletes something is the target
 * locked and pruned (pruneTarget, which plans again under the lock). So a create that deletes
 * nothing, the usual case, takes the lock once and lists the journal once.
 * @returns what pruneTarget returns, and the restore points left (`points` when nothing was deleted,
 *   else listed again), for the size-cap check
 * @throws what pruneTarget throws
 */
export async function pruneAfterCreate(
  ctx: CoreContext,
  t: TargetCtx,
  opts: Pick<PruneOptions, 'keep' | 'keepImportant' | 'minAgeMs'>,
  points: RestorePoint[],
  lockTimeoutMs: number,
): Promise<{ result: ResultOf<'restorePointPrune'>; points: RestorePoint[] }> {
  const minAgeMs = opts.minAgeMs ?? DEFAULT_MIN_AGE_MS;
  const same = await identicalPairs(ctx, t, points, minAgeMs);
  const plan = planPrune(points, { keep: opts.keep, keepImportant: opts.keepImportant, minAgeMs }, same);
  if (!plan.delete.length)
    return { result: { deleted: [], kept: plan.keep, freedBytes: 0, estimatedFreeBytes: 0 }, points };
  const result = await pruneTarget(ctx, t, opts, { dryRun: false, lockTimeoutMs, estimate: false });
  return { result, points: result.deleted.length ? await t.journal.list() : points };
}

/**
 * Ids of the post restore points (both sides older than `minAgeMs`, neither the newest) whose pre
 * does not differ from them, by the backend's compare of the two snapshots and the agent-state
 * captures. Results are cached per instance and in the journal dir (paircache.ts: the snapshots
 * never change, so a new CLI process does not compare every old pair again); a failing compare
 * counts as "differs" and is not cached on disk.
 */
async function identicalPairs(
  ctx: CoreContext,
  t: TargetCtx,
  points: RestorePoint[],
  minAgeMs = DEFAULT_MIN_AGE_MS,
): Promise<Set<string>> {
  const out = new Set<string>();
  const compare = t.backend.compare?.bind(t.backend);
  if (!compare) return out;
  const byId = new Map(points.map((r) => [r.id, r]));
  const old = (r: RestorePoint): boolean => Date.now() - Date.parse(r.createdAt) >= minAgeMs && r.id !== points[0]?.id;
  const disk = new PairCache(t.journal.dir);
  for (const post of points) {
    const pre = post.pairOf ? byId.get(post.pairOf) : undefined;
    if (!pre || !old(post) || !old(pre)) continue;
    if (pre.machine.backend !== t.backend.name || post.machine.backend !== t.backend.name) continue;
    const key = `${t.target.key}/${post.id}`;
    let same = ctx.pairSame.get(key) ?? (await disk.get(post.id));
    if (same === undefined) {
      try {
        const m = await compare(pre.id, post.id);
        const agent = compareCaptures(pre.agent, post.agent, (x, y) => x === y);
        const sameStores =
          pre.agent.length === post.agent.length && pre.agent.every((a) => post.agent.some((b) => b.store === a.store));
        same = sameStores && !m.added.length && !m.removed.length && !m.changed.length && !agent.length;
        await disk.set(post.id, same);
      } catch {
        same = false;
      }
    }
    ctx.pairSame.set(key, same);
    if (same) out.add(post.id);
  }
  await disk.save(new Set(points.map((r) => r.id)));
  return out;
}

/**
 * Apply retention to a target: keep the newest `keep` (default 20) and newest `keepImportant`
 * (default 10) important restore points, never delete one younger than an hour, the newest one, or
 * half of a pre/post pair; delete the rest (not with dryRun) and garbage-collect (also when nothing
 * is deleted: objects left by failed or killed operations are freed). Unset params come
 * from <stateDir>/config.json, else the defaults.
 * @returns deleted / kept, each `{id, reason}` newest first; freedBytes (0 for a dry run).
 * @throws BadTarget, BadStateDir, TargetBusy
 */
export async function pruneRestorePoints(
  ctx: CoreContext,
  p: ParamsOf<'restorePointPrune'>,
): Promise<ResultOf<'restorePointPrune'>> {
  const t = await ctx.open(p.target, { mustExist: false, sweep: !p.dryRun });
  const config = await readStateConfig(ctx.stateDir);
  const given = definedOnly({ keep: p.keep, keepImportant: p.keepImportant, minAgeMs: p.minAgeMs });
  const opts = { ...config.retention, ...given };
  const res = await pruneTarget(ctx, t, opts, { dryRun: p.dryRun ?? false });
  // Nothing to delete: still collect what failed or killed operations (or an older version) left.
  if (!p.dryRun && !res.deleted.length) res.freedBytes += (await collectGarbage(ctx)).freedBytes;
  return res;
}
