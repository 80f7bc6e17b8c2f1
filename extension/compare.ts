/**
 * Compare views: what changed between two restore points (restorePoint.compare, e.g. the pre and
 * post of "Snapshot & run") or between a restore point and now (restorePoint.diff), shown in VS
 * Code's multi-file diff editor (`vscode.changes`). The "before"/"after" sides of a restore point
 * are `agentkeep-snapshot:` documents served by SnapshotContentProvider through restorePoint.readFile.
 */
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { ChangeSummary, RestorePoint } from '../sidecar/protocol';
import { compareItems, formatBytes, livePath, type CompareItem } from './format';
import type { Sidecar } from './sidecar';
import { toSidecarError } from './sidecar';

/** URI scheme of files as they were at a restore point. */
export const SNAPSHOT_SCHEME = 'agentkeep-snapshot';

/** What an `agentkeep-snapshot:` URI names (kept in its query as JSON). */
export interface SnapshotRef {
  target: string;
  /** Restore point id. */
  id: string;
  /** Target-relative path, or `<store>:<rel>` for agent state. */
  path: string;
}

/**
 * The URI of a file at a restore point: `agentkeep-snapshot:/<file path>?<json>`. The path part is
 * the file's path (the same on both sides of a compare, so the diff editor does not read it as a
 * rename) and ends with its name, so the editor picks the language from it; the restore point is in
 * the query.
 */
export function snapshotUri(ref: SnapshotRef): vscode.Uri {
  const shown = ref.path.includes(':') ? ref.path.slice(ref.path.lastIndexOf(':') + 1) : ref.path;
  return vscode.Uri.from({
    scheme: SNAPSHOT_SCHEME,
    path: `/${shown.replace(/^\/+/, '')}`,
    query: JSON.stringify(ref),
  });
}

/** Parse a snapshot URI. @throws Error naming the problem for a URI that was not made by snapshotUri. */
export function parseSnapshotUri(uri: vscode.Uri): SnapshotRef {
  try {
    const r = JSON.parse(uri.query) as Partial<SnapshotRef>;
    if (typeof r.target === 'string' && typeof r.id === 'string' && typeof r.path === 'string')
      return { target: r.target, id: r.id, path: r.path };
  } catch {
    /* fall through */
  }
  throw new Error(
    `${uri.toString()} is not an AgentKeep restore point file (its query must name target, id and path).`,
  );
}

/**
 * Serves `agentkeep-snapshot:` documents: the file's text at the restore point. Binary files, files
 * above the sidecar's 2 MiB cap and read errors are shown as one explanatory line instead of content.
 */
export class SnapshotContentProvider implements vscode.TextDocumentContentProvider {
  constructor(private readonly sidecar: Sidecar) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const ref = parseSnapshotUri(uri);
    try {
      const f = await this.sidecar.request('restorePointReadFile', { target: ref.target, id: ref.id, path: ref.path });
      switch (f.type) {
        case 'none':
        case 'directory':
          return '';
        case 'symlink':
          return `(symbolic link to ${f.content})\n`;
        default:
          return f.encoding === 'utf8' ? f.content : `(binary file, ${formatBytes(f.size)}: not shown)\n`;
      }
    } catch (e) {
      return `(AgentKeep could not read ${ref.path} at restore point ${ref.id}: ${toSidecarError(e).full()})\n`;
    }
  }
}

/** What a compare view showed (returned by the compare commands for tests). */
export interface CompareResult {
  title: string;
  changes: ChangeSummary;
  /** Rows opened in the multi-file diff editor: [resource, before, after] as URI strings. */
  rows: Array<[string, string | undefined, string | undefined]>;
  /** Files that differ (directories left out), of which rows.length are shown. */
  total: number;
}

/** The live URI of a compare item (a file on disk now, see livePath), or undefined when it is not local. */
function liveUri(localRoot: string | undefined, item: CompareItem): vscode.Uri | undefined {
  const p = livePath(localRoot, item);
  return p ? vscode.Uri.file(p) : undefined;
}

/** The local root of a target from the sidecar (undefined for VMs, or when it cannot say). */
async function localRootOf(sidecar: Sidecar, target: string): Promise<string | undefined> {
  return (await sidecar.describeTarget(target).catch(() => undefined))?.localRoot;
}

