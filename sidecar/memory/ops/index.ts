/**
 * Memory operations behind memory.show/edit/remove/add/lint/diff (issue 4). The core delegates here
 * so that memory work does not crowd sidecar/core/core.ts. Until a store implements an operation it
 * answers Unsupported.
 */
import type { ParamsOf, ResultOf } from '../../protocol';
import { AgentKeepError } from '../../core/errors';

function notYet(what: string): never {
  throw new AgentKeepError('Unsupported', `${what} is not available in this version.`, 'Use memory list, or update AgentKeep.');
}

/** Context the memory operations get from the core (restore-point journal access for diff). */
export interface MemoryOpsContext {
  /** The state dir in use (journal + objects). */
  stateDir: string;
}

/** memory.show. @throws EntryNotFound, Conflict (ambiguous prefix), BadStore, StoreNotFound */
export async function showMemory(_ctx: MemoryOpsContext, _p: ParamsOf<'memoryShow'>): Promise<ResultOf<'memoryShow'>> {
  notYet('memory show');
}
/** memory.edit. @throws EntryNotFound, Conflict, OverBudget, Unsupported (read-only store) */
export async function editMemory(_ctx: MemoryOpsContext, _p: ParamsOf<'memoryEdit'>): Promise<ResultOf<'memoryEdit'>> {
  notYet('memory edit');
}
/** memory.remove. @throws EntryNotFound, Conflict, Unsupported */
export async function removeMemory(_ctx: MemoryOpsContext, _p: ParamsOf<'memoryRemove'>): Promise<ResultOf<'memoryRemove'>> {
  notYet('memory remove');
}
/** memory.add. @throws Conflict, OverBudget, Unsupported */
export async function addMemory(_ctx: MemoryOpsContext, _p: ParamsOf<'memoryAdd'>): Promise<ResultOf<'memoryAdd'>> {
  notYet('memory add');
}
/** memory.lint. */
export async function lintMemory(_ctx: MemoryOpsContext, _p: ParamsOf<'memoryLint'>): Promise<ResultOf<'memoryLint'>> {
  notYet('memory lint');
}
