/**
 * Agent state: capture of the memory stores' agent-state files into the object store, their
 * restore (under the stores' own locks), what differs from a capture, and the path filter that keeps
 * a machine restore off the stores that live inside the target. The files themselves are the
 * adapters' business (MemoryStoreAdapter.capture / restore / changedFiles; file stores share
 * sidecar/memory/files.ts): this module never reads or writes a store's files.
 */
import * as path from 'node:path';
import type { RestorePoint, Scope } from '../protocol';
import type { PathFilter } from '../machine';
import { sameStore, type CaptureSink, type MemoryStoreAdapter } from '../memory';
import { restoreAction } from './actions';
import type { AgentCapture, CoreContext, Progress } from './context';
import { AgentKeepError } from './errors';
import { throwIfAborted } from './fsutil';
import { isInside } from './state';
import { describeParsedTarget, type ParsedTarget } from './target';

export { sameStore } from '../memory';

/**
 * Stores whose local root lies inside the target's (target.describe `localRoot`; none for VMs), as a
 * filter of target-relative paths a machine restore must leave alone: always their volatile paths
 * (lock files, MemoryStoreAdapter.isVolatilePath, for every scope), plus their agent state when
 * `keepAgentState` (scope machine). Stores without a local root (an API store) are never inside.
 * @returns undefined when no store lies inside the target
 */
export function agentStateFilter(
  t: ParsedTarget,
  stores: MemoryStoreAdapter[],
  { keepAgentState }: { keepAgentState: boolean },
): PathFilter | undefined {
  const root = describeParsedTarget(t).localRoot;
  if (!root) return undefined;
  const inside = stores
    .filter((s) => !!s.localRoot && isInside(s.localRoot, root))
    .map((s) => ({ s, prefix: path.relative(root, s.localRoot!).split(path.sep).join('/') }));
  if (!inside.length) return undefined;
  const keep = (s: MemoryStoreAdapter, rel: string): boolean =>
    !!s.isVolatilePath?.(rel) || (keepAgentState && s.isAgentStatePath(rel));
  return (rel: string) =>
    inside.some(({ s, prefix }) => {
      if (!prefix) return keep(s, rel);
      return rel.startsWith(prefix + '/') && keep(s, rel.slice(prefix.length + 1));
    });
}

/**
 * Take each store's own write lock (MemoryStoreAdapter.lockAgentState, e.g. Hermes' flock on
 * memories/MEMORY.md.lock) before a restore writes agent state; all or none.
 * @returns release of all taken locks  @throws TargetBusy from the store (nothing written)
 */
export async function lockStores(stores: MemoryStoreAdapter[]): Promise<() => Promise<void>> {
  const held: Array<{ release(): Promise<void> }> = [];
  const release = async (): Promise<void> => {
    for (const l of held.reverse()) await l.release().catch(() => undefined);
  };
  try {
    for (const s of stores)
      if (
        s.lockAgentState &&
        (await s.check().then(
          () => true,
          () => false,
        ))
      )
        held.push(await s.lockAgentState());
  } catch (e) {
    await release();
    throw e;
  }
  return release;
}

/**
 * Capture the agent state of each store into the object store (MemoryStoreAdapter.capture).
 * @param abortWhat what an abort (CoreOptions.signal) error says happened
 * @throws the store's check errors (StoreNotFound, BadStore), FileError for an unreadable file
 */
export async function captureStores(
  ctx: CoreContext,
  stores: MemoryStoreAdapter[],
  progress: Progress,
  abortWhat: string,
): Promise<AgentCapture[]> {
  const out: AgentCapture[] = [];
  if (!stores.length) return out;
  // one pack for the captured files, as for the machine's (core/objects.ts): committed, and its
  // objects (and any stored as files of their own) durable, before the journal entry names them
  const pack = await ctx.objects.openPack();
  const sink: CaptureSink = {
    putFile: (abs) => ctx.objects.putFile(abs, undefined, pack),
    putBuffer: (data) => ctx.objects.putBuffer(data, pack),
  };
  try {
    for (const s of stores) {
      await s.check();
      const files = await s.capture(sink, {
        signal: ctx.signal,
        abortWhat,
        onFiles: (total) => progress.report('capture', `Capturing agent state of ${s.spec}`, 0, total),
      });
      // broken files (a MEMORY.md that is a directory) are not in `files`: say so in the capture, so a
      // restore leaves them alone instead of deleting the file that is there by then
      const held = new Set(files.map((f) => f.path));
      const broken = ((await s.brokenAgentState?.()) ?? [])
        .filter((b) => !held.has(b.path))
        .map((b) => ({ path: b.path, message: b.message }));
      out.push({ store: s.spec, files, ...(broken.length ? { broken } : {}) });
    }
  } catch (e) {
    await ctx.objects.dropPack(pack);
    throw e;
  }
  await (
    await ctx.objects.commitPack(pack)
  ).durable;
  return out;
}

