/**
 * Garbage collection of the object store, and the handshake that makes it safe next to running
 * creates and restores (any process, any target, same state dir):
 *
 * - An operation that writes objects (create, restore) registers an in-flight marker
 *   `locks/inflight/<pid>-<hex>` before it stores anything, then waits while a collection holds
 *   `locks/gc.lock` (waitForGc). A collection takes `locks/gc.lock` first, then looks at the
 *   markers: while any live one exists it does nothing. So an object is never removed between the
 *   moment a writer finds it already stored (deduplication) and the moment its manifest names it.
 * - A marker whose process is gone (kill -9, power loss) or that its operation renamed to
 *   `failed-<pid>-<hex>` (the operation failed or was interrupted) says "objects may be orphaned":
 *   the next create or restore runs a collection first (collectIfPending), and a failed operation
 *   runs one at once. The markers are removed only after a collection that completed, so an orphan
 *   is never forgotten because a collection was skipped.
 * - `space-reserve` in the state dir is 64 KiB of incompressible bytes, given back when a lock or
 *   marker cannot be written for lack of space, so a collection, a prune or a delete can still take
 *   their locks on a full file system and free space. It is written again when space allows.
 *
 * The handshake runs in CoreContext.withTarget (context.ts). Source: the stale-pid rule is that of
 * sidecar/core/lock.ts.
 */
import { randomBytes } from 'node:crypto';
import * as fsSync from 'node:fs';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { backends } from '../machine';
import type { RestorePoint } from '../protocol';
import { AgentKeepError } from './errors';
import { diskFullError, isErrno, isNoSpace, isTempName } from './fsutil';
import { acquireLock, isStale, pidAlive, type HeldLock, type LockInfo } from './lock';
import type { ObjectStore } from './objects';
import { ensureReserve, releaseReserve, type StateLayout } from './state';

/** Temp files of state writes (journal, manifests) older than this are left by a dead writer. */
const STATE_TEMP_MAX_AGE_MS = 10 * 60_000;

/** The fix when not even a lock file fits (the reserve is used up): only other files can make room. */
const NOTHING_LEFT =
  "Not even a lock file fits there: make some room on that file system by removing files that are not AgentKeep's (never objects by hand), then run agentkeep restore-point prune to free more.";

/**
 * Run `write`; when it fails for lack of space, give the reserve back and run it once more.
 * @throws AgentKeepError DiskFull naming the file system when it still does not fit.
 */
export async function withRoom<T>(layout: StateLayout, what: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (e) {
    if (!isNoSpace(e)) throw e;
    if (await releaseReserve(layout)) {
      try {
        return await write();
      } catch (e2) {
        if (!isNoSpace(e2)) throw e2;
        throw e2 instanceof AgentKeepError ? e2 : await diskFullError(layout.root, e2, what, NOTHING_LEFT);
      }
    }
    throw e instanceof AgentKeepError ? e : await diskFullError(layout.root, e, what, NOTHING_LEFT);
  }
}

/** Take a lock file of the state dir (acquireLock), giving the reserve back if it does not fit. */
export function lockWithRoom(
  layout: StateLayout,
  file: string,
  opts: Parameters<typeof acquireLock>[1],
): Promise<HeldLock> {
  return withRoom(layout, `Cannot take the lock ${file}`, () => acquireLock(file, opts));
}

/** An in-flight marker of a running create or restore. */
export interface InflightMarker {
  readonly file: string;
  /**
   * End of the operation: `ok` removes the marker; otherwise it becomes `failed-<pid>-<hex>`, so
   * a collection (now, or by the next create) looks for objects the operation left unreferenced.
   */
  done(ok: boolean): Promise<void>;
}

/**
 * Register an in-flight marker (before any object is stored), then wait while a collection runs.
 * @throws AgentKeepError DiskFull (no room even after the reserve), TargetBusy (a collection did not end in time)
 */
