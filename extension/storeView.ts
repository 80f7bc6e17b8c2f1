/**
 * How the Agent tree and the status bar show a memory store and its files (no `vscode` import,
 * unit-tested on Node): from the store's description (StoreDescription: store.describe, agent.status,
 * memory.list), never from its kind or its string. A store the sidecar could not describe shows its
 * string as configured. A broken store or file (agent.status `broken`, MemoryFile.broken) is shown as
 * broken, with what and the fix, never as "0 entries" or as ok; its entries offer no edit or delete.
 */
import * as path from 'node:path';
import type { MemoryFile, ResultOf, StoreDescription } from '../sidecar/protocol';
import { storeSummary } from '../sidecar/protocol/stores';
import { plural } from './format';

/** A store as agent.status reports it (ok, missing, or broken with its parts). */
export type StoreStatus = ResultOf<'agentStatus'>['stores'][number];

/** The text parts of a store's tree item. */
export interface StoreItemView {
  /** The kind, e.g. "hermes" (the store string when there is no description). */
  label: string;
  /**
   * "broken" first for a broken store, then where it is and how many lint findings name it, e.g.
   * "/home/me/.hermes · 2 findings".
   */
  description: string;
  /** The store string, what it is and can do, what is broken and the fixes, and the lint line. */
  tooltip: string;
  /** Codicon: `warning` for a broken store (a badge on the row), else `database`. */
  icon: 'warning' | 'database';
}

/**
 * The tree item text of a store.
 * @param found lint findings that name the store
 * @param lintNote why lint has no findings to show (unavailable, failed), if so
 * @param status the store as agent.status reported it (its `broken` parts), if known
 */
export function storeItemView(
  store: string,
  d: StoreDescription | undefined,
  found: number,
  lintNote?: string,
  status?: Pick<StoreStatus, 'broken' | 'pendingWrites'>,
): StoreItemView {
  const lint =
    lintNote ??
    (found ? `Lint: ${plural(found, 'finding')}. Open the memory inspector to review them.` : 'Lint found nothing.');
  const b = status?.broken;
  const broken = b ? (b.readable === 'none' ? 'broken, nothing readable' : 'broken') : '';
  const parts = (b?.parts ?? []).map((p) => `Broken: ${p.message}${p.hint ? `\nFix: ${p.hint}` : ''}`);
  const pending = status?.pendingWrites ?? 0;
  const pendingText = pending
    ? `${plural(pending, 'write')} the agent staged for approval, not in memory yet (Hermes: /memory approve or reject each id).`
    : '';
  return {
    label: d?.kind ?? store,
    description: [broken, d?.location ?? '', pending ? `${pending} pending` : '', found ? plural(found, 'finding') : '']
      .filter(Boolean)
      .join(' · '),
    tooltip: [store, d ? storeSummary(d) : 'The sidecar did not describe this store.', ...parts, pendingText, lint]
      .filter(Boolean)
      .join('\n'),
    icon: b ? 'warning' : 'database',
  };
}

/** A problem's message with the file's absolute path shortened to its name ("MEMORY.md is a directory…"). */
export function shortProblem(message: string, file?: string): string {
  return file && path.isAbsolute(file) ? message.split(file).join(path.basename(file)) : message;
}

/** The text parts of a memory file's tree item. */
export interface MemoryFileView {
  /** The file name, e.g. "MEMORY.md". */
  label: string;
  /**
   * Usage and entry count ("812/2200 chars · 5 entries"); for a broken file "broken: <what>" (with
   * "N entries readable" when some are), never a count or usage it does not know.
   */
  description: string;
  /** The path and kind, and for a broken file what is broken, the fix and that writes are refused. */
  tooltip: string;
  /** Codicon: `error` for a broken file, `warning` over its char limit, else `file-text`. */
  icon: 'error' | 'warning' | 'file-text';
  /** `memoryFile.broken` or `memoryFile` (package.json menus match on it). */
  contextValue: string;
}

/** How the Agent tree shows a memory file (MemoryFile from memory.list). */
export function memoryFileView(f: MemoryFile): MemoryFileView {
  const name = path.basename(f.file);
  const b = f.broken;
  if (b) {
    const readable = f.entries.length ? ` (${plural(f.entries.length, 'entry', 'entries')} readable)` : '';
    const tooltip = [
      `${f.file}\n${f.kind}`,
      `Broken: ${b.message}`,
      ...(b.hint ? [`Fix: ${b.hint}`] : []),
      f.entries.length
        ? `Only ${plural(f.entries.length, 'entry', 'entries')} could be read. AgentKeep does not write this file.`
        : 'Its entries are unknown (not empty). AgentKeep does not write this file.',
    ];
    return {
      label: name,
      description: `broken${readable}: ${shortProblem(b.message, f.file)}`,
      tooltip: tooltip.join('\n'),
      icon: 'error',
      contextValue: 'memoryFile.broken',
    };
  }
  const u = f.usage;
  const count = plural(f.entries.length, 'entry', 'entries');
  return {
    label: name,
    description: u ? `${u.chars}/${u.limit} chars · ${count}` : count,
    tooltip: u ? `${f.file}\n${f.kind}: ${u.chars} of ${u.limit} characters used` : `${f.file}\n${f.kind}`,
    icon: u && u.chars > u.limit ? 'warning' : 'file-text',
    contextValue: 'memoryFile',
  };
}

/**
 * Context value of an entry row (package.json menus offer edit and delete on `memoryEntry` only):
 * `memoryEntry.broken` when its file is broken (AgentKeep refuses to write it), `memoryEntry.readOnly`
 * for a read-only file, else `memoryEntry`.
 */
export function entryContextValue(f: Pick<MemoryFile, 'readOnly' | 'broken'>): string {
  return f.broken ? 'memoryEntry.broken' : f.readOnly ? 'memoryEntry.readOnly' : 'memoryEntry';
}

/** A row under a broken file, before its readable entries: what is broken, then the fix. */
export interface BrokenRow {
  label: string;
  detail: string;
  icon: 'error' | 'lightbulb';
}

/** The rows that say what is broken in a file and how to fix it ([] for a file that is not broken). */
export function brokenFileRows(f: MemoryFile): BrokenRow[] {
  const b = f.broken;
  if (!b) return [];
  const what = f.entries.length ? 'Not every entry could be read' : 'Entries unknown';
  const rows: BrokenRow[] = [
    { label: `${what}: ${shortProblem(b.message, f.file)}`, detail: b.message, icon: 'error' },
  ];
  if (b.hint) rows.push({ label: `Fix: ${b.hint}`, detail: b.hint, icon: 'lightbulb' });
  return rows;
}

/**
 * The warning lines of the status bar tooltip for the stores agent.status reports broken, e.g.
 * "Store hermes:/h is broken: … Fix: …"; [] when none is.
 */
export function brokenStoreLines(stores: readonly StoreStatus[]): string[] {
  return stores
    .filter((s) => s.broken)
    .map((s) => {
      const p = s.broken!.parts[0];
      const more = s.broken!.parts.length > 1 ? ` (and ${s.broken!.parts.length - 1} more)` : '';
      return `Store ${s.store} is broken: ${p.message}${more}${p.hint ? ` Fix: ${p.hint}` : ''}`;
    });
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
