/**
 * Disk use of restore points: per target and per restore point (each stored object or snapshot
 * extent counted once, plus what the state dir holds besides contents: the backend's own data, e.g.
 * dir manifests, often a third of the state dir for trees of many small files, and the journal),
 * the size-cap warning after a create, and the estimate of what deleting some restore points frees
 * (prune). Sizes are file sizes in bytes (st_size).
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { nextAction, type Notice, type ParamsOf, type ResultOf, type RestorePoint } from '../protocol';
import { formatBytes as formatSize } from '../protocol/format';
import type { CoreContext, TargetCtx } from './context';
import { capLevel, DEFAULT_SIZE_CAP_BYTES, readStateConfig, stateConfigPath } from './stateConfig';

/** Disk use of some restore points of a target. */
export interface Usage {
  /** Bytes they hold, every object or extent once, plus metaBytes. */
  bytes: number;
  /** Of `bytes`: the backend's own files in the state dir (dir manifests and their index) and the journal's. */
  metaBytes: number;
  /** Per restore point id: logical size and the bytes it alone holds. */
  points: Map<string, { bytes: number; newBytes: number }>;
}

/**
 * Disk use of restore points `points` of a target: `bytes` counts every stored object (dir
 * manifests via backend.objectsOf, agent captures) or snapshot extent (backend.usage) once, plus
 * the backend's own data and the journal (metaBytes); per point from backend.usage, else the
 * journal's machine.bytes / newBytes. With `quick` (the size-cap check after every create) the
 * contents come from backend.heldObjects (dir: one index file instead of every manifest, so create
 * time stays flat as restore points accumulate), and it is undefined when the backend would have
 * to walk its snapshots (btrfs).
 */
export async function usageOf(
  t: TargetCtx,
  points: RestorePoint[],
  { quick }: { quick: boolean },
): Promise<Usage | undefined> {
  const held = t.backend.heldObjects ? await t.backend.heldObjects().catch(() => undefined) : undefined;
  const metaBytes = (held?.metaBytes ?? 0) + (await t.journal.bytes().catch(() => 0));
  if (quick && held) {
    let bytes = metaBytes;
    for (const size of held.objects.values()) bytes += size;
    const seen = new Set(held.objects.keys());
    for (const r of points) {
      for (const a of r.agent) {
        for (const f of a.files) {
          if (seen.has(f.hash)) continue;
          seen.add(f.hash);
          bytes += f.size;
        }
      }
    }
    return { bytes, metaBytes, points: new Map() };
  }
  const mine = points.filter((r) => r.machine.backend === t.backend.name);
  const ext = t.backend.usage
    ? await t.backend.usage(
        mine.map((r) => r.id),
        { quick },
      )
    : undefined;
  if (t.backend.usage && !ext) return undefined;
  // Every object once, with how many of these restore points hold it and the first holder: an
  // object only one restore point holds is what deleting that one frees (its "only it" bytes).
  const objects = new Map<string, { size: number; holders: number; first: string }>();
  const hold = (h: string, size: number, id: string, seen: Set<string>): void => {
    if (seen.has(h)) return;
    seen.add(h);
    const o = objects.get(h);
    if (o) o.holders++;
    else objects.set(h, { size, holders: 1, first: id });
  };
  let machineBytes = ext?.bytes ?? 0;
  for (const r of points) {
    const seen = new Set<string>();
    if (t.backend.objectsOf && r.machine.backend === t.backend.name) {
      for (const [h, size] of await t.backend.objectsOf(r.id).catch(() => new Map<string, number>()))
        hold(h, size, r.id, seen);
    } else if (!ext) machineBytes += r.machine.newBytes;
    for (const a of r.agent) for (const f of a.files) hold(f.hash, f.size, r.id, seen);
  }
  let bytes = machineBytes + metaBytes;
  const only = new Map<string, number>();
  for (const o of objects.values()) {
    bytes += o.size;
    if (o.holders === 1) only.set(o.first, (only.get(o.first) ?? 0) + o.size);
  }
  const per = new Map<string, { bytes: number; newBytes: number }>();
  for (const r of points) {
    const e = ext?.points.get(r.id);
    // dir (objectsOf): exclusive bytes from the reference counts; btrfs: the backend's exclusive
    // extents; else (VM snapshots) what the journal recorded at create.
    per.set(
      r.id,
      e ?? { bytes: r.machine.bytes, newBytes: t.backend.objectsOf ? (only.get(r.id) ?? 0) : r.machine.newBytes },
    );
  }
  return { bytes, metaBytes, points: per };
}

/**
 * Estimate of what deleting `gone` frees while `kept` stay: objects (dir manifests, agent captures)
 * only the deleted reference within the target (other targets may share some: an upper bound);
 * btrfs: the exclusive extents of each deleted snapshot (a lower bound); else their newBytes.
 */
