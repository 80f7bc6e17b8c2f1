/**
 * Agent state: capture of the memory stores' agent-state files into the object store, their
 * restore (temp file + rename, under the stores' own locks), what differs from a capture, and the
 * path filter that keeps a machine restore off the stores that live inside the target.
 */
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { RestorePoint } from '../protocol';
import type { PathFilter } from '../machine';
import { openStore, type MemoryStoreAdapter } from '../memory';
import type { AgentCapture, CoreContext, Progress } from './context';
import { AgentKeepError } from './errors';
import { isErrno, mapLimit, tempNameFor, throwIfAborted } from './fsutil';
import { hashFile, type ObjectStore } from './objects';
import { isInside } from './state';
import type { ParsedTarget } from './target';

/**
 * Stores whose root lies inside the target, as a filter of target-relative paths a machine restore
 * must leave alone: always their volatile paths (lock files, MemoryStoreAdapter.isVolatilePath, for
 * every scope), plus their agent state when `keepAgentState` (scope machine).
 * @returns undefined when no store lies inside the target
 */
export function agentStateFilter(
  t: ParsedTarget,
  stores: MemoryStoreAdapter[],
  { keepAgentState }: { keepAgentState: boolean },
): PathFilter | undefined {
  const inside = stores
    .filter((s) => isInside(s.root, t.path))
    .map((s) => ({ s, prefix: path.relative(t.path, s.root).split(path.sep).join('/') }));
  if (!inside.length) return undefined;
  const keep = (s: MemoryStoreAdapter, rel: string): boolean => !!s.isVolatilePath?.(rel) || (keepAgentState && s.isAgentStatePath(rel));
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
    for (const s of stores) if (s.lockAgentState && (await s.check().then(() => true, () => false))) held.push(await s.lockAgentState());
  } catch (e) {
    await release();
    throw e;
  }
  return release;
}

/**
 * Capture the agent-state files of each store into the object store.
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
  for (const s of stores) {
    await s.check();
    const files = await s.agentStateFiles();
    progress.report('capture', `Capturing agent state of ${s.spec}`, 0, files.length);
    const captured = await mapLimit(files, 8, async (rel) => {
      throwIfAborted(ctx.signal, abortWhat);
      try {
        if (s.captureFile) return await captureVia(ctx.objects, s, rel);
        const r = await ctx.objects.putFile(path.join(s.root, ...rel.split('/')));
        return { path: rel, size: r.size, hash: r.hash };
      } catch (e) {
        if (e instanceof AgentKeepError) throw e;
        if (isErrno(e, 'ENOENT')) return undefined; // vanished meanwhile
        throw new AgentKeepError('FileError', `Cannot read agent-state file ${path.join(s.root, rel)}: ${(e as Error).message}.`, 'Fix its permissions so the sidecar can read it.');
      }
    });
    out.push({ store: s.spec, files: captured.filter((f): f is NonNullable<typeof f> => !!f) });
  }
  return out;
}

/**
 * Capture one agent-state file through the adapter's captureFile (a consistent copy, e.g. a SQLite
 * database in WAL mode) into a temp file, then into the object store. Undefined when the adapter
 * does not capture `rel` on its own (captureFile resolved false).
 */
