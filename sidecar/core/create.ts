/**
 * Creating restore points: restorePoint.create (machine snapshot of the target + agent-state capture
 * of its stores, then retention and the size-cap check), and createLocked, which restore also uses
 * for its pre-restore point.
 */
import type { MachineBackend } from '../machine';
import type { MemoryStoreAdapter } from '../memory';
import { REUSE_WINDOW_MS, type Notice, type ParamsOf, type ResultOf, type RestorePoint } from '../protocol';
import { interruptedActions } from './actions';
import { agentDiff, agentStateFilter, captureStores, findCapture } from './agentState';
import { definedOnly, STAGE_TEXT, type AgentCapture, type CoreContext, type Progress, type TargetCtx } from './context';
import { detectTargetStores } from './detect';
import { createSpaceError } from './diskfull';
import { asAgentKeepError } from './errors';
import { abortedError, isAbortedError, throwIfAborted } from './fsutil';
import { interruptedRestore } from './interrupted';
import { newRestorePointId } from './journal';
import { pruneAfterCreate } from './prune';
import { DEFAULT_SIZE_CAP_BYTES, readStateConfig } from './stateConfig';
import { capWarning } from './usage';

/** What createLocked records in the new restore point. */
export interface CreateSpec {
  label?: string;
  kind?: RestorePoint['kind'];
  reason?: RestorePoint['reason'];
  /** Stores whose agent state is captured. */
  stores: MemoryStoreAdapter[];
  pairOf?: string;
  /** For a pre-restore point: the id being restored. */
  restoredFrom?: string;
  important?: boolean;
  vmstate?: boolean;
  /**
   * Called with the new id once the backend knows the snapshot's content, before it is durable
   * (MachineBackend.create `built`): a restore compares against its undo point meanwhile.
   */
  onBuilt?: (id: string) => void;
}

/**
 * Create a restore point; the caller holds the target lock (withTarget with writesObjects). On any
 * failure the backend snapshot is deleted again and no journal entry is written. The journal entry's
 * name is durable (its directory fsynced) when this resolves, unless `opts.entrySynced` is given.
 * @param abortWhat what an abort (CoreOptions.signal) error says happened
 * @param opts.entrySynced when given, the fsync of the journal directory after the entry's rename is
 *   handed to it (a promise that never rejects) instead of awaited: the caller awaits it before it
 *   returns the restore point (createRestorePoint, while retention and the size-cap check run). Not
 *   for a restore's undo point: that must be durable before the tree is touched.
 */
export async function createLocked(
  ctx: CoreContext,
  t: TargetCtx,
  p: CreateSpec,
  progress: Progress,
  abortWhat = 'the restore point was not created; nothing in the target was changed',
  opts: { entrySynced?: (p: Promise<void>) => void } = {},
): Promise<RestorePoint> {
  const signal = ctx.signal;
  throwIfAborted(signal, abortWhat);
  const started = Date.now();
  let id = newRestorePointId();
  while (await t.journal.has(id)) id = newRestorePointId();
  // Parent (stat cache): the last snapshot this process made of the target, else the newest in the journal.
  const last = ctx.lastSnapshot.get(t.target.key);
  const parentId =
    last && (await t.journal.has(last))
      ? last
      : (await t.journal.list()).find((r) => r.machine.backend === t.backend.name && r.status !== 'failed')?.id;
  progress.report('scan', STAGE_TEXT.scan, 0);
  const kind = p.kind ?? 'manual';
  const startedAt = new Date(started).toISOString();
  const label =
    p.label ??
    (kind === 'pre-restore'
      ? `Before restoring ${p.restoredFrom}`
      : `Restore point ${startedAt.slice(0, 19).replace('T', ' ')} UTC`);
  let info: Awaited<ReturnType<MachineBackend['create']>>;
  try {
    info = await t.backend.create(id, {
      parentId,
      signal,
      vmstate: p.vmstate,
      ...(p.onBuilt ? { built: () => p.onBuilt?.(id) } : {}),
      meta: {
        label,
        kind,
        createdAt: startedAt,
        ...(p.reason ? { reason: p.reason } : {}),
        ...(p.important ? { important: true } : {}),
        ...(p.pairOf ? { pairOf: p.pairOf } : {}),
      },
      progress: (stage, done, total) => progress.report(stage, STAGE_TEXT[stage] ?? stage, done, total),
    });
  } catch (e) {
    if (!isAbortedError(e)) throw e;
    // Interrupted (CLI signal): drop temp objects of this instance (a server never aborts, so
    // concurrent creates of other targets on this instance are not affected).
    await ctx.objects.removeOwnTemps();
    throw abortedError(abortWhat);
  }
  let agent: AgentCapture[];
  try {
    agent = await captureStores(ctx, p.stores, progress, abortWhat);
    throwIfAborted(signal, abortWhat);
  } catch (e) {
    await t.backend.delete(id).catch(() => undefined);
    if (isAbortedError(e)) await ctx.objects.removeOwnTemps();
    throw e;
  }
  const createdAt = new Date().toISOString();
  const rp: RestorePoint = {
    id,
    target: t.target.spec,
    label,
    createdAt,
    status: 'ready',
    kind,
    ...(p.reason ? { reason: p.reason } : {}),
    machine: {
      backend: t.backend.name,
      files: info.files,
      bytes: info.bytes,
      newBytes: info.newBytes + 0,
      durationMs: Date.now() - started,
      ...(info.skipped ? { skipped: info.skipped } : {}),
      ...(info.snapname ? { snapname: info.snapname } : {}),
      ...(info.vmstate ? { vmstate: true } : {}),
      ...(info.parent ? { parent: info.parent } : {}),
      ...(info.warnings?.length ? { warnings: info.warnings } : {}),
    },
    agent,
    ...(p.pairOf ? { pairOf: p.pairOf } : {}),
    ...(p.important ? { important: true } : {}),
    ...(p.restoredFrom ? { restoredFrom: p.restoredFrom } : {}),
  };
  try {
    // (written and synced while the snapshot's last fsync runs; renamed into place after it)
    const durable = info.durable;
    await t.journal.put(rp, {
      ...(durable ? { beforeRename: () => durable } : {}),
      ...(opts.entrySynced ? { dirSynced: opts.entrySynced } : {}),
    });
  } catch (e) {
    await info.durable;
    await t.backend.delete(id).catch(() => undefined);
    throw e;
  }
  ctx.lastSnapshot.set(t.target.key, id);
  progress.report('done', `Restore point ${id} created`, info.files, info.files);
  return rp;
}

