/**
 * Disk use of a target's restore points (restorePoint.usage, and the size-cap check after every
 * create): every stored object or snapshot extent once, plus what the state dir holds besides the
 * contents: the backend's own data (dir manifests, often a third of the state dir for trees of many
 * small files) and the target's journal. Sizes are file sizes in bytes (st_size).
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { MachineBackend } from '../machine';
import type { RestorePoint } from '../protocol';
import type { Journal } from './journal';

/** Disk use of one target. */
export interface TargetUsage {
  /** Everything the target's restore points hold in bytes: contents (each object once) + metaBytes. */
  bytes: number;
  /** Of `bytes`: the backend's own files in the state dir (dir manifests and their index) and the journal's. */
  metaBytes: number;
  /** Per restore point: logical bytes, and the bytes only it holds (empty for a quick check). */
  points: Map<string, { bytes: number; newBytes: number }>;
}

/**
 * Disk use of restore points `points` of a target. Contents: dir manifests via backend.objectsOf
 * (quick: backend.heldObjects, one index file instead of every manifest, so a create stays flat),
 * agent captures, btrfs extents via backend.usage, else the journal's newBytes. With `quick`,
 * undefined when the backend would have to walk its snapshots (btrfs).
 */
export async function targetUsage(backend: MachineBackend, journal: Journal, points: RestorePoint[], quick: boolean): Promise<TargetUsage | undefined> {
  const held = backend.heldObjects ? await backend.heldObjects().catch(() => undefined) : undefined;
  const metaBytes = (held?.metaBytes ?? 0) + (await journal.bytes().catch(() => 0));
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
  const mine = points.filter((r) => r.machine.backend === backend.name);
  const ext = backend.usage ? await backend.usage(mine.map((r) => r.id), { quick }) : undefined;
  if (backend.usage && !ext) return undefined;
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
    if (backend.objectsOf && r.machine.backend === backend.name) {
      for (const [h, size] of await backend.objectsOf(r.id).catch(() => new Map<string, number>())) hold(h, size, r.id, seen);
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
    per.set(r.id, e ?? { bytes: r.machine.bytes, newBytes: backend.objectsOf ? (only.get(r.id) ?? 0) : r.machine.newBytes });
  }
  return { bytes, metaBytes, points: per };
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
