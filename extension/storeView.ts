/**
 * How the Agent tree shows a memory store and its files (no `vscode` import, unit-tested on Node):
 * from the store's description (StoreDescription: store.describe, agent.status, memory.list), never
 * from its kind or its string. A store the sidecar could not describe shows its string as configured.
 */
import * as path from 'node:path';
import type { MemoryFile, StoreDescription } from '../sidecar/protocol';
import { storeSummary } from '../sidecar/protocol/stores';
import { plural } from './format';

/** The text parts of a store's tree item. */
export interface StoreItemView {
  /** The kind, e.g. "hermes" (the store string when there is no description). */
  label: string;
  /** Where it is and how many lint findings name it, e.g. "/home/me/.hermes · 2 findings". */
  description: string;
  /** The store string, what it is and can do, and the lint line. */
  tooltip: string;
}

/**
 * The tree item text of a store.
 * @param found lint findings that name the store
 * @param lintNote why lint has no findings to show (unavailable, failed), if so
 */
export function storeItemView(
  store: string,
  d: StoreDescription | undefined,
  found: number,
  lintNote?: string,
): StoreItemView {
  const lint =
    lintNote ??
    (found ? `Lint: ${plural(found, 'finding')}. Open the memory inspector to review them.` : 'Lint found nothing.');
  return {
    label: d?.kind ?? store,
    description: [d?.location ?? '', found ? plural(found, 'finding') : ''].filter(Boolean).join(' · '),
    tooltip: [store, d ? storeSummary(d) : 'The sidecar did not describe this store.', lint].join('\n'),
  };
}

/**
 * Whether a memory file is a local file the editor can open: it lies under the store's local root
 * (StoreDescription.localRoot). A store reached through an API names its files by URL: not local.
 */
export function isLocalMemoryFile(
  file: Pick<MemoryFile, 'file'>,
  d: Pick<StoreDescription, 'localRoot'> | undefined,
): boolean {
  if (!d?.localRoot) return false;
  const rel = path.relative(d.localRoot, file.file);
  return rel === '' || (!!rel && !rel.startsWith('..') && !path.isAbsolute(rel));
}
