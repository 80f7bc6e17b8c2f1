/**
 * restorePoint.restore: put a restore point back with a scope (machine, agent, both), after a
 * pre-restore point that undoes it, under the target lock and the stores' own locks, with the
 * "restore in progress" marker (interrupted.ts) while the target is written.
 */
import {
  WRITE_BACK_TIMEOUT_MS,
  type ChangeSummary,
  type ParamsOf,
  type ResultOf,
  type RestorePoint,
  type Scope,
} from '../protocol';
import type { BackendProgress } from '../machine';
import type { MemoryStoreAdapter } from '../memory';
import { listAction, restoreAction } from './actions';
import {
  agentLeftAlone,
  agentStateFilter,
  checkAgentRestore,
  findCapture,
  lockStores,
  noCapture,
  restoreAgent,
} from './agentState';
import { STAGE_TEXT, type CoreContext, type TargetCtx } from './context';
import { createLocked } from './create';
import { noUndoPointUnconfirmed, undoPointSpaceError } from './diskfull';
import { detectTargetStores } from './detect';
import { AgentKeepError, asAgentKeepError } from './errors';
import { isAbortedError } from './fsutil';
import { describeParsedTarget } from './target';
import { clearRestoreMarker, writeRestoreMarker } from './interrupted';
import { checkKeepable, keepsAgentStateThroughRollback, settlePending, writeBackAgentState } from './writeback';

/**
 * The stores a restore of `rp` with `scope` works on (`given`, default the stores `rp` captured),
 * after the checks that refuse it before anything is touched (restorePoint.preview makes the same).
 * @throws BadStore (scope agent without any capture; a store `rp` did not capture, scopes agent and
 *   both), CorruptSnapshot (made by another backend)
 */
export function restoreStores(
  ctx: CoreContext,
  t: TargetCtx,
  rp: RestorePoint,
  scope: Scope,
  given: readonly string[] | undefined,
): MemoryStoreAdapter[] {
  const stores = ctx.openStores(given ?? rp.agent.map((a) => a.store));
  if (scope === 'agent' && !stores.length) {
    throw new AgentKeepError(
      'BadStore',
      `Restore point ${rp.id} has no agent-state capture, so scope agent has nothing to restore (nothing was changed).`,
      'To restore agent state, pick a restore point that captured a store.',
      [restoreAction('Restore the files (scope machine)', t.target.spec, rp.id, 'machine'), listAction(t.target.spec)],
    );
  }
  if (scope !== 'machine') for (const s of stores) if (!findCapture(rp, s)) throw noCapture(rp, s);
  if (rp.machine.backend !== t.backend.name) {
    const why = `Restore point ${rp.id} was made by backend "${rp.machine.backend}", not "${t.backend.name}".`;
    throw new AgentKeepError('CorruptSnapshot', why, 'Restore it with the target it was made for.');
  }
  return stores;
}

/** The error of a store on another machine that a restore of scope agent or both cannot read before it starts. */
function unreadableStore(s: MemoryStoreAdapter, rp: RestorePoint, scope: Scope, e: AgentKeepError): AgentKeepError {
  return new AgentKeepError(
    e.kind === 'Internal' ? 'StoreNotFound' : e.kind,
    `The restore of ${rp.id} (scope ${scope}) writes the agent state of ${s.spec}, which cannot be read now: ${e.message} Nothing was changed.`,
    e.hint ?? 'Make the store reachable (the machine running, the path right), then restore again.',
    e.actions,
  );
}

/**
 * The error of a restore that stopped before it wrote anything (MachineBackend.prepareRestore failed):
 * the cause, that nothing in the target was changed, and the undo point taken (if any) with its action.
 */
function notStarted(e: unknown, id: string, target: string, undo: RestorePoint | undefined): AgentKeepError {
  const err = asAgentKeepError(e);
  const saved = undo ? ` (the undo point ${undo.id} was taken and holds that state)` : '';
  return new AgentKeepError(
    err.kind,
    `The restore of ${id} did not start: ${err.message} Nothing in the target was changed${saved}.`,
    err.hint,
    [...(err.actions ?? []), ...(undo ? [restoreAction('Undo', target, undo.id, 'both')] : [])],
  );
}