/**
 * Restore the captured agent state of `stores` (checked first: every store captured, every object
 * present; then each store's MemoryStoreAdapter.restore). The caller holds the stores' locks.
 * @returns changed paths as `<store>:<rel>`, sorted
 * @throws BadStore (no capture of a store), CorruptSnapshot (object missing): nothing written
 */
export async function restoreAgent(
  ctx: CoreContext,
  rp: RestorePoint,
  stores: MemoryStoreAdapter[],
): Promise<string[]> {
  const plans: Array<{ s: MemoryStoreAdapter; cap: AgentCapture }> = [];
  for (const s of stores) {
    const cap = findCapture(rp, s);
    if (!cap) throw noCapture(rp, s);
    for (const f of cap.files) if (!(await ctx.objects.has(f.hash))) throw ctx.objects.missing(f.hash);
    plans.push({ s, cap });
  }
  const changed: string[] = [];
  const abortWhat = 'the restore was stopped part-way';
  for (const { s, cap } of plans) {
    throwIfAborted(ctx.signal, abortWhat);
    const leaveAlone = cap.broken?.map((b) => b.path);
    const rels = await s.restore(cap.files, ctx.objects, { signal: ctx.signal, abortWhat, leaveAlone });
    for (const rel of rels) changed.push(`${s.spec}:${rel}`);
  }
  return changed.sort();
}

/**
 * Before a restore with `scope` writes anything (and before its undo point): each store's
 * MemoryStoreAdapter.checkRestore of its capture, so a store with something in the way that the undo
 * point would not hold (a non-empty directory where MEMORY.md goes) refuses with nothing changed.
 * Scope both leaves out stores inside the target's local root: the machine restore puts their paths
 * back first, and the undo point's machine capture holds what was in the way; on a target without
 * a local root (a VM) scope both writes no store, so nothing is checked.
 * @throws FileError from the store's check (what is in the way, the fix)
 */
export async function checkAgentRestore(
  t: ParsedTarget,
  rp: RestorePoint,
  stores: MemoryStoreAdapter[],
  scope: Scope,
): Promise<void> {
  if (scope === 'machine') return;
  const root = scope === 'both' ? describeParsedTarget(t).localRoot : undefined;
  if (scope === 'both' && !root) return; // a VM: its rollback writes the stores' files, not AgentKeep
  for (const s of stores) {
    if (root && s.localRoot && isInside(s.localRoot, root)) continue;
    const cap = findCapture(rp, s);
    if (cap) await s.checkRestore?.(cap.files);
  }
}

/**
 * Agent-state differences between a restore point's captures and now (`<store>:<rel>`, sorted): what
 * a restore puts back. Files that were broken when it was taken (AgentCapture.broken) are not among
 * them: the restore leaves them alone (see agentLeftAlone).
 */
export async function agentDiff(rp: RestorePoint, stores: MemoryStoreAdapter[]): Promise<string[]> {
  const out: string[] = [];
  for (const s of stores) {
    const cap = findCapture(rp, s);
    if (!cap) continue;
    const alone = new Set(cap.broken?.map((b) => b.path));
    for (const rel of await s.changedFiles(cap.files)) if (!alone.has(rel)) out.push(`${s.spec}:${rel}`);
  }
  return out.sort();
}

/**
 * Agent-state files a restore of `rp` leaves alone because they were broken when it was taken
 * (AgentCapture.broken of the captures of `stores`), as `<store>:<rel>`, sorted.
 */
export function agentLeftAlone(rp: RestorePoint, stores: MemoryStoreAdapter[]): string[] {
  const out: string[] = [];
  for (const s of stores) for (const b of findCapture(rp, s)?.broken ?? []) out.push(`${s.spec}:${b.path}`);
  return out.sort();
}

/** The capture of store `s` in a restore point, if it has one. */
export function findCapture(rp: RestorePoint, s: MemoryStoreAdapter): AgentCapture | undefined {
  return rp.agent.find((a) => sameStore(a.store, s));
}

/** The BadStore error for a restore point without a capture of `s`. */
export function noCapture(rp: RestorePoint, s: MemoryStoreAdapter): AgentKeepError {
  const have = rp.agent.map((a) => a.store).join(', ') || 'none';
  return new AgentKeepError(
    'BadStore',
    `Restore point ${rp.id} has no agent-state capture of ${s.spec} (captured: ${have}).`,
    'To restore its agent state, name a store it captured.',
    [restoreAction('Restore the files (scope machine)', rp.target, rp.id, 'machine')],
  );
}