export async function registerInflight(
  layout: StateLayout,
  info: { op: string; target: string },
  timeoutMs: number,
): Promise<InflightMarker> {
  const name = `${process.pid}-${randomBytes(6).toString('hex')}`;
  const file = path.join(layout.inflightDir, name);
  const body = JSON.stringify({
    pid: process.pid,
    host: os.hostname(),
    op: info.op,
    target: info.target,
    time: new Date().toISOString(),
  });
  // synchronous calls for this tiny file (each async call is a thread-pool round trip)
  await withRoom(layout, `Cannot register the ${info.op} in ${layout.inflightDir}`, async () =>
    fsSync.writeFileSync(file, body, { mode: 0o600 }),
  );
  const rmQuiet = (): void => {
    try {
      fsSync.rmSync(file, { force: true });
    } catch {
      // best effort, as before
    }
  };
  const marker: InflightMarker = {
    file,
    done: async (ok) => {
      if (ok) rmQuiet();
      else
        try {
          fsSync.renameSync(file, path.join(layout.inflightDir, `failed-${name}`));
        } catch {
          rmQuiet();
        }
    },
  };
  try {
    await waitForGc(layout, timeoutMs);
  } catch (e) {
    await marker.done(true); // nothing was stored yet
    throw e;
  }
  return marker;
}

