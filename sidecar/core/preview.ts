/**
 * restorePoint.preview: what a restore of one scope would do, computed once here for every front
 * end's confirmation (the CLI's restore prompt, the extension's restore and roll-back dialogs):
 * files removed, reverted and brought back, agent-state files put back, what a VM rollback does to
 * the guest, memory entries lost, brought back and kept, the outside-world actions since, and git
 * repositories inside the target whose HEAD or branches move (sidecar/core/gitrepos.ts). Changes
 * nothing and takes no lock; the checks that would refuse the restore refuse the preview too.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { MachineChanges } from '../machine';
import type { MemoryStoreAdapter } from '../memory';
import {
  PREVIEW_LIMIT,
  type EntrySample,
  type MemoryEntry,
  type ParamsOf,
  type PathSample,
  type ProvenanceTrace,
  type RestoreEffects,
  type RestorePoint,
  type RestorePreview,
  type Scope,
  type TargetDescription,
} from '../protocol';
import { agentDiff, agentLeftAlone, agentStateFilter, checkAgentRestore } from './agentState';
import type { CoreContext, TargetCtx } from './context';
import { detectTargetStores } from './detect';
import { asAgentKeepError } from './errors';
import { gitRepoChanges, type GitSides } from './gitrepos';
import { diffMemory } from './memory';
import { restoreStores } from './restore';
import { describeParsedTarget } from './target';

/** Largest git ref file (HEAD, a loose ref, packed-refs) the preview reads, in bytes. */
const GIT_READ_MAX = 8 * 1024 * 1024;

/**
 * See Methods.restorePointPreview.
 * @throws BadTarget, TargetNotFound, RestorePointNotFound, BadStore, CorruptSnapshot and FileError
 *   (something in the way of an agent-state file: agentState.ts checkAgentRestore) as
 *   restorePoint.restore would before touching anything; CorruptSnapshot for a damaged snapshot
 */
export async function previewRestore(ctx: CoreContext, p: ParamsOf<'restorePointPreview'>): Promise<RestorePreview> {
  const t = await ctx.open(p.target);
  const rp = await restorePointOf(t, p.id);
  const scope: Scope = p.scope;
  const stores = restoreStores(ctx, t, rp, scope, p.stores);
  // what the restore would refuse before writing anything (something in the way of an agent-state file)
  await checkAgentRestore(t.target, rp, stores, scope);
  const limit = p.limit ?? PREVIEW_LIMIT;
  const d = describeParsedTarget(t.target);
  const warnings: string[] = [];
  const out: RestorePreview = { restorePoint: rp, scope, actions: { count: 0, items: [] }, gitRepos: [], warnings };
  if (scope !== 'agent') {
    const effects = restoreEffects(d, rp);
    if (effects) out.effects = effects;
    if (t.backend.diff && d.capabilities.diff) {
      const changes = await machineChanges(ctx, t, rp, stores, scope);
      out.machine = {
        added: samplePaths(changes.added, limit),
        changed: samplePaths(changes.changed, limit),
        removed: samplePaths(changes.removed, limit),
      };
      if (d.localRoot && t.backend.readFile && d.capabilities.readFile) {
        out.gitRepos = await gitRepoChanges(changes, gitSides(t, rp, d.localRoot), limit);
      }
    }
  }
  if (scope !== 'machine') {
    out.agentFiles = samplePaths(await agentDiff(rp, stores), limit);
    const alone = agentLeftAlone(rp, stores);
    if (alone.length) out.agentLeftAlone = samplePaths(alone, limit);
  }
  const memory = await memoryChanges(ctx, p.target, rp, stores, scope, limit, warnings);
  if (memory?.entries) out.memory = memory.entries;
  out.actions = { count: memory?.actions.length ?? 0, items: (memory?.actions ?? []).slice(0, limit) };
  return out;
}

/** A restore point from the journal, else one the backend finds by itself (Proxmox markers); nothing is written. */
async function restorePointOf(t: TargetCtx, id: string): Promise<RestorePoint> {
  if (!(await t.journal.has(id)) && t.backend.foreign) {
    const found = (await t.backend.foreign()).find((r) => r.id === id);
    if (found) return found;
  }
  return t.journal.get(id);
}

/**
 * What a machine rollback does to a VM or container guest (undefined for directory targets): from
 * the backend's capabilities (target.describe) and whether the snapshot holds RAM state.
 */
export function restoreEffects(d: TargetDescription, rp: Pick<RestorePoint, 'machine'>): RestoreEffects | undefined {
  if (d.kind === 'directory') return undefined;
  const c = d.capabilities;
  const resumesRam = !!rp.machine.vmstate || (c.ramState && !c.ramStateOnRequest);
  return {
    wholeMachine: true,
    stopsGuest: c.rollbackStopsGuest,
    resumesRam,
    canStartAfter: c.startAfterRollback && !resumesRam,
  };
}