async function captureVia(
  objects: ObjectStore,
  s: MemoryStoreAdapter,
  rel: string,
): Promise<{ path: string; size: number; hash: string } | undefined> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'agentkeep-capture-'));
  try {
    const tmp = path.join(dir, 'copy');
    if ((await s.captureFile!(rel, tmp)) === false) return undefined;
    const r = await objects.putFile(tmp);
    return { path: rel, size: r.size, hash: r.hash };
  } finally {
    await fs.rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/**
 * Restore the captured agent-state files of `stores` (checked first: every store captured, every
 * object present; then written file by file, temp + rename). The caller holds the stores' locks.
 * @returns changed paths as `<store>:<rel>`, sorted
 * @throws BadStore (no capture of a store), CorruptSnapshot (object missing): nothing written
 */
export async function restoreAgent(
  ctx: CoreContext,
  rp: RestorePoint,
  stores: MemoryStoreAdapter[],
): Promise<string[]> {
  const changed: string[] = [];
  const plans: Array<{ s: MemoryStoreAdapter; cap: AgentCapture; current: string[] }> = [];
  for (const s of stores) {
    const cap = findCapture(rp, s);
    if (!cap) throw noCapture(rp, s);
    const current = (await s.agentStateFiles().catch(() => [] as string[])).filter((rel) => !s.isVolatilePath?.(rel));
    for (const f of cap.files) if (!(await ctx.objects.has(f.hash))) throw ctx.objects.missing(f.hash);
    plans.push({ s, cap, current });
  }
  for (const { s, cap, current } of plans) {
    const want = new Map(cap.files.map((f) => [f.path, f]));
    for (const f of cap.files) {
      if (s.isVolatilePath?.(f.path)) continue; // a lock file captured by an older version
      throwIfAborted(ctx.signal, 'the restore was stopped part-way');
      const abs = path.join(s.root, ...f.path.split('/'));
      const st = await fs.lstat(abs).catch(() => undefined);
      if (st?.isFile() && (await hashFile(abs)) === f.hash) continue;
      await fs.mkdir(path.dirname(abs), { recursive: true });
      if (st?.isDirectory()) await fs.rm(abs, { recursive: true, force: true });
      const tmp = tempNameFor(abs, s.root);
      try {
        await ctx.objects.copyOut(f.hash, tmp);
        await fs.chmod(tmp, st?.isFile() ? st.mode & 0o7777 : 0o644);
        await fs.rename(tmp, abs);
      } catch (e) {
        await fs.rm(tmp, { force: true }).catch(() => undefined);
        throw e;
      }
      changed.push(`${s.spec}:${f.path}`);
    }
    for (const rel of current) {
      if (want.has(rel)) continue;
      throwIfAborted(ctx.signal, 'the restore was stopped part-way');
      const abs = path.join(s.root, ...rel.split('/'));
      await fs.rm(abs, { force: true });
      changed.push(`${s.spec}:${rel}`);
      // Prune directories emptied by the removal, up to the store root.
      let dir = path.dirname(abs);
      while (dir.length > s.root.length && isInside(dir, s.root)) {
        try {
          await fs.rmdir(dir);
        } catch {
          break;
        }
        dir = path.dirname(dir);
      }
    }
  }
  return changed.sort();
}

/** Agent-state differences between a restore point's captures and now (`<store>:<rel>`, sorted). */
export async function agentDiff(rp: RestorePoint, stores: MemoryStoreAdapter[]): Promise<string[]> {
  const out: string[] = [];
  for (const s of stores) {
    const cap = findCapture(rp, s);
    if (!cap) continue;
    const current = new Set(await s.agentStateFiles().catch(() => [] as string[]));
    for (const f of cap.files) {
      const abs = path.join(s.root, ...f.path.split('/'));
      const h = current.has(f.path) ? await hashFile(abs).catch(() => undefined) : undefined;
      if (h !== f.hash) out.push(`${s.spec}:${f.path}`);
      current.delete(f.path);
    }
    for (const rel of current) out.push(`${s.spec}:${rel}`);
  }
  return out.sort();
}

/** Whether store spec `a` names the store `s` (same spec, or same kind and root). */
export function sameStore(a: string, s: MemoryStoreAdapter): boolean {
  if (a === s.spec) return true;
  try {
    const o = openStore(a);
    return o.kind === s.kind && o.root === s.root;
  } catch {
    return false;
  }
}

/** The capture of store `s` in a restore point, if it has one. */
export function findCapture(rp: RestorePoint, s: MemoryStoreAdapter): AgentCapture | undefined {
  return rp.agent.find((a) => sameStore(a.store, s));
}

/** The BadStore error for a restore point without a capture of `s`. */
export function noCapture(rp: RestorePoint, s: MemoryStoreAdapter): AgentKeepError {
  const have = rp.agent.map((a) => a.store).join(', ') || 'none';
  return new AgentKeepError('BadStore', `Restore point ${rp.id} has no agent-state capture of ${s.spec} (captured: ${have}).`, 'Restore with --scope machine, or name a store it captured.');
}