/**
 * Restore a restore point with a scope, after capturing the current state as a `pre-restore`
 * restore point (returned as `undo`). Scopes: `both` = the whole tree, then the agent-state
 * captures of the stores (on a target without a local root, a VM, the rollback of its disk puts
 * back the stores in the guest, those reached over a remote file transport: they are not written;
 * stores elsewhere, local files or an API, are); `agent` = only the stores' agent-state files; `machine` = the tree except
 * the agent-state paths of the stores that live inside it; on a target without a local root (a VM,
 * whose rollback puts the stores back too) the stores' agent state is captured in the pre-restore
 * point before the rollback and written back once they are reachable again (writeback.ts; result
 * `writeBack`, pending for a re-apply when it cannot within `writeBackTimeoutMs`). A restore of a
 * pending write-back's pre-restore point with scope agent or both settles it. `stores` defaults to
 * the stores the restore point captured. `noUndoPoint` with `confirmed` skips the pre-restore point (no `undo` in
 * the result): the way out when the state dir is too full to hold it.
 * @throws RestorePointNotFound, CorruptSnapshot (nothing touched), TargetBusy, BadStore, DiskFull
 *   (the undo point does not fit: nothing touched; the actions offer prune or noUndoPoint),
 *   ConfirmationRequired (noUndoPoint without confirmed), InvalidParams (scope machine on a VM with
 *   noUndoPoint), the store's error kind (scope machine on a VM: a store cannot be read before the
 *   rollback; nothing touched), FileError (something in the way of an
 *   agent-state file that the undo point would not hold, e.g. a non-empty directory where MEMORY.md
 *   goes: nothing touched, no undo point), Internal (failed halfway; the message names the
 *   pre-restore id to go back to)
 */
