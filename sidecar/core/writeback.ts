/**
 * Scope machine on a target whose rollback puts the stores back too (a VM or container: the target
 * has no local root, so no path filter can spare the stores' files): the agent's current memory is
 * kept by capturing it before the rollback (in the pre-restore point) and writing it back once the
 * guest's stores are reachable again, under each store's own lock (Hermes' flock over the store's
 * transport). The wait is bounded (restorePoint.restore `writeBackTimeoutMs`, default
 * WRITE_BACK_TIMEOUT_MS = 120 s) and reported as progress (stage `write-back`). What could not be
 * written back stays pending: `<stateDir>/journal/<targetKey>/.writeback.json` names the pre-restore
 * point that holds the capture, agent.status and the CLI's list show it, and its action (restore
 * that point with scope agent) writes it back in one command. Retention never deletes that point.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { describeAdapter, sameStore, type MemoryStoreAdapter } from '../memory';
import type { PendingWriteBack, RestorePoint, Scope } from '../protocol';
import { restoreAction } from './actions';
import { findCapture, lockStores, restoreAgent } from './agentState';
import type { CoreContext, Progress, TargetCtx } from './context';
import { AgentKeepError, asAgentKeepError } from './errors';
import { writeFileAtomic } from './fsutil';
import type { StateLayout } from './state';
import { describeParsedTarget, type ParsedTarget } from './target';

/** First pause between two attempts to reach a store, ms (doubles up to WRITE_BACK_MAX_PAUSE_MS). */
const WRITE_BACK_FIRST_PAUSE_MS = 250;
const WRITE_BACK_MAX_PAUSE_MS = 2000;

/**
 * Errors that waiting does not fix: a refused host key or login, a bad store string, a damaged
 * capture, the agent having written since the rollback (Conflict).
 */
const FINAL_KINDS = new Set(['AuthFailed', 'BadStore', 'CorruptSnapshot', 'Unsupported', 'InvalidParams', 'Conflict']);

/**
 * Whether a restore with `scope` must carry the stores' agent state through the rollback itself:
 * scope machine, stores given, and a target without a local root (a VM or container whose rollback
 * puts the whole disk back, memory included). Targets with a local root spare the stores inside
 * them with a path filter instead (agentState.ts agentStateFilter).
 */
export function keepsAgentStateThroughRollback(
  t: ParsedTarget,
  scope: Scope,
  stores: readonly MemoryStoreAdapter[],
): boolean {
  return scope === 'machine' && stores.length > 0 && !describeParsedTarget(t).localRoot;
}

/**
 * Before a scope machine restore of a VM writes anything: every store must be readable now (its
 * agent state is about to be captured), and an undo point is needed (it holds the capture).
 * @throws the store's error kind (StoreNotFound, AuthFailed, FileError ...) naming the store and the
 *   way out (scope both), or InvalidParams for noUndoPoint (no undo point to hold the capture);
 *   nothing changed
 */
export async function checkKeepable(
  stores: readonly MemoryStoreAdapter[],
  rp: RestorePoint,
  target: string,
  noUndoPoint: boolean | undefined,
): Promise<void> {
  const both = restoreAction('Restore everything (scope both)', target, rp.id, 'both');
  if (noUndoPoint) {
    throw new AgentKeepError(
      'InvalidParams',
      `Scope machine on ${target} keeps the agent's current memory through the rollback by capturing it in the ` +
        'undo point first, so it cannot run without an undo point (noUndoPoint). Nothing was changed.',
      'Free space in the state dir and restore with an undo point, or restore with scope both (the memory goes back too).',
      [both],
    );
  }
  for (const s of stores) {
    try {
      await s.check();
    } catch (e) {
      const err = asAgentKeepError(e);
      const kind = err.kind === 'Internal' ? 'StoreNotFound' : err.kind;
      throw new AgentKeepError(
        kind,
        `Scope machine on ${target} keeps the agent's current memory by capturing it before the rollback, but ` +
          `${describeAdapter(s).name} (${s.spec}) cannot be read now: ${err.message} Nothing was changed.`,
        `${err.hint ?? 'Make the store reachable'}; or restore with scope both (its memory goes back to the restore point too).`,
        [both],
      );
    }
  }
}

/** Path of the pending write-back of a target. */
function pendingPath(layout: StateLayout, target: ParsedTarget): string {
  return path.join(layout.journalDir(target.key), '.writeback.json');
}

/** The action that writes a pending capture back: restore its pre-restore point with scope agent. */
export function writeBackAction(target: string, undo: string, stores: string[]) {
  return restoreAction('Write the agent state back', target, undo, 'agent', stores);
}

