/**
 * What a create or restore says when the state dir's file system is full (DiskFull): which file
 * system, how much is free now (after the failed operation's objects were collected), and the
 * choices as next actions: free space (prune the target), or, for a restore, restore without the
 * undo point after an explicit confirmation (protocol `noUndoPoint` + `confirmed`; CLI
 * `--no-undo-point --yes`). Never a permissions hint.
 */
import type { Scope } from '../protocol';
import { freeSpaceActions, restoreWithoutUndoAction } from './actions';
import { AgentKeepError } from './errors';
import { bytesText, fsFacts, isNoSpace } from './fsutil';

/** "/mnt/state (tmpfs), now 3.1 MiB free of 50 MiB" for the file system holding `p`. */
async function where(p: string): Promise<{ mount: string; text: string }> {
  const f = await fsFacts(p);
  if (!f) return { mount: p, text: `the file system of ${p}` };
  return {
    mount: f.mount,
    text: `${f.mount} (${f.fstype}), now ${bytesText(f.freeBytes)} free of ${bytesText(f.totalBytes)}`,
  };
}

/**
 * A create that ran out of space in the state dir: DiskFull naming the file system as it is now
 * (what the create had stored was collected), with the prune actions; other errors unchanged.
 */
export async function createSpaceError(e: unknown, stateDir: string, target: string): Promise<unknown> {
  if (!isNoSpace(e) || !(e instanceof AgentKeepError)) return e;
  const w = await where(stateDir);
  return new AgentKeepError(
    'DiskFull',
    `The restore point was not created: the state dir's file system ran out of space (${e.message.replace(/\.$/, '')}). What this create had stored was removed; ${w.text}. Nothing in the target was changed.`,
    `Free space on ${w.mount}: prune or delete restore points you no longer need, or move the state dir to a larger file system (--state-dir / AGENTKEEP_STATE_DIR).`,
    freeSpaceActions(target),
  );
}

/**
 * A restore whose undo point (the pre-restore restore point) could not be stored for lack of space:
 * DiskFull that explains the choice (free space, or restore without an undo point after an explicit
 * confirmation), both as actions. Other errors unchanged.
 */
export async function undoPointSpaceError(
  e: unknown,
  o: { id: string; scope: Scope; stores?: string[]; stateDir: string; target: string },
): Promise<unknown> {
  if (!isNoSpace(e)) return e;
  const w = await where(o.stateDir);
  return new AgentKeepError(
    'DiskFull',
    `The restore of ${o.id} did not start: its undo point (a restore point of the current state, taken first so the restore can be undone) does not fit in the state dir: ${e instanceof Error ? e.message.replace(/\.$/, '') : String(e)}. Nothing in the target was changed; ${w.text}.`,
    `Either free space on ${w.mount} and restore again, or restore without an undo point, so that the current state is lost for good (CLI: --no-undo-point --yes).`,
    [...freeSpaceActions(o.target), restoreWithoutUndoAction(o.target, o.id, o.scope, o.stores)],
  );
}

/** The refusal of a restore without an undo point that was not confirmed. */
export function noUndoPointUnconfirmed(id: string, target: string, scope: Scope, stores?: string[]): AgentKeepError {
  return new AgentKeepError(
    'ConfirmationRequired',
    `Restoring ${id} without an undo point replaces the current state of the target for good (no pre-restore restore point is taken), so it needs an explicit confirmation. Nothing was changed.`,
    'If that is what you want, confirm it (protocol: confirmed true; CLI: --no-undo-point --yes); otherwise free space and restore with an undo point.',
    [restoreWithoutUndoAction(target, id, scope, stores), ...freeSpaceActions(target)],
  );
}
