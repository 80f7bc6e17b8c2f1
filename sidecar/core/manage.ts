/**
 * Journal upkeep of single restore points, each under the target lock: restorePoint.delete (then
 * garbage collection), .keep (status kept) and .label (label and important flag, also on the
 * backend's own label where it keeps one).
 */
import type { ParamsOf, ResultOf, RestorePoint } from '../protocol';
import type { CoreContext } from './context';
import { AgentKeepError } from './errors';
import { collectGarbage } from './gc';
import { isValidId } from './journal';
import { settlePending } from './writeback';

/**
 * Delete a restore point (journal entry, then the backend snapshot), then garbage-collect objects no
 * restore point references any more.
 * @returns freedBytes: bytes of objects removed (0 while another create/restore is running).
 * @throws RestorePointNotFound, TargetBusy
 */
export async function deleteRestorePoint(
  ctx: CoreContext,
  p: ParamsOf<'restorePointDelete'>,
): Promise<ResultOf<'restorePointDelete'>> {
  const t = await ctx.open(p.target, { mustExist: false, sweep: true });
  if (!isValidId(p.id)) await t.journal.get(p.id); // throws the clear error
  const res = await ctx.withTarget(t, { op: `delete ${p.id}` }, async () => {
    await ctx.adoptForeign(t, p.id);
    await t.journal.remove(p.id);
    await t.backend.delete(p.id);
    // a pending write-back of its capture (writeback.ts) is gone with it
    await settlePending(ctx.layout, t.target, p.id, 'all');
    const gc = await collectGarbage(ctx);
    return { deleted: p.id, freedBytes: gc.freedBytes };
  });
  ctx.changed(t.target.spec, 'restorePoints');
  return res;
}

/** Mark the change after a restore point as kept (status `kept`). @throws RestorePointNotFound, TargetBusy */
export async function keepRestorePoint(ctx: CoreContext, p: ParamsOf<'restorePointKeep'>): Promise<RestorePoint> {
  const t = await ctx.open(p.target, { mustExist: false });
  const rp = await ctx.withTarget(t, { op: `keep ${p.id}` }, async () => {
    const cur = await t.journal.get(p.id);
    const kept: RestorePoint = { ...cur, status: 'kept' };
    await t.journal.put(kept);
    return kept;
  });
  ctx.changed(t.target.spec, 'restorePoints');
  return rp;
}

/**
 * Rename a restore point and/or set its important flag (journal; the backend's own label too where
 * it keeps one: Proxmox snapshot description). Holds the target lock.
 * @throws RestorePointNotFound, InvalidParams (neither label nor important given), Hypervisor, TargetBusy
 */
export async function labelRestorePoint(ctx: CoreContext, p: ParamsOf<'restorePointLabel'>): Promise<RestorePoint> {
  if (p.label === undefined && p.important === undefined) {
    throw new AgentKeepError(
      'InvalidParams',
      'Nothing to change: give a new label, or important true/false.',
      'Give a label and/or important (true or false).',
    );
  }
  const t = await ctx.open(p.target, { mustExist: false });
  const rp = await ctx.withTarget(t, { op: `label ${p.id}` }, async () => {
    await ctx.adoptForeign(t, p.id);
    const cur = await t.journal.get(p.id);
    const labelChanged = p.label !== undefined && p.label !== cur.label;
    const importantChanged = p.important !== undefined && p.important !== Boolean(cur.important);
    if ((labelChanged || importantChanged) && t.backend.relabel && cur.machine.backend === t.backend.name) {
      await t.backend.relabel(p.id, {
        ...(labelChanged ? { label: p.label } : {}),
        ...(importantChanged ? { important: p.important } : {}),
      });
    }
    const next: RestorePoint = { ...cur, ...(p.label !== undefined ? { label: p.label } : {}) };
    if (p.important === true) next.important = true;
    if (p.important === false) delete next.important;
    await t.journal.put(next);
    return next;
  });
  ctx.changed(t.target.spec, 'restorePoints');
  return rp;
}