/**
 * The pending write-back of a target, with its action; undefined when there is none (or the file
 * does not parse: it is then reported as a message, not thrown, by agent.status).
 */
export async function pendingWriteBack(
  layout: StateLayout,
  target: ParsedTarget,
): Promise<PendingWriteBack | undefined> {
  const raw = await fs.readFile(pendingPath(layout, target), 'utf8').catch(() => undefined);
  if (!raw) return undefined;
  try {
    const m = JSON.parse(raw) as Omit<PendingWriteBack, 'actions'>;
    if (typeof m.undo !== 'string' || !Array.isArray(m.stores) || !m.stores.length) return undefined;
    return { ...m, actions: [writeBackAction(target.spec, m.undo, m.stores)] };
  } catch {
    return undefined;
  }
}

async function savePending(layout: StateLayout, target: ParsedTarget, m: Omit<PendingWriteBack, 'actions'>) {
  await fs.mkdir(layout.journalDir(target.key), { recursive: true });
  await writeFileAtomic(pendingPath(layout, target), JSON.stringify(m, null, 2) + '\n');
}

/**
 * After a restore of `rp` with scope agent or both succeeded: the stores it wrote are no longer
 * pending when `rp` is the pre-restore point a pending write-back waits on. After a delete of `rp`:
 * the pending write-back of it is dropped (its capture is gone). Best effort.
 */
export async function settlePending(
  layout: StateLayout,
  target: ParsedTarget,
  rpId: string,
  written: readonly MemoryStoreAdapter[] | 'all',
): Promise<void> {
  const cur = await pendingWriteBack(layout, target);
  if (!cur || cur.undo !== rpId) return;
  const left =
    written === 'all' ? [] : cur.stores.filter((spec) => !written.some((s) => s.spec === spec || sameStore(spec, s)));
  if (!left.length) await fs.rm(pendingPath(layout, target), { force: true }).catch(() => undefined);
  else {
    const { id, undo, since, message } = cur;
    await savePending(layout, target, { id, undo, since, message, stores: left }).catch(() => undefined);
  }
}