/** The machine diff a restore with `scope` would apply: the same agent-state filter as the restore. */
async function machineChanges(
  ctx: CoreContext,
  t: TargetCtx,
  rp: RestorePoint,
  stores: MemoryStoreAdapter[],
  scope: Scope,
): Promise<MachineChanges> {
  const latest = (await t.journal.list()).find((r) => r.id !== rp.id);
  const inTarget = [...stores, ...(await detectTargetStores(t.target))];
  const skip = agentStateFilter(t.target, inTarget, { keepAgentState: scope === 'machine' });
  return t.backend.diff!(rp.id, { cacheIds: latest ? [latest.id] : [], ...(skip ? { skip } : {}) });
}

/** Git files now (under the local root, regular files only) and in the snapshot (backend readFile). */
function gitSides(t: TargetCtx, rp: RestorePoint, root: string): GitSides {
  return {
    now: async (rel) => {
      const abs = path.join(root, ...rel.split('/'));
      const st = await fs.lstat(abs).catch(() => undefined);
      if (!st?.isFile() || st.size > GIT_READ_MAX) return undefined;
      return fs.readFile(abs, 'utf8').catch(() => undefined);
    },
    then: async (rel) => {
      const f = await t.backend.readFile!(rp.id, rel, GIT_READ_MAX).catch(() => undefined);
      return f?.type === 'file' && f.data ? f.data.toString('utf8') : undefined;
    },
  };
}

/**
 * A path list as a sample: top-most paths (a listed path under a listed directory folds into it,
 * counted in `inside`), sorted, the first `limit` of them; counts are of the whole list.
 */
export function samplePaths(paths: readonly string[], limit: number): PathSample {
  const set = new Set(paths);
  const inside = new Map<string, number>();
  const roots: string[] = [];
  for (const p of paths) {
    const parts = p.split('/');
    let root: string | undefined;
    for (let i = 1; i < parts.length && !root; i++) {
      const anc = parts.slice(0, i).join('/');
      if (set.has(anc)) root = anc;
    }
    if (root) inside.set(root, (inside.get(root) ?? 0) + 1);
    else roots.push(p);
  }
  roots.sort();
  return {
    count: paths.length,
    groups: roots.length,
    items: roots.slice(0, limit).map((p) => ({ path: p, inside: inside.get(p) ?? 0 })),
  };
}

/**
 * The one rule of what a restore does to memory, from memory.diff of each store: with scopes agent
 * and both, entries learned or changed since are lost and entries removed or changed since come
 * back; with scope machine the current memory stays (the learned entries are kept). Plus the
 * outside-world actions since, which no scope undoes. A store that cannot be compared is a warning
 * (never shown as "no changes"); undefined when no store was compared at all.
 */
async function memoryChanges(
  ctx: CoreContext,
  target: string,
  rp: RestorePoint,
  stores: MemoryStoreAdapter[],
  scope: Scope,
  limit: number,
  warnings: string[],
): Promise<{ entries?: NonNullable<RestorePreview['memory']>; actions: ProvenanceTrace[] } | undefined> {
  if (!stores.length) return undefined;
  const learned: MemoryEntry[] = [];
  const gone: MemoryEntry[] = [];
  const actions: ProvenanceTrace[] = [];
  let compared = 0;
  for (const s of stores) {
    try {
      const r = await diffMemory(ctx, { target, from: rp.id, stores: [s.spec] });
      compared++;
      for (const c of [...r.added, ...r.changed]) if (c.after) learned.push({ ...c.after, store: c.store });
      for (const c of [...r.removed, ...r.changed]) if (c.before) gone.push({ ...c.before, store: c.store });
      actions.push(...(r.actions ?? []));
      // broken files are left out of the diff, never shown as "no changes"
      for (const w of r.warnings ?? []) warnings.push(`${s.spec}: ${w}`);
    } catch (e) {
      warnings.push(
        `The memory of ${s.spec} could not be compared with the restore point: ${asAgentKeepError(e).oneLine()}`,
      );
      // the outside world does not depend on a capture: still say what the agent did since
      if (s.actionsSince) actions.push(...(await s.actionsSince(rp.createdAt).catch(() => [] as ProvenanceTrace[])));
    }
  }
  actions.sort((a, b) => (a.time ?? '').localeCompare(b.time ?? ''));
  if (!compared) return { actions };
  const sample = (list: MemoryEntry[]): EntrySample => ({ count: list.length, items: list.slice(0, limit) });
  const none = sample([]);
  const entries =
    scope === 'machine'
      ? { lost: none, broughtBack: none, kept: sample(learned) }
      : { lost: sample(learned), broughtBack: sample(gone), kept: none };
  return { entries, actions };
}
