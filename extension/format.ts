/**
 * Pure formatting helpers of the extension (no `vscode` import, unit-tested on Node): reasons, what a
 * restore will undo, status bar text. Input shapes come from sidecar/protocol; sizes, ages and first
 * lines come from the shared sidecar/protocol/format.ts (re-exported here for the extension's modules).
 */
import * as path from 'node:path';
import type {
  ChangeSummary,
  EntrySample,
  GitHead,
  GitRepoChange,
  PathSample,
  RestorePoint,
  RestorePreview,
  Scope,
  StoreDescription,
  TargetDescription,
} from '../sidecar/protocol';
import { firstLine, formatAge, formatBytes, oneLine } from '../sidecar/protocol/format';
import { originView } from './origin';

export { formatAge, formatBytes } from '../sidecar/protocol/format';

/**
 * One-line reason of a restore point: for one the agent or a hook took, who and what ("by the agent
 * hermes in session 3f2a…: pip install requests", extension/origin.ts); else `npm install left-pad`
 * from setup.sh:3 (and why it was risky, when the risk engine said: "— deps: npm install changes
 * project dependencies"), "before restore of X", or the free-form text. Empty string when there is no reason.
 */
export function formatReason(rp: Pick<RestorePoint, 'reason' | 'kind' | 'restoredFrom'>): string {
  const r = rp.reason;
  const origin = originView(rp);
  if (origin) return origin.text;
  if (r?.command) {
    const where = r.file ? ` from ${path.basename(r.file)}${r.line ? `:${r.line}` : ''}` : '';
    return `\`${r.command}\`${where}${r.risk ? ` — ${r.risk}` : ''}`;
  }
  if (r?.text) return r.text;
  if (rp.kind === 'pre-restore') return rp.restoredFrom ? `before restoring ${rp.restoredFrom}` : 'before a restore';
  return '';
}

/**
 * The reason without repeating the label: when the label is the command itself (Snapshot & run),
 * only where it came from ("from setup.sh:5"); otherwise formatReason without backticks.
 */