/**
 * The restore point a create with `reuse` returns instead of a new one: the newest usable restore
 * point of the target when it is younger than `reuseWithinMs` (default REUSE_WINDOW_MS, 60 s),
 * captured every store of this create, holds RAM state if asked for, and nothing differs from it
 * (the backend's diff and the stores' agent state; backends that cannot diff never reuse).
 * The caller holds the target lock.
 */
async function reusableRestorePoint(
  ctx: CoreContext,
  t: TargetCtx,
  stores: MemoryStoreAdapter[],
  p: ParamsOf<'restorePointCreate'>,
): Promise<RestorePoint | undefined> {
  if (!t.backend.diff) return undefined;
  const newest = (await t.journal.list()).find((r) => r.status !== 'failed');
  if (!newest || newest.machine.backend !== t.backend.name) return undefined;
  const age = Date.now() - Date.parse(newest.createdAt);
  if (!(age >= 0 && age < (p.reuseWithinMs ?? REUSE_WINDOW_MS))) return undefined;
  if (!stores.every((s) => findCapture(newest, s))) return undefined;
  if (p.vmstate && !newest.machine.vmstate) return undefined;
  const inTarget = [...stores, ...(await detectTargetStores(t.target))];
  const skip = agentStateFilter(t.target, inTarget, { keepAgentState: false });
  const m = await t.backend.diff(newest.id, { cacheIds: [], ...(skip ? { skip } : {}) });
  if (m.added.length || m.removed.length || m.changed.length) return undefined;
  return (await agentDiff(newest, stores)).length ? undefined : newest;
}

/**
 * A reused restore point asked for as important becomes important (never the other way round):
 * `--reuse --important` must not drop the flag. Its label and kind stay those it was taken with.
 * The caller holds the target lock.
 */
async function markImportant(t: TargetCtx, rp: RestorePoint): Promise<RestorePoint> {
  if (t.backend.relabel && rp.machine.backend === t.backend.name) await t.backend.relabel(rp.id, { important: true });
  const next: RestorePoint = { ...rp, important: true };
  await t.journal.put(next);
  return next;
}

/**
 * Create a restore point: machine snapshot of the target + capture of each store's agent-state
 * files. Without `stores` (absent, not `[]`) the stores found in the target are captured
 * (detectTargetStores: every registered store kind's detect in its local root), so a later restore
 * with scope machine spares their memory. Waits up to lockTimeoutMs for another create/restore of
 * the same target. CoreOptions.signal stops it.
 * Afterwards retention is applied (`retention` params, else `<stateDir>/config.json`, else the
 * defaults; see pruneRestorePoints); a failing prune does not fail the create. Then the size cap
 * is checked where the backend can tell its disk use cheaply (not btrfs): above 90% of
 * `sizeCapBytes` (default 10 GiB) the result carries `warnings` (not stored in the journal).
 * A config.json that does not parse is reported in `warnings` (defaults used), not thrown.
 * With `reuse`, a fresh restore point nothing differs from is returned instead, with `reused: true`
 * (see reusableRestorePoint; no retention run, no `changed` notification; `important` marks the reused
 * one important, its label and kind stay): the rule of Snapshot & run
 * and "Restore point before editing", for every front end.
 * @returns the restore point, plus `warnings` when near or over the size cap, `pruned` when retention deleted some
 * @throws BadTarget, TargetNotFound, BadStateDir, BadStore, StoreNotFound, TargetBusy, FileError,
 *   DiskFull (the state dir's file system is full: named, with the prune actions; nothing kept)
 */
