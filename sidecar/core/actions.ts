/**
 * The next actions the core attaches to its errors and warnings (NextAction in sidecar/protocol):
 * protocol methods with their params, which each front end renders its own way (the CLI as
 * CLI command lines, the extension as buttons). No front-end text here.
 */
import { nextAction, type NextAction, type Scope } from '../protocol';

/** List the restore points of a target (restorePoint.list). */
export function listAction(target: string): NextAction {
  return nextAction('List restore points', 'restorePointList', { target });
}

/** Delete one restore point, e.g. one whose journal entry is damaged (restorePoint.delete). */
export function deleteAction(target: string, id: string, title = `Delete ${id}`): NextAction {
  return nextAction(title, 'restorePointDelete', { target, id }, { destructive: true });
}

/** Restore a restore point with a scope (restorePoint.restore; `stores` as given, else its captured ones). */
export function restoreAction(title: string, target: string, id: string, scope: Scope, stores?: string[]): NextAction {
  const params = { target, id, scope, ...(stores?.length ? { stores } : {}) };
  return nextAction(title, 'restorePointRestore', params, { destructive: true });
}

/**
 * What to do about a restore that never finished: finish it (restore `id` again with the same scope
 * and stores), or go back (restore its pre-restore point `undo`, scope both; none for a restore
 * without an undo point).
 */
export function interruptedActions(
  target: string,
  ir: { id: string; undo?: string; scope: Scope; stores?: string[] },
): NextAction[] {
  return [
    restoreAction('Finish the restore', target, ir.id, ir.scope, ir.stores),
    ...(ir.undo ? [restoreAction('Go back', target, ir.undo, 'both')] : []), // (none: restored without an undo point)
  ];
}

/** Free space in the state dir: prune the target (keep 5), and preview it first. */
export function freeSpaceActions(target: string): NextAction[] {
  return [
    nextAction('Free space', 'restorePointPrune', { target, keep: 5 }, { destructive: true }),
    nextAction('Preview the prune', 'restorePointPrune', { target, keep: 5, dryRun: true }),
  ];
}

/** Restore without an undo point, after the user confirmed (a state dir too full to hold one). */
export function restoreWithoutUndoAction(target: string, id: string, scope: Scope, stores?: string[]): NextAction {
  const params = { target, id, scope, ...(stores?.length ? { stores } : {}), noUndoPoint: true, confirmed: true };
  return nextAction('Restore without an undo point', 'restorePointRestore', params, { destructive: true });
}

/** List the entries of memory stores (memory.list), e.g. after an unknown entry id. */
export function memoryListAction(stores: string[]): NextAction {
  return nextAction('List the entries', 'memoryList', { stores });
}