export function shortReason(rp: Pick<RestorePoint, 'reason' | 'kind' | 'restoredFrom' | 'label'>): string {
  const r = rp.reason;
  if (r?.origin) return formatReason(rp);
  if (r?.command && (r.command === rp.label || rp.label === `after: ${r.command}`))
    return r.file ? `from ${path.basename(r.file)}${r.line ? `:${r.line}` : ''}` : '';
  return formatReason(rp)
    .replace(/`/g, '')
    .replace(/ — .*$/, '');
}

/** Disk use for the Agent view: "12 MiB of 10 GiB", "(near the cap)" above 90%, "(over the cap)" above it. */
export function usageText(u: { bytes: number; capBytes: number; level: 'ok' | 'near' | 'over' }): string {
  const base = `${formatBytes(u.bytes)} of ${formatBytes(u.capBytes)}`;
  return u.level === 'over' ? `${base} (over the cap)` : u.level === 'near' ? `${base} (near the cap)` : base;
}

/** Status bar text for the newest restore point (undefined = none yet). Codicon syntax. */
export function statusBarText(latest: Pick<RestorePoint, 'createdAt'> | undefined, now: number = Date.now()): string {
  return latest ? `$(history) ${formatAge(latest.createdAt, now)}` : '$(history) no restore point';
}

/** "3 files", "1 file"; `pluralWord` for irregular plurals. */
export function plural(n: number, word: string, pluralWord = `${word}s`): string {
  return `${n} ${n === 1 ? word : pluralWord}`;
}

/**
 * A preview list (restorePoint.preview PathSample) as a short phrase: the first `max` top-most paths,
 * a folded directory as "dir/ (+N inside)", then "and N more".
 */
export function sampleText(s: PathSample, max = 3): string {
  const shown = s.items
    .slice(0, max)
    .map((g) => (g.inside ? `${g.path}/ (+${g.inside} inside)` : g.path))
    .join(', ');
  return s.groups > max ? `${shown} and ${s.groups - max} more` : shown;
}

/**
 * What a restore will undo, from restorePoint.preview, as sentences for a confirmation dialog: the
 * files it removes, reverts and brings back, the agent state it puts back (the preview holds only
 * what its scope touches). Always ends with the reminder that snapshots do not undo effects outside
 * the machine.
 */
export function describeLoss(p: Pick<RestorePreview, 'machine' | 'agentFiles' | 'effects'>): string[] {
  const lines: string[] = [];
  const m = p.machine;
  if (m?.added.count) {
    const what = plural(m.added.count, 'new file or folder', 'new files and folders');
    lines.push(`${what} will be removed: ${sampleText(m.added)}.`);
  }
  if (m?.changed.count)
    lines.push(`${plural(m.changed.count, 'changed file')} will be reverted: ${sampleText(m.changed)}.`);
  if (m?.removed.count)
    lines.push(`${plural(m.removed.count, 'deleted file')} will come back: ${sampleText(m.removed)}.`);
  if (p.agentFiles?.count)
    lines.push(`Agent state will be put back: ${sampleText(p.agentFiles)} (entries added since are lost).`);
  if (!lines.length && !p.effects) lines.push('Nothing changed since this restore point.');
  lines.push('Snapshots do not undo what the agent did outside this machine (emails sent, issues opened, payments).');
  return lines;
}

/** "main 3c1d2e4", "detached 9a8b7c6" (restorePoint.preview GitHead). */
function headText(h: GitHead | undefined): string {
  if (!h) return 'none';
  const where = h.ref ? h.ref.replace(/^refs\/heads\//, '') : 'detached';
  return `${where} ${h.commit ? h.commit.slice(0, 7) : '(no commits)'}`;
}

/** One sentence per git repository whose HEAD or branches the restore changes (restorePoint.preview `gitRepos`). */
export function describeGitRepos(repos: readonly GitRepoChange[]): string[] {
  return repos.map((r) => {
    const repo = `Git repository ${r.path}`;
    if (r.effect === 'removed') {
      return `${repo} was made since then and will be deleted (HEAD ${headText(r.head.current)}).`;
    }
    if (r.effect === 'brought-back') {
      return `${repo} was deleted since then and will come back (HEAD ${headText(r.head.restored)}).`;
    }
    const branches = r.branches.map((b) =>
      b.restored ? `${b.name} → ${b.restored.slice(0, 7)}` : `${b.name} deleted`,
    );
    const head = `HEAD ${headText(r.head.current)} → ${headText(r.head.restored)}`;
    const which = branches.length ? ` (branches: ${branches.join(', ')})` : '';
    return `${repo}: ${head}${which}; commits made since leave it.${r.note ? ` ${r.note}` : ''}`;
  });
}

/**
 * What a restore does to the agent's memory and what it cannot undo, from restorePoint.preview
 * (the sidecar's rule: entries learned since are lost unless the scope is machine, which keeps them;
 * entries removed since come back; the outside-world actions since are never undone). Lines for a
 * confirmation dialog; empty when there is nothing to say.
 */
export function describeMemoryLoss(p: Pick<RestorePreview, 'memory' | 'actions'>): string[] {
  const lines: string[] = [];
  const first = (t?: string): string => entryTitle(t ?? '', 70);
  const list = (s: EntrySample): void => {
    for (const e of s.items.slice(0, 5)) lines.push(`  • ${first(e.text)}`);
    if (s.count > 5) lines.push(`  … and ${s.count - 5} more`);
  };
  const m = p.memory;
  if (m?.lost.count) {
    lines.push(`${plural(m.lost.count, 'memory entry', 'memory entries')} learned since then will be lost:`);
    list(m.lost);
  }
  if (m?.broughtBack.count) {
    lines.push(
      `${plural(m.broughtBack.count, 'memory entry', 'memory entries')} removed or changed since then will come back:`,
    );
    list(m.broughtBack);
  }
  if (m?.kept.count) {
    const n = plural(m.kept.count, 'memory entry', 'memory entries');
    lines.push(`${n} learned since then stay (scope machine keeps the current memory).`);
  }
  const acts = p.actions;
  if (acts.count) {
    lines.push(`${plural(acts.count, 'action', 'actions')} the agent took since then will NOT be undone:`);
    for (const a of acts.items.slice(0, 5))
      lines.push(`  • ${oneLine(a.message ?? a.action, 90)}${a.time ? ` (${formatAge(a.time)})` : ''}`);
    if (acts.count > 5) lines.push(`  … and ${acts.count - 5} more`);
  }
  return lines;
}

/**
 * The whole detail of a restore confirmation for a directory target, from restorePoint.preview:
 * files, git repositories, memory, outside-world actions, then the preview's warnings.
 */
export function describePreview(p: RestorePreview): string[] {
  const notes = p.warnings.map((w) => `Note: ${w}`);
  return [...describeLoss(p), ...describeGitRepos(p.gitRepos), ...describeMemoryLoss(p), ...notes];
}

/** Human names of the restore scopes, for pickers and messages. */
export const SCOPE_LABELS: Record<Scope, string> = {
  both: 'Machine + agent state',
  machine: 'Machine only (keep current memory)',
  agent: 'Agent state only',
};

/** First line of a memory entry for the extension's tree and pickers: firstLine, 80 characters by default. */
export function entryTitle(text: string, max = 80): string {
  return firstLine(text, max);
}

/**
 * Short name of a target for the tree: its backend's display name (target.describe `name`: the
 * folder name of a directory target, "VM 101" for a guest), else the target string.
 */
export function targetName(target: string, d?: Pick<TargetDescription, 'name'>): string {
  return d?.name || target;
}

/**
 * Label to show for a restore point. A pre-restore point whose label is the sidecar's default
 * ("Before restoring <id>") names the restored point by its label instead of its id, when known.
 */
export function displayLabel(
  rp: Pick<RestorePoint, 'label' | 'id' | 'kind' | 'restoredFrom'>,
  labelsById: ReadonlyMap<string, string>,
): string {
  if (rp.kind === 'pre-restore' && rp.restoredFrom && rp.label === `Before restoring ${rp.restoredFrom}`) {
    const from = labelsById.get(rp.restoredFrom);
    if (from) return `Before restoring "${from}"`;
  }
  return rp.label || rp.id;
}

/**
 * One terminal command line for a CodeLens command. A lens over a block of consecutive risky lines
 * carries the block's commands joined by "\n": they run as `a && b && c`, so the first failure
 * stops the block (as `set -e` would) and its exit code is the one reported.
 */
export function commandLine(text: string): string {
  const parts = text
    .split('\n')
    .map((s) => s.trim())
    .filter(Boolean);
  return parts.join(' && ');
}

/** One file of a compare view: a machine path (target-relative) or an agent-state file of a store. */
export interface CompareItem {
  /** As in ChangeSummary: target-relative path, or `<store>:<rel>` for agent state. */
  path: string;
  status: 'added' | 'removed' | 'changed';
  /**
   * For agent state: the store string, the store-relative path, and the store's local root when it
   * has one (StoreDescription.localRoot: where the file is on disk now).
   */
  agent?: { store: string; rel: string; localRoot?: string };
}

/**
 * A store as the extension knows it: its description from the sidecar (store.describe, agent.status,
 * memory.list), or only its string while no description has come (then nothing about it is known:
 * the extension never reads a store string itself).
 */
export type StoreRef = string | Pick<StoreDescription, 'store' | 'localRoot'>;

/** The store string of a StoreRef. */
export function storeOf(s: StoreRef): string {
  return typeof s === 'string' ? s : s.store;
}

/** The local root of a StoreRef (StoreDescription.localRoot), undefined when not local or not known. */
export function storeLocalRoot(s: StoreRef): string | undefined {
  return typeof s === 'string' ? undefined : s.localRoot;
}

/**
 * The files a compare view shows for a ChangeSummary, at most `max` (default 200) of `total`.
 * Directories (a path that is the ancestor of another listed path) are left out; agent-state files
 * come first (changed, added, removed), then machine files (changed, added, removed); a machine path
 * that is the same file as a listed agent-state file (a store inside the target's local root) is shown once,
 * as agent state. `stores` are the stores the restore points captured (to split `<store>:<rel>`), as
 * descriptions where known (their `localRoot` places a store inside the target);
 * `localRoot` is the target's local directory (target.describe `localRoot`; absent for VMs), which
 * machine paths are relative to.
 */
export function compareItems(
  changes: ChangeSummary,
  opts: { localRoot?: string; stores: readonly StoreRef[]; max?: number },
): { items: CompareItem[]; total: number } {
  const all = [...changes.added, ...changes.removed, ...changes.changed];
  const sorted = [...all].sort();
  const dirs = new Set<string>();
  for (let i = 0; i + 1 < sorted.length; i++) {
    // in sorted order, a directory's descendants follow it (possibly after siblings like "a.txt" < "a/")
    for (let j = i + 1; j < sorted.length; j++) {
      if (sorted[j]!.startsWith(sorted[i]! + '/')) {
        dirs.add(sorted[i]!);
        break;
      }
      if (!sorted[j]!.startsWith(sorted[i]!)) break;
    }
  }
  const root = opts.localRoot;
  const agentItems: CompareItem[] = [];
  const sameFile = new Set<string>();
  const byLength = [...opts.stores].sort((a, b) => storeOf(b).length - storeOf(a).length);
  const status = (p: string): CompareItem['status'] =>
    changes.added.includes(p) ? 'added' : changes.removed.includes(p) ? 'removed' : 'changed';
  for (const p of changes.agentChanged) {
    const ref = byLength.find((s) => p.startsWith(`${storeOf(s)}:`));
    if (ref === undefined) continue;
    const store = storeOf(ref);
    const rel = p.slice(store.length + 1);
    const sr = storeLocalRoot(ref);
    let st: CompareItem['status'] = 'changed';
    if (root && sr && (sr === root || sr.startsWith(root + '/'))) {
      const machinePath = [path.posix.relative(root.replace(/\\/g, '/'), sr.replace(/\\/g, '/')), rel]
        .filter(Boolean)
        .join('/');
      sameFile.add(machinePath);
      if (all.includes(machinePath)) st = status(machinePath);
    }
    agentItems.push({ path: p, status: st, agent: { store, rel, ...(sr ? { localRoot: sr } : {}) } });
  }
  const order = { changed: 0, added: 1, removed: 2 } as const;
  agentItems.sort((a, b) => order[a.status] - order[b.status] || a.path.localeCompare(b.path));
  const machine: CompareItem[] = [];
  for (const [list, st] of [
    [changes.changed, 'changed'],
    [changes.added, 'added'],
    [changes.removed, 'removed'],
  ] as const) {
    for (const p of list) if (!dirs.has(p) && !sameFile.has(p)) machine.push({ path: p, status: st });
  }
  const items = [...agentItems, ...machine];
  const max = opts.max ?? 200;
  return { items: items.slice(0, max), total: items.length };
}

/**
 * Where a compare item is on disk now (the "live" side of a compare view): under its store's local
 * root (StoreDescription.localRoot) for agent state, under the target's local root (target.describe
 * `localRoot`: dir: and btrfs: targets) for machine files. Undefined when the file is not local (a
 * VM's files, a store reached through an API, a store not described).
 */
export function livePath(localRoot: string | undefined, item: CompareItem): string | undefined {
  if (item.agent) {
    const root = item.agent.localRoot;
    return root ? path.join(root, ...item.agent.rel.split('/')) : undefined;
  }
  return localRoot ? path.join(localRoot, ...item.path.split('/')) : undefined;
}

/** A command for a notification: the one-line chain, cut to `max` characters with an ellipsis. */
export function shortCommand(text: string, max = 60): string {
  const line = commandLine(text);
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