/** Wait while a live garbage collection holds the GC lock. @throws AgentKeepError TargetBusy after `timeoutMs`. */
export async function waitForGc(layout: StateLayout, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let info: LockInfo | undefined;
    try {
      info = JSON.parse(fsSync.readFileSync(layout.gcLock, 'utf8')) as LockInfo;
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return;
      // unparsable: a collector between create and write (tryLock removes its file when the write fails)
    }
    if (info && isStale(info)) return;
    if (Date.now() > deadline) {
      throw new AgentKeepError(
        'TargetBusy',
        'A garbage collection of the object store is still running.',
        'Try again in a moment.',
      );
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The markers: whether a create/restore is running anywhere (`live`), and the markers that call for a collection (`pending`). */
export async function inflightState(layout: StateLayout): Promise<{ live: boolean; pending: string[] }> {
  let names: string[];
  try {
    names = await fs.readdir(layout.inflightDir);
  } catch {
    return { live: false, pending: [] };
  }
  const pending: string[] = [];
  let live = false;
  for (const n of names) {
    const p = path.join(layout.inflightDir, n);
    if (n.startsWith('failed-')) {
      pending.push(p);
      continue;
    }
    try {
      const info = JSON.parse(await fs.readFile(p, 'utf8')) as { pid: number; host: string };
      if (info.host !== os.hostname() || pidAlive(info.pid)) live = true;
      else pending.push(p); // its process is gone (kill -9): it may have left objects behind
    } catch {
      // vanished, or half-written by an owner that is starting: running unless it is gone
      const st = await fs.stat(p).catch(() => undefined);
      const m = /^(\d+)-/.exec(n);
      if (st && m && !pidAlive(Number(m[1]))) pending.push(p);
      else if (st) live = true;
    }
  }
  return { live, pending };
}

/** Whether a collection is due: a failed operation or a dead process left a marker. Cheap (one readdir). */
export async function gcPending(layout: StateLayout): Promise<boolean> {
  try {
    const names = fsSync.readdirSync(layout.inflightDir); // (synchronous: usually empty; every create and restore asks)
    if (names.some((n) => n.startsWith('failed-'))) return true;
    if (!names.length) return false;
  } catch {
    return false;
  }
  return (await inflightState(layout)).pending.length > 0;
}

/** Result of a collection. */
export interface GcResult {
  /** Bytes of the objects removed. */
  freedBytes: number;
  /** Objects removed. */
  removed: number;
  /** Why nothing was collected, when nothing was: another operation runs, the lock was busy, a journal entry is damaged. */
  skipped?: 'busy' | 'damaged';
}

/** What a garbage collection needs (a CoreContext has it). */
export interface GcDeps {
  layout: StateLayout;
  objects: ObjectStore;
  lockTimeoutMs: number;
}

/**
 * Mark & sweep: delete the objects no restore point of any target references (manifests of every
 * backend + agent captures of every journal), dir manifests whose restore point is in no journal
 * (left by a create killed between the two writes), temp files of state writes of dead writers,
 * and temp objects of dead writers. Skipped while a create or restore is in flight (the next
 * create, delete or prune collects); keeps everything when a journal entry is damaged.
 * (deps.lockTimeoutMs: how long to wait for another collection's lock)
 */
export async function collectGarbage({ layout, objects, lockTimeoutMs }: GcDeps): Promise<GcResult> {
  let gc: HeldLock;
  try {
    gc = await lockWithRoom(layout, layout.gcLock, {
      op: 'garbage collection',
      what: 'The object store',
      timeoutMs: lockTimeoutMs,
    });
  } catch {
    return { freedBytes: 0, removed: 0, skipped: 'busy' };
  }
  try {
    const { live, pending } = await inflightState(layout);
    if (live) return { freedBytes: 0, removed: 0, skipped: 'busy' };
    const journals = await journalIds(layout);
    if (!journals) return { freedBytes: 0, removed: 0, skipped: 'damaged' };
    for (const f of backends()) await f.dropOrphans?.(layout, (key, id) => journals.ids.get(key)?.has(id) ?? false);
    const keep = new Set(journals.agentObjects);
    // A manifest that cannot be read may name any object: then nothing is deleted (the damaged
    // restore point is reported by list/agent.status, and deleting it lets the next run collect).
    try {
      for (const f of backends()) for (const h of (await f.referencedObjects?.(layout)) ?? []) keep.add(h);
    } catch (e) {
      if (e instanceof AgentKeepError && e.kind === 'CorruptSnapshot')
        return { freedBytes: 0, removed: 0, skipped: 'damaged' };
      throw e;
    }
    const r = await objects.sweep(keep);
    await sweepStateTemps(layout);
    for (const p of pending) await fs.rm(p, { force: true }).catch(() => undefined);
    await ensureReserve(layout);
    return r;
  } finally {
    await gc.release();
  }
}

/**
 * Ids of every journal (target key -> ids with an entry) and the objects their agent captures name;
 * undefined when an entry does not parse (then nothing may be deleted).
 */
async function journalIds(
  layout: StateLayout,
): Promise<{ ids: Map<string, Set<string>>; agentObjects: Set<string> } | undefined> {
  const ids = new Map<string, Set<string>>();
  const agentObjects = new Set<string>();
  let keys: string[] = [];
  try {
    keys = await fs.readdir(layout.journalRoot);
  } catch (e) {
    if (!isErrno(e, 'ENOENT')) return undefined;
  }
  for (const k of keys) {
    const dir = layout.journalDir(k);
    let names: string[];
    try {
      names = await fs.readdir(dir);
    } catch (e) {
      if (isErrno(e, 'ENOTDIR')) continue;
      return undefined; // unreadable journal: keep everything
    }
    const set = new Set<string>();
    ids.set(k, set);
    for (const n of names) {
      if (!n.endsWith('.json') || n === 'target.json' || n.startsWith('.')) continue;
      set.add(n.slice(0, -5));
      try {
        const rp = JSON.parse(await fs.readFile(path.join(dir, n), 'utf8')) as RestorePoint;
        for (const a of rp.agent ?? []) for (const f of a.files ?? []) agentObjects.add(f.hash);
      } catch {
        return undefined; // a damaged journal entry: keep everything rather than risk deleting what it references
      }
    }
  }
  return { ids, agentObjects };
}

/** Remove temp files of atomic state writes (journal/, dir/) whose writer is long gone. */
async function sweepStateTemps(layout: StateLayout, now = Date.now()): Promise<void> {
  for (const root of [layout.journalRoot, layout.dirBackendRoot]) {
    for (const k of await fs.readdir(root).catch(() => [] as string[])) {
      const dir = path.join(root, k);
      for (const n of await fs.readdir(dir).catch(() => [] as string[])) {
        if (!isTempName(n)) continue;
        const p = path.join(dir, n);
        const st = await fs.lstat(p).catch(() => undefined);
        if (st && now - st.mtimeMs > STATE_TEMP_MAX_AGE_MS) await fs.rm(p, { force: true }).catch(() => undefined);
      }
    }
  }
}

/** Run a collection when one is due (gcPending); the cost of a collection only after a failure. */
export async function collectIfPending(deps: GcDeps): Promise<GcResult | undefined> {
  if (!(await gcPending(deps.layout))) return undefined;
  return collectGarbage(deps);
}