/** Whether restore point `rp` captured the agent-state file `rel` of `store`. */
function captured(rp: RestorePoint, store: string, rel: string): boolean {
  return rp.agent.some((a) => a.store === store && a.files.some((f) => f.path === rel));
}

/** Open `vscode.changes` with rows; an empty comparison shows a message instead. */
async function show(
  title: string,
  changes: ChangeSummary,
  rows: CompareResult['rows'],
  total: number,
): Promise<CompareResult> {
  if (!rows.length) {
    void vscode.window.showInformationMessage(`${title}: no file changed.`);
    return { title, changes, rows, total };
  }
  const shownTitle = total > rows.length ? `${title} (first ${rows.length} of ${total} files)` : title;
  await vscode.commands.executeCommand(
    'vscode.changes',
    shownTitle,
    rows.map(([r, a, b]) => [
      vscode.Uri.parse(r),
      a ? vscode.Uri.parse(a) : undefined,
      b ? vscode.Uri.parse(b) : undefined,
    ]),
  );
  return { title: shownTitle, changes, rows, total };
}

/**
 * Open what changed from restore point `from` to `to` (restorePoint.compare): each file's content at
 * `from` against its content at `to`; added files have no "before", removed ones no "after".
 */
export async function compareRestorePoints(
  sidecar: Sidecar,
  from: RestorePoint,
  to: RestorePoint,
  title?: string,
): Promise<CompareResult> {
  const changes = await sidecar.request('restorePointCompare', { target: to.target, from: from.id, to: to.id });
  const stores = await sidecar.describeStores([...new Set([...from.agent, ...to.agent].map((a) => a.store))]);
  const localRoot = await localRootOf(sidecar, to.target);
  const { items, total } = compareItems(changes, { localRoot, stores });
  for (const it of items) {
    // an agent-state file only one capture holds was added or removed between the two
    if (it.agent && !captured(from, it.agent.store, it.agent.rel)) it.status = 'added';
    else if (it.agent && !captured(to, it.agent.store, it.agent.rel)) it.status = 'removed';
  }
  const rows: CompareResult['rows'] = items.map((it) => {
    const before =
      it.status === 'added' ? undefined : snapshotUri({ target: from.target, id: from.id, path: it.path }).toString();
    const after =
      it.status === 'removed' ? undefined : snapshotUri({ target: to.target, id: to.id, path: it.path }).toString();
    const resource = liveUri(localRoot, it) ?? snapshotUri({ target: to.target, id: to.id, path: it.path });
    return [resource.toString(), before, after];
  });
  return show(title ?? `Changes: ${from.label} ↔ ${to.label}`, changes, rows, total);
}

/**
 * Open what changed since restore point `rp` (restorePoint.diff): each file at the restore point
 * against the file on disk now.
 */
export async function compareWithNow(sidecar: Sidecar, rp: RestorePoint, stores: string[]): Promise<CompareResult> {
  const changes = await sidecar.request('restorePointDiff', {
    target: rp.target,
    id: rp.id,
    stores: stores.length ? stores : undefined,
  });
  const localRoot = await localRootOf(sidecar, rp.target);
  const described = await sidecar.describeStores([...new Set([...rp.agent.map((a) => a.store), ...stores])]);
  const { items, total } = compareItems(changes, { localRoot, stores: described });
  const rows: CompareResult['rows'] = [];
  for (const it of items) {
    const live = liveUri(localRoot, it);
    if (!live) continue; // not a local file: nothing to show "now" with
    if (it.agent && !captured(rp, it.agent.store, it.agent.rel)) it.status = 'added';
    else if (it.agent && !fs.existsSync(live.fsPath)) it.status = 'removed';
    // diff: added = exists now only; removed = only in the restore point
    const before =
      it.status === 'added' ? undefined : snapshotUri({ target: rp.target, id: rp.id, path: it.path }).toString();
    const after = it.status === 'removed' ? undefined : live.toString();
    rows.push([live.toString(), before, after]);
  }
  return show(`Since ${rp.label}`, changes, rows, total);
}