export async function createRestorePoint(
  ctx: CoreContext,
  p: ParamsOf<'restorePointCreate'>,
): Promise<ResultOf<'restorePointCreate'>> {
  const t = await ctx.open(p.target, { mustExist: true, sweep: true });
  // A broken config.json must not stop a restore point before a risky change: warn, use the defaults.
  let configProblem: Notice | undefined;
  const config = await readStateConfig(ctx.stateDir).catch((e: unknown) => {
    const err = asAgentKeepError(e);
    const message = `${err.message} (retention and the size cap used their defaults for this create)`;
    configProblem = {
      message,
      ...(err.hint ? { hint: err.hint } : {}),
      ...(err.actions ? { actions: err.actions } : {}),
    };
    return {} as Awaited<ReturnType<typeof readStateConfig>>;
  });
  const stores = p.stores ? ctx.openStores(p.stores) : await detectTargetStores(t.target);
  const progress = ctx.progress(p.progressToken);
  const spec: CreateSpec = {
    label: p.label,
    kind: p.kind,
    reason: p.reason,
    stores,
    pairOf: p.pairOf,
    important: p.important,
    vmstate: p.vmstate,
  };
  // the fsync of the journal directory after the new entry's rename: it runs while retention and the
  // size-cap check below do, and is awaited before the restore point is returned (finishCreate)
  let entrySynced: Promise<void> = Promise.resolve();
  const made = await ctx
    .withTarget(t, { op: 'create restore point', writesObjects: true }, async () => {
      // reuse-or-create: decided under the lock, so nothing changes between the check and the answer
      const reusable = p.reuse ? await reusableRestorePoint(ctx, t, stores, p) : undefined;
      if (reusable && p.important && !reusable.important) return { rp: await markImportant(t, reusable), reused: true };
      const synced = { entrySynced: (q: Promise<void>) => (entrySynced = q) };
      return reusable
        ? { rp: reusable, reused: true }
        : { rp: await createLocked(ctx, t, spec, progress, undefined, synced), reused: false };
    })
    .catch(async (e: unknown) => {
      await entrySynced;
      throw await createSpaceError(e, ctx.stateDir, t.target.spec);
    });
  try {
    return await finishCreate(ctx, t, p, made, config, configProblem, progress);
  } finally {
    await entrySynced;
  }
}

/** The rest of createRestorePoint after the lock is released: reuse's answer, or retention, the size-cap check and the notices. */
async function finishCreate(
  ctx: CoreContext,
  t: TargetCtx,
  p: ParamsOf<'restorePointCreate'>,
  made: { rp: RestorePoint; reused: boolean },
  config: Awaited<ReturnType<typeof readStateConfig>>,
  configProblem: Notice | undefined,
  progress: Progress,
): Promise<ResultOf<'restorePointCreate'>> {
  if (made.reused) {
    progress.report('done', `Reusing restore point ${made.rp.id} (nothing changed since)`);
    if (p.important) ctx.changed(t.target.spec, 'restorePoints');
    return { ...made.rp, reused: true };
  }
  const rp = made.rp;
  ctx.changed(t.target.spec, 'restorePoints');
  // Retention (params, else <stateDir>/config.json, else the defaults); it never deletes the one
  // just made (the newest). A busy target is not waited for long: the next create or a prune catches up.
  const retention = { ...config.retention, ...definedOnly(p.retention ?? {}) };
  // The journal is listed once for both retention and the size-cap check; the restore marker is read meanwhile.
  const [listed, broken] = await Promise.all([
    t.journal.list().catch(() => undefined),
    // A target left half-restored by a killed restore: this restore point holds that mixed state.
    interruptedRestore(ctx.layout, t.target),
  ]);
  const after = listed
    ? await pruneAfterCreate(ctx, t, retention, listed, Math.min(ctx.lockTimeoutMs, 2000)).catch(() => undefined)
    : undefined;
  const pruned = after?.result;
  const capBytes = config.sizeCapBytes ?? DEFAULT_SIZE_CAP_BYTES;
  const warning = await capWarning(ctx, t, capBytes, after?.points ?? listed).catch(() => undefined);
  const half: Notice | undefined = broken && {
    message: `A restore of ${broken.id} never finished (started ${broken.startedAt}), so this restore point may hold a half-restored target.`,
    actions: interruptedActions(t.target.spec, broken),
  };
  // Agent-state files broken when captured (a MEMORY.md that is a directory): not in it, never silently.
  const brokenFiles: Notice[] = rp.agent.flatMap((a) =>
    (a.broken ?? []).map((b) => ({
      message:
        `${b.path} of ${a.store} was broken and is not in this restore point's agent state (a restore of it leaves ` +
        `that file alone): ${b.message}`,
      hint: 'Fix the file (memory list shows the fix), then take a new restore point.',
    })),
  );
  const notices = [configProblem, ...brokenFiles, warning, half].filter((w): w is Notice => !!w);
  // `warnings` as text for clients that do not render actions; `notices` with the next actions.
  const warnings = notices.map((n) => (n.hint ? `${n.message} ${n.hint}` : n.message));
  const said = notices.length ? { warnings, notices } : {};
  // Say what retention deleted: a create must never make restore points vanish silently.
  return { ...rp, ...said, ...(pruned?.deleted.length ? { pruned: pruned.deleted } : {}) };
}
