/**
 * How a memory store's description reads for people, shared by the CLI, the extension and the
 * webview (no I/O, no Node or VS Code imports): the capability names and a one-line summary. Input
 * shapes come from StoreDescription in ./index.ts (store.describe, memory.list `descriptions`).
 */
import type { StoreCapabilities, StoreDescription } from './index';

/** Label of each capability, in the order they are listed. */
export const STORE_CAPABILITY_LABELS: Readonly<Record<keyof StoreCapabilities, string>> = {
  edit: 'editable',
  provenance: 'provenance',
  budgets: 'char budgets',
  drift: 'drift check',
  diff: 'memory diff',
  actions: 'outside actions',
  lock: 'store lock',
  textFiles: 'text files',
};

/** The capabilities a store has, as labels ("read-only" first when it cannot be edited). */
export function storeCapabilityLabels(c: StoreCapabilities): string[] {
  const out = (Object.keys(STORE_CAPABILITY_LABELS) as Array<keyof StoreCapabilities>)
    .filter((k) => c[k])
    .map((k) => STORE_CAPABILITY_LABELS[k]);
  return c.edit ? out : ['read-only', ...out];
}

/**
 * One line about a store: "Hermes at /home/me/.hermes: editable, provenance, ..." (a store without
 * local files says so: "(not local files)").
 */
export function storeSummary(d: StoreDescription): string {
  const where = `${d.kindName} at ${d.location}${d.localRoot ? '' : ' (not local files)'}`;
  return `${where}: ${storeCapabilityLabels(d.capabilities).join(', ')}`;
}

/** "kind · name", the short label of a store in lists (e.g. "hermes · agent-home/.hermes"). */
export function storeLabel(d: Pick<StoreDescription, 'kind' | 'name'>): string {
  return `${d.kind} · ${d.name}`;
}
