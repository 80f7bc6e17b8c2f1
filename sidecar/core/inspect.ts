/**
 * Looking at restore points without changing them: restorePoint.list (journal plus the ones the
 * backend finds by itself), .diff (a restore point against now), .compare (two restore points) and
 * .readFile (one file as it was).
 */
import { openStore } from '../memory';
import type { ChangeSummary, ParamsOf, ResultOf, RestorePoint } from '../protocol';
import { agentDiff, agentLeftAlone, agentStateFilter, sameStore } from './agentState';
import type { CoreContext } from './context';
import { compareCaptures, DEFAULT_READ_MAX_BYTES, encodeContent, normalizeRelPath, tooLarge } from './compare';
import { detectTargetStores } from './detect';
import { AgentKeepError } from './errors';

/**
 * Restore points of a target, newest first (an unknown target has none).
 * @throws BadTarget, BadStateDir; Proxmox: AuthFailed (token, fingerprint), TargetNotFound, Hypervisor
 */
export async function listRestorePoints(ctx: CoreContext, p: ParamsOf<'restorePointList'>): Promise<RestorePoint[]> {
  const t = await ctx.open(p.target, { mustExist: false });
  const points = await t.journal.list();
  // Backends that can find restore points by themselves (Proxmox: snapshot description markers)
  // add the ones this journal lacks (made from another machine).
  const known = new Set(points.map((r) => r.id));
  // Errors propagate: a wrong fingerprint, a refused token or an unreachable host must not look like
  // "no restore points" (the journal alone would hide the snapshots on the host).
  const extra = t.backend.foreign ? (await t.backend.foreign()).filter((r) => !known.has(r.id)) : [];
  return extra.length ? [...points, ...extra].sort((a, b) => b.createdAt.localeCompare(a.createdAt)) : points;
}

/**
 * What differs between a restore point and now (what a restore would undo). Agent-state changes
 * are given for `stores`, default: the stores the restore point captured.
 * @throws RestorePointNotFound, CorruptSnapshot, TargetNotFound, Unsupported (whole-disk snapshots)
 */
export async function diffRestorePoint(ctx: CoreContext, p: ParamsOf<'restorePointDiff'>): Promise<ChangeSummary> {
  const t = await ctx.open(p.target);
  const rp = await t.journal.get(p.id);
  const latest = (await t.journal.list()).find((r) => r.id !== rp.id);
  if (!t.backend.diff) {
    throw new AgentKeepError(
      'Unsupported',
      `The ${t.backend.name} backend cannot list file changes of a snapshot (its snapshots are whole-disk or whole-VM).`,
      'Compare the agent state with memory diff, or roll back and look.',
    );
  }
  const stores = ctx.openStores(p.stores ?? rp.agent.map((a) => a.store));
  // Lock files and other volatile paths of the stores in the target are never touched by a restore,
  // so they are not listed as what it would change.
  const inTarget = [...stores, ...(await detectTargetStores(t.target))];
  const skip = agentStateFilter(t.target, inTarget, { keepAgentState: false });
  const m = await t.backend.diff(rp.id, { cacheIds: latest ? [latest.id] : [], ...(skip ? { skip } : {}) });
  const alone = agentLeftAlone(rp, stores);
  return { ...m, agentChanged: await agentDiff(rp, stores), ...(alone.length ? { agentLeftAlone: alone } : {}) };
}

/**
 * What changed from restore point `from` to restore point `to` of one target: the machine
 * snapshots compared with each other (no scan of the live tree) and the agent-state captures of the
 * stores both hold. Needs no lock: manifests and journal entries are written atomically.
 * @throws RestorePointNotFound, CorruptSnapshot, BadTarget, Unsupported (the backend cannot compare:
 *   target.describe capabilities.compare false)
 */
export async function compareRestorePoints(
  ctx: CoreContext,
  p: ParamsOf<'restorePointCompare'>,
): Promise<ChangeSummary> {
  const t = await ctx.open(p.target, { mustExist: false });
  const [a, b] = await Promise.all([t.journal.get(p.from), t.journal.get(p.to)]);
  for (const rp of [a, b]) {
    if (rp.machine.backend !== t.backend.name) {
      throw new AgentKeepError(
        'CorruptSnapshot',
        `Restore point ${rp.id} was made by backend "${rp.machine.backend}", not "${t.backend.name}".`,
        'Compare restore points of the same target and backend.',
      );
    }
  }
  if (!t.backend.compare) {
    const hint = t.backend.diff
      ? 'Use restorePoint.diff (compare with now) instead.'
      : 'Compare the agent state with memory diff instead.';
    throw new AgentKeepError('Unsupported', `The ${t.backend.name} backend cannot compare two snapshots.`, hint);
  }
  const m = await t.backend.compare(a.id, b.id);
  const same = (x: string, y: string): boolean => {
    try {
      return sameStore(x, openStore(y));
    } catch {
      return x === y;
    }
  };
  return { ...m, agentChanged: compareCaptures(a.agent, b.agent, same) };
}

/**
 * One file as it was at a restore point: `<store>:<rel>` from an agent-state capture, else a
 * target-relative path of the machine snapshot. Content is utf8 text, or base64 for binary data.
 * @throws RestorePointNotFound, InvalidParams (path with ".."), FileError (above maxBytes, default
 *   2 MiB), CorruptSnapshot (object missing), Unsupported (the backend cannot read snapshots:
 *   capabilities.readFile false)
 */
export async function readRestorePointFile(
  ctx: CoreContext,
  p: ParamsOf<'restorePointReadFile'>,
): Promise<ResultOf<'restorePointReadFile'>> {
  const t = await ctx.open(p.target, { mustExist: false });
  const rp = await t.journal.get(p.id);
  const max = p.maxBytes ?? DEFAULT_READ_MAX_BYTES;
  const cap = rp.agent.find((a) => p.path.startsWith(`${a.store}:`));
  let file: { type: 'file' | 'symlink' | 'directory' | 'none'; size: number; data?: Buffer };
  if (cap) {
    const rel = normalizeRelPath(p.path.slice(cap.store.length + 1));
    const f = cap.files.find((x) => x.path === rel);
    if (!f) file = { type: 'none', size: 0 };
    else if (f.size > max) throw tooLarge(p.path, f.size, max);
    else file = { type: 'file', size: f.size, data: await ctx.objects.read(f.hash) };
  } else {
    if (!t.backend.readFile) {
      throw new AgentKeepError(
        'Unsupported',
        `The ${t.backend.name} backend cannot read files of a snapshot.`,
        'Restore the restore point to see its files.',
      );
    }
    file = await t.backend.readFile(rp.id, normalizeRelPath(p.path), max);
  }
  const enc = file.data ? encodeContent(file.data) : { encoding: 'utf8' as const, content: '' };
  return { path: p.path, type: file.type, size: file.size, ...enc };
}