/** sleep that ends early on abort. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** `p`, or a timeout error after `ms` (the attempt itself is left to finish on its own). */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new AgentKeepError('StoreNotFound', `${what} did not answer in time.`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** What writeBackAgentState did. */
export interface WriteBackOutcome {
  /** Agent-state paths written, `<store>:<rel>`, sorted. */
  changed: string[];
  status: 'done' | 'pending';
  waitedMs: number;
  pending?: PendingWriteBack;
}

/**
 * Write the agent state `undo` captured of `stores` back after the rollback of `rp`: per store, wait
 * until it is reachable (its check passes), take its lock, check that it still holds what the
 * rollback put back (`rp`'s capture, when `rp` has one: else the agent wrote since, and nothing is
 * overwritten: Conflict, kept pending), restore the capture (nothing when the store already holds
 * it: a store the rollback did not touch); retry what fails for
 * a reason waiting can fix (unreachable, still booting, lock held) until `timeoutMs` has passed.
 * Progress: stage `write-back` (attempts, waiting) and `write-back-done` (a store written, or kept).
 * The pending record is written first (so a sidecar that dies while waiting leaves it) and removed
 * when every store was written; one of an earlier restore that was still pending is put back then
 * (and named in this one's message when this one stays pending: the file holds one). Never throws for a store: what is
 * left is returned as `pending`, with the reason and the action that writes it back.
 * @param machineState the guest after the rollback; `stopped` does not wait (nothing will answer)
 */
export async function writeBackAgentState(
  ctx: CoreContext,
  t: TargetCtx,
  rp: RestorePoint,
  undo: RestorePoint,
  stores: readonly MemoryStoreAdapter[],
  opts: { timeoutMs: number; progress: Progress; machineState?: string },
): Promise<WriteBackOutcome> {
  const started = Date.now();
  const deadline = started + opts.timeoutMs;
  const left = new Map(stores.map((s) => [s.spec, s]));
  const record = (message: string): Omit<PendingWriteBack, 'actions'> => ({
    id: rp.id,
    undo: undo.id,
    stores: [...left.keys()],
    since: new Date().toISOString(),
    message,
  });
  const earlier = await pendingWriteBack(ctx.layout, t.target);
  const older = earlier && earlier.undo !== undo.id ? earlier : undefined;
  // (best effort: the rollback is done, a full state dir must not turn it into an error)
  await savePending(
    ctx.layout,
    t.target,
    record('the write-back had not finished (the sidecar stopped while waiting)'),
  ).catch(() => undefined);
  const changed: string[] = [];
  const reasons = new Map<string, string>();
  const secs = (ms: number): number => Math.round(ms / 1000);
  // people read the store's name ("x/.hermes on root@10.0.0.5:22"), not its string with key options
  const name = (s: MemoryStoreAdapter): string => describeAdapter(s).name;
  const stopped = opts.machineState === 'stopped';
  if (stopped) {
    for (const s of left.values())
      reasons.set(
        s.spec,
        `the guest is stopped after the rollback (its snapshot has no RAM state), so ${name(s)} cannot be reached`,
      );
  }
  const final: string[] = [];
  let wait = WRITE_BACK_FIRST_PAUSE_MS;
  let attempt = 0;
  while (left.size && !stopped) {
    attempt++;
    for (const s of [...left.values()]) {
      const remaining = deadline - Date.now();
      if (remaining <= 0 && attempt > 1) break;
      const waited = secs(Date.now() - started);
      opts.progress.report(
        'write-back',
        attempt === 1
          ? `Writing the agent state back into ${name(s)}`
          : `Waiting for ${name(s)} to be reachable (${waited} s of ${secs(opts.timeoutMs)} s)`,
      );
      try {
        await within(s.check(), Math.max(remaining, 1000), name(s));
        const unlock = await lockStores([s]);
        try {
          // compare-and-swap: the store must hold what the rollback put back (the restore point's
          // capture); what the agent wrote since the guest came back is never overwritten
          // (a store the rollback did not touch, e.g. on another machine, already holds the capture: nothing to do)
          const mine = findCapture(undo, s);
          const already = mine ? !(await s.changedFiles(mine.files)).length : false;
          const cap = findCapture(rp, s);
          const moved = cap && !already ? await s.changedFiles(cap.files) : [];
          if (moved.length) {
            throw new AgentKeepError(
              'Conflict',
              `the agent wrote ${moved.join(', ')} after the rollback, so writing the old capture back would replace that`,
            );
          }
          if (!already) changed.push(...(await restoreAgent(ctx, undo, [s])));
        } finally {
          await unlock();
        }
        left.delete(s.spec);
        reasons.delete(s.spec);
        opts.progress.report('write-back-done', `Wrote the agent state back into ${name(s)}`, 1, 1);
      } catch (e) {
        const err = asAgentKeepError(e);
        reasons.set(s.spec, `${name(s)}: ${err.oneLine()}`);
        if (FINAL_KINDS.has(err.kind)) {
          // waiting does not fix it; the rest may still be written
          left.delete(s.spec);
          final.push(s.spec);
        }
      }
    }
    if (!left.size || Date.now() >= deadline || ctx.signal?.aborted) break;
    await pause(Math.min(wait, Math.max(deadline - Date.now(), 0)), ctx.signal);
    wait = Math.min(wait * 2, WRITE_BACK_MAX_PAUSE_MS);
  }
  for (const spec of final)
    left.set(
      spec,
      stores.find((s) => s.spec === spec)!,
    );
  const waitedMs = Date.now() - started;
  if (!left.size) {
    if (older) {
      const { id, undo: u, stores: st, since, message } = older;
      await savePending(ctx.layout, t.target, { id, undo: u, stores: st, since, message }).catch(() => undefined);
    } else await fs.rm(pendingPath(ctx.layout, t.target), { force: true }).catch(() => undefined);
    return { changed: changed.sort(), status: 'done', waitedMs };
  }
  const why = [...left.keys()].map((spec) => reasons.get(spec) ?? `${spec}: not reachable`).join('; ');
  const gaveUp = stopped
    ? ''
    : ctx.signal?.aborted
      ? ' (interrupted)'
      : final.length === left.size
        ? ''
        : ` (gave up after ${secs(waitedMs)} s)`;
  const before = older
    ? ` (an earlier write-back is still pending too: restore ${older.undo} with scope agent for ${older.stores.join(', ')})`
    : '';
  const message = `${why}${gaveUp}${before}`;
  const m = record(message);
  await savePending(ctx.layout, t.target, m).catch(() => undefined);
  const names = [...left.values()].map(name).join(', ');
  opts.progress.report('write-back-done', `Kept the agent state of ${names} for a re-apply`, 1, 1);
  return {
    changed: changed.sort(),
    status: 'pending',
    waitedMs,
    pending: { ...m, actions: [writeBackAction(t.target.spec, undo.id, m.stores)] },
  };
}