export async function restoreRestorePoint(
  ctx: CoreContext,
  p: ParamsOf<'restorePointRestore'>,
): Promise<ResultOf<'restorePointRestore'>> {
  const t = await ctx.open(p.target, { mustExist: true, sweep: true });
  const progress = ctx.progress(p.progressToken);
  const result = await ctx.withTarget(t, { op: `restore ${p.id}`, writesObjects: true }, async () => {
    await ctx.adoptForeign(t, p.id);
    const rp = await t.journal.get(p.id);
    const scope: Scope = p.scope;
    const stores = restoreStores(ctx, t, rp, scope, p.stores);
    // Scope machine on a VM: the rollback takes the memory back too, so it is captured first and written back.
    const keep = keepsAgentStateThroughRollback(t.target, scope, stores);
    // Scope both on a VM: the rollback puts the guest's disk back, memory included, so the stores in the
    // guest (reached over a remote file transport: SSH, the guest agent) are not written. Stores elsewhere
    // (this machine's files, an API) are not on that disk: their capture is written as for any target.
    const onVm = !describeParsedTarget(t.target).localRoot;
    const inGuest = (s: MemoryStoreAdapter): boolean => onVm && s.lintProfile?.machine?.remote === true;
    const written = scope === 'both' ? stores.filter((s) => !inGuest(s)) : stores;
    if (keep) await checkKeepable(stores, rp, t.target.spec, p.noUndoPoint);
    // The snapshot's own data must be readable before an undo point is taken or anything written.
    if (scope !== 'agent') await t.backend.verify?.(rp.id);
    // Nothing in the way of the agent-state files that the undo point would not hold (nothing written yet).
    await checkAgentRestore(t.target, rp, stores, scope);
    // Capture what we are about to replace, so the restore can be undone.
    const capturable: MemoryStoreAdapter[] = [];
    for (const s of stores) {
      const problem = await s.check().then(
        () => undefined,
        (e: unknown) => asAgentKeepError(e),
      );
      if (!problem) capturable.push(s);
      // a store on another machine that cannot be read now (unreachable, a changed host key, wrong
      // path) and that this restore writes (scope agent, or both when it is not left to a VM rollback):
      // refused before the undo point, nothing changed (both would otherwise stop half-way)
      else if (scope !== 'machine' && !s.localRoot && written.includes(s)) throw unreadableStore(s, rp, scope, problem);
    }
    // the stores found in the target, detected once (the undo point and the scope's filter both use them)
    let detected: Promise<MemoryStoreAdapter[]> | undefined;
    const detect = (): Promise<MemoryStoreAdapter[]> => (detected ??= detectTargetStores(t.target));
    if (!capturable.length && !p.stores) capturable.push(...(await detect()));
    // (noUndoPoint, confirmed: a full state dir, the user chose to restore without a way back)
    const target = t.target.spec;
    if (p.noUndoPoint && !p.confirmed) throw noUndoPointUnconfirmed(rp.id, target, scope, p.stores);
    const didNotStart = `the restore of ${rp.id} did not start; nothing in the target was changed`;
    // The tree's paths a restore leaves alone: the agent state of the stores in it (scope machine).
    const skip =
      scope === 'agent'
        ? undefined
        : agentStateFilter(t.target, [...stores, ...(await detect())], { keepAgentState: scope === 'machine' });
    // A backend that restores in two steps reads and checks everything first (prepareRestore):
    // compared against the undo point while the undo point's fsyncs run, before anything is written.
    const prepare =
      scope !== 'agent' && t.backend.prepareRestore
        ? (currentId: string | undefined) => t.backend.prepareRestore!(rp.id, { currentId, skip, signal: ctx.signal })
        : undefined;
    const early: { plan?: ReturnType<NonNullable<typeof prepare>> } = {};
    const onBuilt = prepare
      ? (id: string): void => {
          // (next turn of the event loop: the create has started its fsyncs by then)
          early.plan = new Promise<void>((r) => setImmediate(r)).then(() => prepare(id));
          early.plan.catch(() => undefined); // (awaited below; a create that fails drops it)
        }
      : undefined;
    const undo = p.noUndoPoint
      ? undefined
      : await createLocked(
          ctx,
          t,
          { kind: 'pre-restore', restoredFrom: rp.id, stores: capturable, ...(onBuilt ? { onBuilt } : {}) },
          progress,
          didNotStart,
        ).catch(async (e: unknown) => {
          throw await undoPointSpaceError(e, { id: rp.id, scope, stores: p.stores, stateDir: ctx.stateDir, target });
        });
    // Nothing is written yet: an error here (a missing or damaged object, an unreadable file in the
    // tree) leaves the target as it was, and says so (no "finish the restore", no marker).
    const prepared = prepare
      ? await (early.plan ?? prepare(undo?.id)).catch((e: unknown) => {
          throw notStarted(e, rp.id, target, undo);
        })
      : undefined;
    try {
      ctx.opts.onRestoreWriting?.(undo);
    } catch {
      /* a failing listener must not break the restore */
    }
    // A marker while the target is being written: if this process dies (kill -9, power loss) the
    // next list/status says the target may be half-restored and names the undo. Removed on success.
    await writeRestoreMarker(ctx.layout, t.target, { id: rp.id, undo: undo?.id, scope, stores: p.stores });
    let changes: ChangeSummary = { added: [], removed: [], changed: [], agentChanged: [] };
    let machineState: string | undefined;
    let warnings: string[] | undefined;
    // Scopes agent/both write agent-state files: take the stores' own locks first (TargetBusy = nothing written).
    const unlock = scope === 'machine' ? async () => undefined : await lockStores(written);
    // The status change of the restored entry is written and fsynced while the target is written, and
    // renamed into place only once the restore succeeded (so its fsync is off the restore's path; a
    // restore that fails removes the temp file and leaves the entry as it was).
    const restored: RestorePoint = { ...rp, status: 'rolled-back' };
    let settle: (ok: boolean) => void = () => undefined;
    const done = new Promise<void>((res, rej) => {
      settle = (ok) => (ok ? res() : rej(new Error('the restore did not finish')));
    });
    done.catch(() => undefined); // (rejected before the put waits for it: not an unhandled rejection)
    // (a status change of an entry whose old version is as valid: the entry is synced, its rename is not,
    // as the files the restore wrote are not; a crash leaves the entry as it was or as it is now, both complete)
    const status = t.journal.put(restored, { syncDir: false, beforeRename: () => done });
    status.catch(() => undefined); // (awaited below, after the writes)
    let finished = false;
    try {
      if (scope !== 'agent') {
        const report: BackendProgress = (stage, done, total) =>
          progress.report(stage, STAGE_TEXT[stage] ?? stage, done, total);
        const m = prepared
          ? await prepared.apply({ signal: ctx.signal, progress: report })
          : await t.backend.restore(rp.id, {
              currentId: undo?.id,
              skip,
              start: p.start,
              signal: ctx.signal,
              progress: report,
            });
        changes = { added: m.added, removed: m.removed, changed: m.changed, agentChanged: [] };
        machineState = m.machineState;
        warnings = m.warnings?.length ? m.warnings : undefined;
      }
      if (scope !== 'machine' && written.length) {
        changes.agentChanged = await restoreAgent(ctx, rp, written);
        const alone = agentLeftAlone(rp, written);
        if (alone.length) changes.agentLeftAlone = alone;
      }
      finished = true;
    } catch (e) {
      const undoActions = undo ? [restoreAction('Undo', target, undo.id, 'both')] : [];
      const saved = undo
        ? `The state before the restore was saved as restore point ${undo.id}.`
        : 'It was restored without an undo point, so the state before it is gone.';
      const finish = restoreAction('Finish the restore', target, rp.id, scope, p.stores);
      if (isAbortedError(e)) {
        throw new AgentKeepError(
          'Internal',
          `Interrupted: the restore of ${rp.id} was stopped part-way, so ${t.target.path} is partly restored. ${saved}`,
          undefined,
          [...undoActions, finish],
        );
      }
      const err = asAgentKeepError(e);
      const kinds = [
        'CorruptSnapshot',
        'FileError',
        'Hypervisor',
        'GuestLocked',
        'AuthFailed',
        'RestorePointNotFound',
        'DiskFull',
      ] as const;
      throw new AgentKeepError(
        kinds.find((k) => k === err.kind) ?? 'Internal',
        `Restore of ${rp.id} stopped: ${err.message} ${saved}`,
        undo ? undefined : `${err.hint ?? 'Fix the cause'}, then finish the restore.`,
        undo ? undoActions : [finish],
      );
    } finally {
      if (!finished) {
        settle(false);
        await status.catch(() => undefined); // (its temp file is removed)
      }
      await unlock();
    }
    await clearRestoreMarker(ctx.layout, t.target);
    settle(true);
    await status;
    // (the dir backend stamps its record of the files it wrote: the next create trusts what is older)
    if (scope !== 'agent') t.backend.restoreSettled?.();
    if (scope !== 'machine') await settlePending(ctx.layout, t.target, rp.id, stores);
    let writeBack: ResultOf<'restorePointRestore'>['writeBack'];
    if (keep && undo) {
      const wb = await writeBackAgentState(ctx, t, rp, undo, stores, {
        timeoutMs: p.writeBackTimeoutMs ?? WRITE_BACK_TIMEOUT_MS,
        progress,
        machineState,
      });
      changes.agentChanged = wb.changed;
      writeBack = {
        status: wb.status,
        stores: stores.map((s) => s.spec),
        waitedMs: wb.waitedMs,
        ...(wb.pending ? { pending: wb.pending } : {}),
      };
      if (wb.pending) {
        const said = `The agent state captured before the rollback (in ${undo.id}) could not be written back yet: ${wb.pending.message}. It is kept: restore ${undo.id} with scope agent to write it back.`;
        warnings = [...(warnings ?? []), said];
      }
    }
    progress.report('done', `Restored ${rp.id} (${scope})`);
    return {
      restored,
      ...(undo ? { undo } : {}),
      changes,
      ...(machineState ? { machineState } : {}),
      ...(warnings ? { warnings } : {}),
      ...(writeBack ? { writeBack } : {}),
    };
  });
  ctx.changed(t.target.spec, 'restorePoints');
  if (p.scope !== 'machine' || result.writeBack) ctx.changed(t.target.spec, 'memory');
  return result;
}
