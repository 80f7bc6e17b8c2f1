/**
 * The "restore in progress" marker of a target: `<stateDir>/journal/<targetKey>/.restoring.json`
 * (dot files are not restore points), written while a restore writes the target and removed when it
 * succeeds. A marker whose process is gone means the target may be half-restored.
 */
import * as fsSync from 'node:fs';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ResultOf, Scope } from '../protocol';
import { pidAlive } from './lock';
import type { StateLayout } from './state';
import type { ParsedTarget } from './target';

/** A restore that started writing and never finished (agent.status interruptedRestore). */
export type InterruptedRestore = Omit<NonNullable<ResultOf<'agentStatus'>['interruptedRestore']>, 'actions'>;

/** Path of the marker of a target. */
function markerPath(layout: StateLayout, target: ParsedTarget): string {
  return path.join(layout.journalDir(target.key), '.restoring.json');
}

/**
 * Write the marker before a restore changes the target (best effort: a failure does not stop it).
 * @param m the restore: id being restored, its pre-restore point `undo` (none with noUndoPoint), scope and stores as given
 */
export async function writeRestoreMarker(
  layout: StateLayout,
  target: ParsedTarget,
  m: { id: string; undo?: string; scope: Scope; stores?: string[] },
): Promise<void> {
  const stores = m.stores ? { stores: m.stores } : {};
  const startedAt = new Date().toISOString();
  const body = {
    id: m.id,
    ...(m.undo ? { undo: m.undo } : {}),
    scope: m.scope,
    ...stores,
    startedAt,
    pid: process.pid,
    host: os.hostname(),
  };
  // synchronous (a tiny file; an async call is a thread-pool round trip)
  try {
    fsSync.writeFileSync(markerPath(layout, target), JSON.stringify(body), { mode: 0o600 });
  } catch {
    // best effort
  }
}

/** Remove the marker after a restore finished (best effort). */
export async function clearRestoreMarker(layout: StateLayout, target: ParsedTarget): Promise<void> {
  try {
    fsSync.rmSync(markerPath(layout, target), { force: true });
  } catch {
    // best effort
  }
}

/**
 * A restore of the target that started writing and never finished (its process is gone): the
 * target may be half-restored. Undefined when there is none, its process still runs, or the marker
 * does not parse.
 */
export async function interruptedRestore(
  layout: StateLayout,
  target: ParsedTarget,
): Promise<InterruptedRestore | undefined> {
  const raw = await fs.readFile(markerPath(layout, target), 'utf8').catch(() => undefined);
  if (!raw) return undefined;
  try {
    const m = JSON.parse(raw) as {
      id: string;
      undo?: string;
      scope?: Scope;
      stores?: string[];
      startedAt: string;
      pid: number;
      host: string;
    };
    if (m.host === os.hostname() && pidAlive(m.pid)) return undefined;
    return {
      id: m.id,
      ...(m.undo ? { undo: m.undo } : {}),
      scope: m.scope ?? 'both',
      ...(m.stores ? { stores: m.stores } : {}),
      startedAt: m.startedAt,
    };
  } catch {
    return undefined;
  }
}