export async function freeEstimate(t: TargetCtx, gone: RestorePoint[], kept: RestorePoint[]): Promise<number> {
  const held = async (rs: RestorePoint[]): Promise<Map<string, number>> => {
    const m = new Map<string, number>();
    for (const r of rs) {
      if (t.backend.objectsOf && r.machine.backend === t.backend.name)
        for (const [h, size] of await t.backend.objectsOf(r.id).catch(() => new Map<string, number>())) m.set(h, size);
      for (const a of r.agent) for (const f of a.files) m.set(f.hash, f.size);
    }
    return m;
  };
  const [g, k] = await Promise.all([held(gone), held(kept)]);
  let bytes = 0;
  for (const [h, size] of g) if (!k.has(h)) bytes += size;
  if (!t.backend.objectsOf) {
    const ext = t.backend.usage ? await t.backend.usage(gone.map((r) => r.id)).catch(() => undefined) : undefined;
    for (const r of gone) bytes += ext?.points.get(r.id)?.newBytes ?? r.machine.newBytes;
  }
  return bytes;
}

/**
 * Disk use of a target's restore points and where it stands against the size cap (sizeCapBytes in
 * <stateDir>/config.json, default 10 GiB). See Methods.restorePointUsage.
 * @throws BadTarget, BadStateDir (bad config.json), FileError / Unsupported (btrfs: permission, btrfs-progs missing)
 */
export async function usageRestorePoints(
  ctx: CoreContext,
  p: ParamsOf<'restorePointUsage'>,
): Promise<ResultOf<'restorePointUsage'>> {
  const t = await ctx.open(p.target, { mustExist: false });
  const capBytes = (await readStateConfig(ctx.stateDir)).sizeCapBytes ?? DEFAULT_SIZE_CAP_BYTES;
  const points = await t.journal.list();
  const u = (await usageOf(t, points, { quick: false })) ?? { bytes: 0, metaBytes: 0, points: new Map() };
  return {
    target: t.target.spec,
    bytes: u.bytes,
    metaBytes: u.metaBytes,
    stateDirBytes: await treeBytes(ctx.stateDir),
    capBytes,
    level: capLevel(u.bytes, capBytes),
    points: points.map((r) => ({
      id: r.id,
      ...(u.points.get(r.id) ?? { bytes: r.machine.bytes, newBytes: r.machine.newBytes }),
    })),
  };
}

/**
 * The size-cap warning after a create: the target's disk use (when the backend can tell it
 * without walking its snapshots) above 90% of the cap, with next actions (prune to the newest 5, or
 * preview that first); undefined below.
 * @param listed the target's restore points when the caller has just listed them (else listed here)
 */
export async function capWarning(
  ctx: CoreContext,
  t: TargetCtx,
  capBytes: number,
  listed?: RestorePoint[],
): Promise<Notice | undefined> {
  const points = listed ?? (await t.journal.list());
  if (t.backend.heldBound) {
    // An upper bound first (no snapshot read): below the warning level, the exact figure is too.
    const mine = points.filter((r) => r.machine.backend === t.backend.name);
    const [held, journalBytes] = await Promise.all([
      t.backend.heldBound(mine.map((r) => ({ id: r.id, bytes: r.machine.bytes }))).catch(() => Infinity),
      t.journal.bytes().catch(() => 0),
    ]);
    let bound = held + journalBytes;
    for (const r of points) for (const a of r.agent) for (const f of a.files) bound += f.size;
    if (capLevel(bound, capBytes) === 'ok') return undefined;
  }
  const u = await usageOf(t, points, { quick: true });
  if (!u) return undefined;
  const level = capLevel(u.bytes, capBytes);
  if (level === 'ok') return undefined;
  const pct = Math.round((u.bytes / capBytes) * 100);
  const target = t.target.spec;
  return {
    message: `The restore points of ${target} use ${formatSize(u.bytes)}, ${pct}% of the ${formatSize(capBytes)} size cap${level === 'over' ? ' (over the cap)' : ''}.`,
    hint: `You can also raise sizeCapBytes in ${stateConfigPath(ctx.stateDir)}.`,
    actions: [
      nextAction('Free space', 'restorePointPrune', { target, keep: 5 }, { destructive: true }),
      nextAction('Preview the prune', 'restorePointPrune', { target, keep: 5, dryRun: true }),
    ],
  };
}

/** Bytes of every file below `root` (st_size; symlinks as links), 0 when it does not exist. Walks the tree. */
export async function treeBytes(root: string): Promise<number> {
  let total = 0;
  const walk = async (dir: string): Promise<void> => {
    let ents: import('node:fs').Dirent[];
    try {
      ents = await fs.readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of ents) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) await walk(p);
      else total += (await fs.lstat(p).catch(() => undefined))?.size ?? 0;
    }
  };
  await walk(root);
  return total;
}
