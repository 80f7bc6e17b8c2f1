/**
 * Garbage collection of the shared object store (mark & sweep over every target's journal and every
 * backend's manifests), and its handshake with writers: a create or restore registers an in-flight
 * marker under locks/inflight/ and waits while a collection holds locks/gc.lock (CoreContext.withTarget).
 */
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { RestorePoint } from '../protocol';
import { backends } from '../machine';
import { AgentKeepError } from './errors';
import { isErrno } from './fsutil';
import { acquireLock, isStale, pidAlive, type HeldLock, type LockInfo } from './lock';
import type { ObjectStore } from './objects';
import type { StateLayout } from './state';

/** What a garbage collection needs (a CoreContext has it). */
export interface GcDeps {
  layout: StateLayout;
  objects: ObjectStore;
  lockTimeoutMs: number;
}

/**
 * Wait while a live garbage collection holds the GC lock.
 * @throws TargetBusy after `timeoutMs`
 */
export async function waitForGc(layout: StateLayout, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let info: LockInfo | undefined;
    try {
      info = JSON.parse(await fs.readFile(layout.gcLock, 'utf8')) as LockInfo;
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return;
    }
    if (info && isStale(info)) return;
    if (Date.now() > deadline) {
      throw new AgentKeepError('TargetBusy', 'A garbage collection of the object store is still running.', 'Try again in a moment.');
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Whether a create or restore is running anywhere on this state dir (live in-flight markers). */
async function othersInFlight(layout: StateLayout): Promise<boolean> {
  let names: string[];
  try {
    names = await fs.readdir(layout.inflightDir);
  } catch {
    return false;
  }
  for (const n of names) {
    const p = path.join(layout.inflightDir, n);
    try {
      const info = JSON.parse(await fs.readFile(p, 'utf8')) as { pid: number; host: string };
      if (info.host !== os.hostname() || pidAlive(info.pid)) return true;
      await fs.rm(p, { force: true }); // left by a dead process
    } catch {
      /* vanished or half-written: its owner is running */
      if (await fs.stat(p).then(() => true, () => false)) return true;
    }
  }
  return false;
}

/**
 * Mark & sweep: delete objects no restore point of any target references (machine manifests of
 * every backend + agent captures of every journal). Skipped (0 freed) while a create or restore is
 * in flight, while another collection runs, or when a journal entry is damaged; the next delete
 * collects what was left.
 * @returns freedBytes (bytes of objects removed) and removed (their count)
 */
export async function collectGarbage(
  { layout, objects, lockTimeoutMs }: GcDeps,
): Promise<{ freedBytes: number; removed: number }> {
  let gc: HeldLock;
  try {
    gc = await acquireLock(layout.gcLock, { op: 'garbage collection', what: 'The object store', timeoutMs: lockTimeoutMs });
  } catch {
    return { freedBytes: 0, removed: 0 };
  }
  try {
    if (await othersInFlight(layout)) return { freedBytes: 0, removed: 0 };
    const keep = new Set<string>();
    for (const f of backends()) for (const h of (await f.referencedObjects?.(layout)) ?? []) keep.add(h);
    let keys: string[] = [];
    try {
      keys = await fs.readdir(layout.journalRoot);
    } catch {
      /* no journals */
    }
    for (const k of keys) {
      const dir = layout.journalDir(k);
      for (const n of await fs.readdir(dir).catch(() => [] as string[])) {
        if (!n.endsWith('.json') || n === 'target.json' || n.startsWith('.')) continue;
        try {
          const rp = JSON.parse(await fs.readFile(path.join(dir, n), 'utf8')) as RestorePoint;
          for (const a of rp.agent ?? []) for (const f of a.files ?? []) keep.add(f.hash);
        } catch {
          // A damaged journal entry: keep everything rather than risk deleting what it references.
          return { freedBytes: 0, removed: 0 };
        }
      }
    }
    return await objects.sweep(keep);
  } finally {
    await gc.release();
  }
}
