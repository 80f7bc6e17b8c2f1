/**
 * Agent memory in the editor: the memory inspector webview panel (webview-ui/memory, bundled to
 * out/memory.js) and the memory commands it shares with the Agent view:
 *   agentkeep.openMemoryInspector({store, id}? | treeNode)        -> void (selects that entry)
 *   agentkeep.editMemoryEntry({store, id} | treeNode, text?, {expectedHash?}) -> MemoryChange (asks for the text when absent)
 *   agentkeep.deleteMemoryEntry({store, id} | treeNode, {confirm?}) -> MemoryChange
 *   agentkeep.undoMemoryChange(MemoryUndo)                         -> the memory.edit / memory.add result
 *   agentkeep.diffMemory(store? | treeNode, restorePointId?)       -> MemoryDiffResult (quick pick when no id)
 *   agentkeep.openSessionMessages({store, id, trace})              -> the URI of the opened document
 * Edits and deletes go through the sidecar (memory.edit / memory.remove) with the content hash that
 * memory.show read (compare-and-swap: when the agent wrote in between, the sidecar answers Conflict,
 * nothing is written, and the user is told and shown the new state). Each change offers Undo, which
 * applies the undo the sidecar returned. All of it needs a trusted workspace; the inspector is
 * read-only otherwise and says so.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { LintFinding, MemoryEntry, ParamsOf, Provenance, ResultOf } from '../sidecar/protocol';
import type { FromInspector, StateMessage, StoreView, ToInspector } from '../webview-ui/memory/messages';
import { guarded, type Ctx } from './commands';
import { snapshotUri } from './compare';
import { isTrusted, readAgentConfig, requireTrust, type AgentConfig } from './config';
import { entryTitle, formatAge } from './format';
import { showWithActions } from './actions';
import type { Sidecar } from './sidecar';
import { SidecarError, toSidecarError } from './sidecar';
import { webviewHtml } from './webviewHtml';

/** What undoes a memory change: the memory.edit or memory.add params the sidecar returned. */
export type MemoryUndo =
  { kind: 'edit'; params: ParamsOf<'memoryEdit'> } | { kind: 'add'; params: ParamsOf<'memoryAdd'> };

/** What an edit or delete did (returned by the commands, for tests and other extensions). */
export interface MemoryChange {
  action: 'edit' | 'delete';
  store: string;
  /** The entry as written (edit) or as it was (delete). */
  entry: MemoryEntry;
  undo: MemoryUndo;
}

/** What agentkeep.diffMemory opened: [live file, file at the restore point] as URI strings. */
export interface MemoryDiffResult {
  restorePoint: string;
  rows: Array<[string, string]>;
  /**
   * What the diff could not show, shown as a warning next to it: memory.diff `warnings` (files broken
   * on one side, their entries not compared) and live files left out because they are broken now.
   */
  warnings?: string[];
}

/** What the inspector webview reported after its last render (see FromInspector "rendered"). */
export type InspectorRendered = Omit<Extract<FromInspector, { type: 'rendered' }>, 'type'>;

/** An entry as the commands accept it: a tree node of kind entry, or {store, id}. */
export interface EntryRef {
  store: string;
  id: string;
}

/** URI scheme of the read-only "session messages" documents opened from a provenance trace. */
export const TRACE_SCHEME = 'agentkeep-trace';
/** Scheme of the virtual documents of a lint --fix proposal (before / after of each file) in the diff editor. */
export const FIX_SCHEME = 'agentkeep-fix';

/** What the "Fix findings" flow did (returned to tests through the command). */
export interface LintFixOutcome {
  proposal: ResultOf<'memoryLintFix'>;
  /** The diff editor's documents: [before, after] URIs per file. */
  docs: Array<[string, string]>;
  applied?: ResultOf<'memoryLintFix'>;
}

/** Store, list and lint data the inspector and the tree both show. */
export interface MemoryState {
  stores: StoreView[];
  findings: LintFinding[];
  lintNote?: string;
}

/**
 * Read every configured store (memory.list, one call per store so one broken store does not hide the
 * others) and the lint findings (memory.lint). A sidecar without lint answers Unsupported: then
 * `findings` is empty and `lintNote` says why.
 */
export async function loadMemoryState(sidecar: Sidecar, config: AgentConfig): Promise<MemoryState> {
  const stores = await Promise.all(
    config.stores.map(async (store): Promise<StoreView> => {
      try {
        const r = await sidecar.request('memoryList', { stores: [store] });
        sidecar.rememberStoreDescriptions(r.descriptions ?? []);
        const description = r.descriptions?.[0] ?? sidecar.knownStoreDescription(store);
        return { store, files: r.stores, ...(description ? { description } : {}) };
      } catch (e) {
        const description = await sidecar.describeStore(store).catch(() => undefined);
        return { store, files: [], error: toSidecarError(e).full(), ...(description ? { description } : {}) };
      }
    }),
  );
  const lint = await lintStores(sidecar, config);
  return { stores, ...lint };
}

/** memory.lint over the configured stores; Unsupported or any failure becomes a note instead of findings. */
export async function lintStores(
  sidecar: Sidecar,
  config: AgentConfig,
): Promise<{ findings: LintFinding[]; lintNote?: string }> {
  if (!config.stores.length) return { findings: [] };
  try {
    return {
      findings: (await sidecar.request('memoryLint', { stores: config.stores, target: config.target })).findings,
    };
  } catch (e) {
    const err = toSidecarError(e);
    return {
      findings: [],
      lintNote:
        err.code === 'unsupported' ? `Lint findings are not available: ${err.message}` : `Lint failed: ${err.full()}`,
    };
  }
}

/** Findings that name entry `id`. */
export function findingsFor(findings: readonly LintFinding[], id: string): LintFinding[] {
  return findings.filter((f) => f.entries.includes(id));
}

function noConfig(): never {
  throw new SidecarError(
    'No agent is configured.',
    'no_agent',
    'Run "AgentKeep: Set Up Demo Agent" or "AgentKeep: Pick Agent Folder…", or set agentkeep.target and agentkeep.stores.',
  );
}

/** The entry a command argument names: {store, id}, or an Agent view entry node. */
export function toEntryRef(arg: unknown): EntryRef | undefined {
  if (!arg || typeof arg !== 'object') return undefined;
  const a = arg as { kind?: string; store?: unknown; id?: unknown };
  if (typeof a.store === 'string' && typeof a.id === 'string') return { store: a.store, id: a.id };
  return undefined;
}

/** The message of a change's notification: the entry's first line, quoted. */
function quoted(e: MemoryEntry): string {
  return `"${entryTitle(e.text, 60)}"`;
}

/**
 * The memory inspector panel and the memory operations. One panel, reused. The panel follows
 * `agentkeep/changed` (what: memory) through refresh().
 */
export class MemoryInspector implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private ready = false;
  private queue: ToInspector[] = [];
  private selected: EntryRef | undefined;
  /** What the webview reported after its last render. */
  rendered: InspectorRendered | undefined;
  /** Documents of the "Open session messages" links, by URI. */
  private readonly traceDocs = new Map<string, string>();
  private readonly disposables: vscode.Disposable[] = [];
  /** Documents of the lint --fix diff editor, by URI. */
  private readonly fixDocs = new Map<string, string>();
  /** Test hook: answer the "Apply?" question of lint --fix instead of asking (true = Apply). */
  answerFix: ((p: ResultOf<'memoryLintFix'>) => Promise<boolean>) | undefined;
  /** Test hook: instead of showing the Undo notification, call this with the change. */
  onChange: ((c: MemoryChange) => void) | undefined;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly sidecar: Sidecar,
    private readonly output: vscode.OutputChannel,
    /** Called after a change, and on the inspector's Refresh, so the Agent view and the status bar re-read. */
    private readonly afterChange: () => void,
  ) {
    this.disposables.push(
      vscode.workspace.registerTextDocumentContentProvider(TRACE_SCHEME, {
        provideTextDocumentContent: (uri) =>
          this.traceDocs.get(uri.toString()) ??
          '(This session document is no longer available: open it again from the memory inspector.)\n',
      }),
      vscode.workspace.registerTextDocumentContentProvider(FIX_SCHEME, {
        provideTextDocumentContent: (uri) =>
          this.fixDocs.get(uri.toString()) ?? '(This proposal is no longer available: run Fix findings again.)\n',
      }),
    );
  }

  /** Switch the webview to the entry list or the Timeline (and show one write there). */
  showView(view: 'list' | 'timeline', write?: { store: string; id: string }): void {
    this.post({ type: 'view', view, ...(write ? { write } : {}) });
  }

  /** Whether the panel is open. */
  get isOpen(): boolean {
    return !!this.panel;
  }

  /** Open (or reveal) the inspector; select `ref` when given. */
  async open(ref?: EntryRef): Promise<void> {
    const config = readAgentConfig() ?? noConfig();
    if (ref) this.selected = ref;
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel('agentkeep.memory', 'Agent memory', vscode.ViewColumn.Active, {
        enableScripts: true,
        localResourceRoots: [vscode.Uri.joinPath(this.context.extensionUri, 'out')],
        retainContextWhenHidden: true,
      });
      this.ready = false;
      this.rendered = undefined;
      this.panel.webview.html = this.html(this.panel.webview);
      this.panel.webview.onDidReceiveMessage(
        (m: FromInspector) =>
          void this.onMessage(m).catch((e) => this.output.appendLine(`[memory] ${m.type}: ${String(e)}`)),
      );
      this.panel.onDidDispose(() => {
        this.panel = undefined;
        this.ready = false;
        this.queue = [];
      });
    } else {
      this.panel.reveal();
    }
    await this.sendState(config);
  }

  /** Re-read the stores and the selected entry (after a change by us or by the agent). */
  async refresh(): Promise<void> {
    const config = readAgentConfig();
    if (!this.panel || !config) return;
    await this.sendState(config);
  }

  private async sendState(config: AgentConfig): Promise<void> {
    const state = await loadMemoryState(this.sidecar, config);
    let restorePoints = 0;
    try {
      const rps = await this.sidecar.request('restorePointList', { target: config.target });
      restorePoints = rps.filter((rp) => rp.agent.length > 0).length;
    } catch {
      /* the list shows the store errors; diff will say what is wrong */
    }
    const sel = this.selected;
    const exists =
      sel &&
      state.stores.some((s) => s.store === sel.store && s.files.some((f) => f.entries.some((e) => e.id === sel.id)));
    let history: StateMessage['history'];
    let historyNote: string | undefined;
    if (config.stores.length) {
      try {
        const h = await this.sidecar.request('memoryHistory', { stores: config.stores, target: config.target });
        history = h.writes;
        if (h.warnings?.length) historyNote = h.warnings.join(' ');
      } catch (e) {
        historyNote = `The timeline could not be read: ${toSidecarError(e).full()}`;
      }
    }
    const msg: StateMessage = {
      type: 'state',
      ...state,
      ...(history ? { history } : {}),
      ...(historyNote ? { historyNote } : {}),
      trusted: isTrusted(),
      restorePoints,
      select: exists ? sel : undefined,
    };
    this.post(msg);
    if (sel && exists) await this.sendDetail(sel);
  }

  private async sendDetail(ref: EntryRef): Promise<ResultOf<'memoryShow'> | undefined> {
    try {
      const show = await this.sidecar.request('memoryShow', { stores: [ref.store], entry: ref.id });
      this.post({ type: 'detail', store: ref.store, id: ref.id, show });
      return show;
    } catch (e) {
      this.post({ type: 'detail', store: ref.store, id: ref.id, error: toSidecarError(e).full() });
      return undefined;
    }
  }

  private post(msg: ToInspector): void {
    if (this.ready) void this.panel?.webview.postMessage(msg);
    else this.queue.push(msg);
  }

  private async onMessage(m: FromInspector): Promise<void> {
    switch (m.type) {
      case 'ready':
        this.ready = true;
        for (const q of this.queue.splice(0)) void this.panel?.webview.postMessage(q);
        return;
      case 'rendered': {
        const { type: _t, ...r } = m;
        this.rendered = r;
        return;
      }
      case 'refresh':
        this.afterChange(); // the Agent view and the status bar re-read too (e.g. a file broken since)
        await this.refresh();
        return;
      case 'select':
        this.selected = { store: m.store, id: m.id };
        await this.sendDetail(this.selected);
        return;
      case 'edit':
      case 'delete': {
        const run =
          m.type === 'edit'
            ? () => this.edit({ store: m.store, id: m.id }, m.text, m.expectedHash)
            : () => this.remove({ store: m.store, id: m.id }, { expectedHash: m.expectedHash });
        try {
          const c = await run();
          if (c && c.action === 'edit') this.selected = { store: c.store, id: c.entry.id };
        } catch (e) {
          const err = toSidecarError(e);
          this.post({
            type: 'notice',
            severity: err.code === 'conflict' ? 'warning' : 'error',
            text: err.code === 'conflict' ? conflictText : err.full(),
          });
          if (err.code !== 'conflict') void showWithActions(vscode.window.showErrorMessage, err.full(), err.actions);
        }
        await this.refresh();
        return;
      }
      case 'openSession':
        await this.openSession({ store: m.store, id: m.id }, m.trace);
        return;
      case 'diff':
        await vscode.commands.executeCommand('agentkeep.diffMemory', m.store);
        return;
      case 'undoWrite':
        try {
          requireTrust('Undoing a memory write');
          const r = await this.sidecar.request('memoryUndoWrite', { stores: [m.store], write: m.write });
          this.post({
            type: 'notice',
            severity: 'info',
            text: `Undid ${m.write}${r.writes.length ? ` (undo write ${r.writes.map((w) => w.id).join(', ')}: it can be undone the same way)` : ''}.${r.skipped?.length ? ` ${r.skipped.join(' ')}` : ''}`,
          });
        } catch (e) {
          const err = toSidecarError(e);
          this.post({ type: 'notice', severity: err.code === 'conflict' ? 'warning' : 'error', text: err.full() });
        }
        this.afterChange();
        await this.refresh();
        return;
      case 'lintFix':
        await vscode.commands.executeCommand('agentkeep.fixMemoryFindings');
        return;
    }
  }

  /**
   * Replace the text of entry `ref` (memory.edit). `expectedHash` is the content hash memory.show
   * read; when absent, memory.show is asked now. Conflict (the agent changed the file since): the
   * user is warned, nothing is written, the inspector reloads, and the SidecarError is rethrown.
   * @throws SidecarError (untrusted, conflict, entry_not_found, over_budget, unsupported, ...)
   */
  async edit(ref: EntryRef, text: string, expectedHash?: string): Promise<MemoryChange> {
    requireTrust('Editing agent memory');
    if (!text.trim())
      throw new SidecarError(
        'The new text of the memory entry is empty.',
        'invalid_params',
        "Type the entry's new text, or use Delete to remove it.",
      );
    const hash =
      expectedHash ?? (await this.sidecar.request('memoryShow', { stores: [ref.store], entry: ref.id })).contentHash;
    let r: ResultOf<'memoryEdit'>;
    try {
      r = await this.sidecar.request('memoryEdit', { store: ref.store, entry: ref.id, text, expectedHash: hash });
    } catch (e) {
      throw await this.onConflict(e);
    }
    const change: MemoryChange = {
      action: 'edit',
      store: ref.store,
      entry: r.entry,
      undo: { kind: 'edit', params: r.undo },
    };
    this.changed(change, `Memory entry edited: ${quoted(r.entry)}.`);
    return change;
  }

  /**
   * Delete entry `ref` (memory.remove), after a modal confirmation unless `confirm` is false.
   * Returns undefined when the user cancels. Conflict as for edit().
   * @throws SidecarError
   */
  async remove(
    ref: EntryRef,
    opts: { confirm?: boolean; expectedHash?: string } = {},
  ): Promise<MemoryChange | undefined> {
    requireTrust('Deleting agent memory');
    const show = await this.sidecar.request('memoryShow', { stores: [ref.store], entry: ref.id });
    if (opts.confirm !== false) {
      const answer = await vscode.window.showWarningMessage(
        `Delete this memory entry from ${path.basename(show.file.file)}?`,
        {
          modal: true,
          detail: `${show.entry.text}\n\nThe agent forgets it at its next session. You can undo right after.`,
        },
        'Delete',
      );
      if (answer !== 'Delete') return undefined;
    }
    let r: ResultOf<'memoryRemove'>;
    try {
      r = await this.sidecar.request('memoryRemove', {
        store: ref.store,
        entry: ref.id,
        expectedHash: opts.expectedHash ?? show.contentHash,
      });
    } catch (e) {
      throw await this.onConflict(e);
    }
    if (this.selected?.id === ref.id) this.selected = undefined;
    const change: MemoryChange = {
      action: 'delete',
      store: ref.store,
      entry: r.removed,
      undo: { kind: 'add', params: r.undo },
    };
    this.changed(change, `Memory entry deleted: ${quoted(r.removed)}.`);
    return change;
  }

  /** Apply an undo (memory.edit or memory.add). @throws SidecarError */
  async undo(u: MemoryUndo): Promise<ResultOf<'memoryEdit'> | ResultOf<'memoryAdd'>> {
    requireTrust('Undoing a memory change');
    const r =
      u.kind === 'edit'
        ? await this.sidecar.request('memoryEdit', u.params)
        : await this.sidecar.request('memoryAdd', u.params);
    if (this.selected && u.kind === 'edit' && 'entry' in r) this.selected = { store: u.params.store, id: r.entry.id };
    this.afterChange();
    await this.refresh();
    return r;
  }

  private async onConflict(e: unknown): Promise<SidecarError> {
    const err = toSidecarError(e);
    if (err.code === 'conflict') {
      void vscode.window.showWarningMessage(conflictText);
      this.afterChange();
      await this.refresh();
    }
    return err;
  }

  private changed(change: MemoryChange, text: string): void {
    this.output.appendLine(`[memory] ${change.action} ${change.store} ${change.entry.id}`);
    this.afterChange();
    if (this.onChange) {
      this.onChange(change);
      return;
    }
    void vscode.window.showInformationMessage(text, 'Undo').then(async (b) => {
      if (b !== 'Undo') return;
      try {
        await this.undo(change.undo);
        void vscode.window.showInformationMessage(
          change.action === 'edit' ? 'Edit undone.' : 'Delete undone: the entry is back.',
        );
      } catch (e) {
        const err = toSidecarError(e);
        void showWithActions(vscode.window.showErrorMessage, `Undo failed: ${err.full()}`, err.actions);
      }
    });
  }

  /**
   * Open trace number `trace` of entry `ref` as a read-only document. The sidecar has no method that
   * reads a whole session yet, so the document holds what the provenance trace recorded: session,
   * source, time and the message (the `memory` tool call) that added or replaced the entry.
   * @throws SidecarError when the entry or the trace does not exist
   */
  async openSession(ref: EntryRef, trace: number): Promise<vscode.Uri> {
    const show = await this.sidecar.request('memoryShow', { stores: [ref.store], entry: ref.id });
    const t = show.provenance.traces[trace];
    if (!t)
      throw new SidecarError(
        `Entry ${ref.id} has no provenance trace number ${trace + 1} (it has ${show.provenance.traces.length}).`,
        'entry_not_found',
        'Reopen the memory inspector: the entry changed.',
      );
    const uri = vscode.Uri.from({
      scheme: TRACE_SCHEME,
      path: `/session-${(t.session ?? 'unknown').replace(/[^\w.-]+/g, '_')}.md`,
      query: `${ref.id}-${trace}-${Date.now()}`,
    });
    this.traceDocs.set(uri.toString(), sessionDocument(show, t));
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: true, viewColumn: vscode.ViewColumn.Beside });
    return uri;
  }

  /**
   * Diff the text memory files of `store` at a restore point against now: each file as captured
   * (restorePoint.readFile `<store>:<rel>`) against the file on disk. One file: vscode.diff; several:
   * vscode.changes. `rpId` absent: a quick pick of the restore points that captured the store.
   * Returns undefined when the pick is cancelled.
   * @throws SidecarError when no restore point captured the store, or the store has no text files
   */
  async diff(store: string, rpId?: string): Promise<MemoryDiffResult | undefined> {
    const config = readAgentConfig() ?? noConfig();
    const rps = (await this.sidecar.request('restorePointList', { target: config.target })).filter((rp) =>
      rp.agent.some((a) => a.store === store),
    );
    if (!rps.length)
      throw new SidecarError(
        `No restore point of ${config.target} captured the memory of ${store}.`,
        'restore_point_not_found',
        'Create a restore point first (AgentKeep: Create Restore Point); it captures the configured stores.',
      );
    let rp = rpId ? rps.find((r) => r.id === rpId) : undefined;
    if (rpId && !rp)
      throw new SidecarError(
        `Restore point ${rpId} did not capture ${store}.`,
        'restore_point_not_found',
        'Pick one of the restore points that captured it (run the command without an id).',
      );
    if (!rp) {
      const pick = await vscode.window.showQuickPick(
        rps.map((r) => ({
          label: r.label || r.id,
          description: formatAge(r.createdAt),
          detail: `${r.agent.find((a) => a.store === store)?.files.length ?? 0} agent-state files · ${r.id}`,
          rp: r,
        })),
        {
          title: `Diff the memory of ${store} against which restore point?`,
          matchOnDescription: true,
          matchOnDetail: true,
        },
      );
      if (!pick) return undefined;
      rp = pick.rp;
    }
    // text files only (StoreDescription capability textFiles: Hermes MEMORY.md, USER.md, SOUL.md,
    // ARCHIVE.jsonl); a folder (Hermes skills/) is left out, as are databases and stores without local files
    const d = await this.sidecar.describeStore(store);
    const root = d.capabilities.textFiles ? d.localRoot : undefined;
    const captured = new Set(rp.agent.find((a) => a.store === store)?.files.map((f) => f.path) ?? []);
    const files = root ? (await this.sidecar.request('memoryList', { stores: [store] })).stores : [];
    const warnings = root ? await this.diffWarnings(config.target, rp.id, store) : [];
    const rels = new Set<string>();
    for (const f of files) {
      const rel = path.relative(root!, f.file).split(path.sep).join('/');
      if (!rel || rel.startsWith('..') || path.isAbsolute(rel)) continue;
      const live = fs.lstatSync(f.file, { throwIfNoEntry: false });
      // broken now and no file to open (a directory, a FIFO, a dangling link): left out, and said
      if (f.broken && live && !live.isFile()) {
        const fix = f.broken.hint ? ` Fix: ${f.broken.hint}` : '';
        warnings.push(`${rel} is not shown: it is broken now (${f.broken.message}${fix})`);
        continue;
      }
      if (captured.has(rel) || fs.statSync(f.file, { throwIfNoEntry: false })?.isFile()) rels.add(rel);
    }
    if (root && !rels.size && warnings.length) {
      const hint = files.find((f) => f.broken?.hint)?.broken?.hint;
      const what = `${store} has no text memory file that can be diffed now: ${warnings.join(' ')}`;
      throw new SidecarError(what, 'file_error', hint);
    }
    if (!root || !rels.size) {
      throw new SidecarError(
        `${store} has no text memory files to diff.`,
        'unsupported',
        'Use the CLI `agentkeep memory diff` for stores whose memory is a database or not local files.',
      );
    }
    const rows: MemoryDiffResult['rows'] = [...rels]
      .sort()
      .map((rel) => [
        vscode.Uri.file(path.join(root, ...rel.split('/'))).toString(),
        snapshotUri({ target: rp!.target, id: rp!.id, path: `${store}:${rel}` }).toString(),
      ]);
    const title = `Memory: ${rp.label || rp.id} ↔ now`;
    if (rows.length === 1) {
      const [live, old] = rows[0]!;
      await vscode.commands.executeCommand(
        'vscode.diff',
        vscode.Uri.parse(old),
        vscode.Uri.parse(live),
        `${path.basename(vscode.Uri.parse(live).fsPath)} (${title})`,
      );
    } else {
      await vscode.commands.executeCommand(
        'vscode.changes',
        title,
        rows.map(([live, old]) => [vscode.Uri.parse(live), vscode.Uri.parse(old), vscode.Uri.parse(live)]),
      );
    }
    if (warnings.length) void vscode.window.showWarningMessage(`Memory diff of ${store}: ${warnings.join(' ')}`);
    return { restorePoint: rp.id, rows, ...(warnings.length ? { warnings } : {}) };
  }

  /**
   * memory.diff's warnings for `store` against restore point `rpId` (files broken on one side, whose
   * entries were not compared); a memory.diff that fails on a broken file (a damaged history) is
   * one warning with its message and fix. [] when there is nothing to say.
   */
  private async diffWarnings(target: string, rpId: string, store: string): Promise<string[]> {
    try {
      return (await this.sidecar.request('memoryDiff', { target, from: rpId, stores: [store] })).warnings ?? [];
    } catch (e) {
      const err = toSidecarError(e);
      return err.code === 'file_error' ? [`The entries could not be compared: ${err.full()}`] : [];
    }
  }

  /**
   * memory.lintFix as a reviewed change: the proposal's files open in VS Code's diff editor (virtual
   * documents, before ↔ after), then a modal question; Apply sends the proposal's content hashes back
   * (refused when a file changed since), as one undo group. @throws SidecarError (untrusted, conflict, ...)
   */
  async lintFix(): Promise<LintFixOutcome | undefined> {
    requireTrust('Fixing memory findings');
    const config = readAgentConfig();
    if (!config?.stores.length) throw new SidecarError('No memory store is configured.', 'invalid_params');
    const base = { stores: config.stores, target: config.target };
    const proposal = await this.sidecar.request('memoryLintFix', base);
    if (!proposal.edits.length) {
      void vscode.window.showInformationMessage(
        `Nothing to fix: no duplicate or superseded entries.${proposal.skipped?.length ? ` Left to you: ${proposal.skipped.length} (contradictions).` : ''}`,
      );
      return { proposal, docs: [] };
    }
    const stamp = Date.now().toString(36);
    const docs: Array<[string, string]> = proposal.files.map((f, i) => {
      const name = path.basename(f.file);
      const before = vscode.Uri.from({ scheme: FIX_SCHEME, path: `/${stamp}/${i}/now/${name}` });
      const after = vscode.Uri.from({ scheme: FIX_SCHEME, path: `/${stamp}/${i}/fixed/${name}` });
      this.fixDocs.set(before.toString(), f.before);
      this.fixDocs.set(after.toString(), f.after);
      return [before.toString(), after.toString()];
    });
    const title = `Memory: fix ${proposal.edits.length} finding${proposal.edits.length === 1 ? '' : 's'} (now ↔ fixed)`;
    if (docs.length === 1)
      await vscode.commands.executeCommand(
        'vscode.diff',
        vscode.Uri.parse(docs[0]![0]),
        vscode.Uri.parse(docs[0]![1]),
        `${path.basename(proposal.files[0]!.file)} (${title})`,
      );
    else
      await vscode.commands.executeCommand(
        'vscode.changes',
        title,
        docs.map(([b, a]) => [vscode.Uri.parse(a), vscode.Uri.parse(b), vscode.Uri.parse(a)]),
      );
    const ask =
      this.answerFix ??
      (async (p: ResultOf<'memoryLintFix'>) =>
        (await vscode.window.showWarningMessage(
          `Apply ${p.edits.length} memory change${p.edits.length === 1 ? '' : 's'}?`,
          {
            modal: true,
            detail: p.edits
              .map((e) => `${e.action} ${e.entry}: ${e.reason}`)
              .join('\n')
              .slice(0, 2000),
          },
          'Apply',
        )) === 'Apply');
    if (!(await ask(proposal))) return { proposal, docs };
    const expected = Object.fromEntries(proposal.files.map((f) => [f.file, f.contentHash]));
    const applied = await this.sidecar.request('memoryLintFix', { ...base, apply: true, expected });
    this.afterChange();
    await this.refresh();
    void vscode.window.showInformationMessage(
      `Applied ${applied.edits.length} memory change${applied.edits.length === 1 ? '' : 's'} as one step (group ${applied.group}); undo it from the Timeline.`,
    );
    return { proposal, docs, applied };
  }

  private html(webview: vscode.Webview): string {
    return webviewHtml(webview, this.context.extensionUri, {
      script: 'memory.js',
      title: 'Agent memory',
      css: INSPECTOR_CSS,
      loading: 'Loading memory…',
    });
  }

  dispose(): void {
    this.panel?.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

/** Register the memory commands (see the module comment) on `inspector`; errors are shown like every command's. */
export function registerMemoryCommands(ctx: Ctx, inspector: MemoryInspector): vscode.Disposable[] {
  const reg = <A extends unknown[], R>(id: string, fn: (...args: A) => Promise<R>) =>
    vscode.commands.registerCommand(id, guarded(ctx, id, fn));
  const entryArg = async (arg: unknown, title: string): Promise<EntryRef | undefined> =>
    toEntryRef(arg) ?? pickEntry(ctx.sidecar, title);
  return [
    reg('agentkeep.openMemoryInspector', async (arg?: unknown) => inspector.open(toEntryRef(arg))),
    reg('agentkeep.fixMemoryFindings', async () => inspector.lintFix()),
    reg('agentkeep.editMemoryEntry', async (arg?: unknown, text?: string, opts?: { expectedHash?: string }) => {
      requireTrust('Editing agent memory');
      const ref = await entryArg(arg, 'Edit which memory entry?');
      if (!ref) return undefined;
      let newText = typeof text === 'string' ? text : undefined; // a tree context menu passes the selection here
      if (newText === undefined) {
        const show = await ctx.sidecar.request('memoryShow', { stores: [ref.store], entry: ref.id });
        newText = await vscode.window.showInputBox({
          title: `Edit memory entry (${path.basename(show.file.file)})`,
          value: show.entry.text,
          prompt: 'The new text of the entry. Saving checks that the agent did not change the file in between.',
          ignoreFocusOut: true,
        });
        if (newText === undefined || newText === show.entry.text) return undefined;
        return inspector.edit(ref, newText, show.contentHash);
      }
      return inspector.edit(ref, newText, opts?.expectedHash);
    }),
    reg('agentkeep.deleteMemoryEntry', async (arg?: unknown, opts?: { confirm?: boolean }) => {
      requireTrust('Deleting agent memory');
      const ref = await entryArg(arg, 'Delete which memory entry?');
      return ref ? inspector.remove(ref, { confirm: Array.isArray(opts) ? undefined : opts?.confirm }) : undefined;
    }),
    reg('agentkeep.undoMemoryChange', async (u: MemoryUndo) => inspector.undo(u)),
    reg('agentkeep.diffMemory', async (arg?: unknown, rpId?: string) => {
      const config = readAgentConfig() ?? noConfig();
      const store =
        typeof arg === 'string'
          ? arg
          : ((arg as { store?: string } | undefined)?.store ??
            (config.stores.length === 1
              ? config.stores[0]
              : await vscode.window.showQuickPick(config.stores, { title: 'Diff the memory of which store?' })));
      return store ? inspector.diff(store, typeof rpId === 'string' ? rpId : undefined) : undefined;
    }),
    reg('agentkeep.openSessionMessages', async (arg: EntryRef & { trace?: number }) =>
      (await inspector.openSession(arg, arg.trace ?? 0)).toString(),
    ),
  ];
}

/** Quick pick of an entry across the configured stores (commands run from the palette), broken files left out. */
async function pickEntry(sidecar: Sidecar, title: string): Promise<EntryRef | undefined> {
  const config = readAgentConfig() ?? noConfig();
  const { stores } = await loadMemoryState(sidecar, config);
  // entries of a broken file are not offered: AgentKeep refuses to write that file
  const files = stores.flatMap((s) => s.files.filter((f) => !f.broken).map((f) => ({ s, f })));
  const items = files.flatMap(({ s, f }) =>
    f.entries.map((e) => ({
      label: entryTitle(e.text),
      description: path.basename(f.file),
      detail: s.store,
      ref: { store: s.store, id: e.id },
    })),
  );
  if (!items.length)
    throw new SidecarError(
      'The configured stores hold no memory entries.',
      'entry_not_found',
      'Check agentkeep.stores, or open the memory inspector to see what each store holds.',
    );
  return (await vscode.window.showQuickPick(items, { title, matchOnDescription: true }))?.ref;
}

const conflictText =
  'The agent changed this memory file since you opened it, so nothing was written. The inspector now shows its current content: check it and edit again.';

/** The text of a "session messages" document for trace `t` of an entry. */
export function sessionDocument(show: ResultOf<'memoryShow'>, t: Provenance['traces'][number]): string {
  const lines = [
    `# Session ${t.session ?? '(unknown)'}`,
    '',
    `- Source: ${t.source ?? 'unknown'}`,
    `- Time: ${t.time ?? 'unknown'}`,
    `- Action on the memory: ${t.action}`,
    ...(t.messageId !== undefined ? [`- Message id: ${t.messageId}`] : []),
    `- Store: ${show.store}`,
    `- Entry: ${show.entry.id} in ${show.file.file}`,
    '',
    '## Message that wrote the entry',
    '',
    t.message ?? '(the trace recorded no message text)',
    '',
  ];
  if (t.previous) lines.push('## Text before this change', '', t.previous, '');
  lines.push(
    '## Entry now',
    '',
    show.entry.text,
    '',
    '---',
    "AgentKeep shows the message recorded by the provenance trace (from the store's session history, e.g. Hermes state.db). Reading the whole session needs a sidecar method that this version does not have.",
    '',
  );
  return lines.join('\n');
}

/** The inspector's stylesheet (VS Code theme variables; no external resources). */
const INSPECTOR_CSS = `
  body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); background: var(--vscode-editor-background); padding: 0 16px 16px; line-height: 1.45; }
  h1 { font-size: 1.4em; font-weight: 600; margin: 14px 0 2px; }
  h2 { font-size: 1.15em; font-weight: 600; margin: 4px 0 6px; overflow-wrap: anywhere; }
  h3 { font-size: 1em; font-weight: 600; margin: 14px 0 4px; border-bottom: 1px solid var(--vscode-panel-border, transparent); padding-bottom: 3px; }
  .sub, .note { color: var(--vscode-descriptionForeground); }
  .note { font-size: 0.95em; margin: 4px 0; }
  .error { color: var(--vscode-errorForeground); }
  .toolbar { display: flex; flex-wrap: wrap; gap: 8px; align-items: end; margin: 10px 0; }
  .toolbar label { display: flex; flex-direction: column; gap: 2px; font-size: 0.9em; color: var(--vscode-descriptionForeground); }
  .toolbar vscode-textfield { width: 260px; }
  .toolbar vscode-single-select { width: 170px; }
  .layout { display: grid; grid-template-columns: minmax(260px, 2fr) minmax(300px, 3fr); gap: 16px; align-items: start; }
  @media (max-width: 720px) { .layout { grid-template-columns: 1fr; } }
  .list { border: 1px solid var(--vscode-panel-border, var(--vscode-widget-border, transparent)); border-radius: 3px; max-height: calc(100vh - 190px); overflow: auto; }
  .file { padding: 6px 8px 4px; border-bottom: 1px solid var(--vscode-panel-border, transparent); background: var(--vscode-sideBarSectionHeader-background, transparent); position: sticky; top: 0; z-index: 1; }
  .file .name { font-weight: 600; }
  .file.broken { border-left: 3px solid var(--vscode-errorForeground); }
  .file .meta { color: var(--vscode-descriptionForeground); font-size: 0.9em; }
  .bar { height: 4px; margin-top: 4px; background: var(--vscode-input-background, rgba(128,128,128,0.2)); border-radius: 2px; overflow: hidden; }
  .bar > div { height: 100%; background: var(--vscode-progressBar-background, #0e70c0); }
  .bar.over > div { background: var(--vscode-errorForeground); }
  .bar.high > div { background: var(--vscode-editorWarning-foreground, #cca700); }
  button.entry { display: block; width: 100%; text-align: left; font: inherit; color: var(--vscode-foreground); background: transparent; border: 0; border-left: 2px solid transparent; padding: 5px 8px; cursor: pointer; }
  button.entry:hover { background: var(--vscode-list-hoverBackground); }
  button.entry[aria-selected="true"] { background: var(--vscode-list-inactiveSelectionBackground); color: var(--vscode-list-inactiveSelectionForeground, var(--vscode-foreground)); border-left-color: var(--vscode-focusBorder); }
  button.entry:focus-visible { outline: 1px solid var(--vscode-focusBorder); outline-offset: -1px; }
  .entry .text { display: block; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
  .entry .meta { display: block; color: var(--vscode-descriptionForeground); font-size: 0.88em; }
  .kind { display: inline-block; padding: 0 6px; margin-right: 4px; border-radius: 8px; font-size: 0.85em; background: var(--vscode-badge-background); color: var(--vscode-badge-foreground); }
  .kind.error { background: var(--vscode-inputValidation-errorBackground, #5a1d1d); color: var(--vscode-foreground); border: 1px solid var(--vscode-inputValidation-errorBorder, #be1100); }
  .kind.warning { background: var(--vscode-inputValidation-warningBackground, #352a05); color: var(--vscode-foreground); border: 1px solid var(--vscode-inputValidation-warningBorder, #b89500); }
  .detail { border: 1px solid var(--vscode-panel-border, var(--vscode-widget-border, transparent)); border-radius: 3px; padding: 10px 14px; min-height: 120px; max-height: calc(100vh - 190px); overflow: auto; }
  pre.text { white-space: pre-wrap; overflow-wrap: anywhere; font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); background: var(--vscode-textCodeBlock-background); padding: 8px 10px; border-radius: 3px; margin: 6px 0; }
  dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 0; }
  dt { color: var(--vscode-descriptionForeground); }
  dd { margin: 0; overflow-wrap: anywhere; }
  code { font-family: var(--vscode-editor-font-family); background: var(--vscode-textCodeBlock-background); padding: 1px 4px; border-radius: 3px; }
  ul { margin: 4px 0; padding-left: 20px; }
  .finding, .trace { margin: 8px 0; padding: 6px 10px; border-left: 3px solid var(--vscode-panel-border, #555); background: var(--vscode-editorWidget-background, transparent); }
  .finding.error { border-left-color: var(--vscode-errorForeground); }
  .finding.warning { border-left-color: var(--vscode-editorWarning-foreground, #cca700); }
  .trace .head { font-weight: 600; }
  .actions { display: flex; flex-wrap: wrap; gap: 8px; margin: 10px 0 4px; }
  .banner { padding: 6px 10px; margin: 8px 0; border-radius: 3px; border: 1px solid var(--vscode-inputValidation-infoBorder, #007acc); background: var(--vscode-inputValidation-infoBackground, transparent); }
  .banner.warning { border-color: var(--vscode-inputValidation-warningBorder, #b89500); background: var(--vscode-inputValidation-warningBackground, transparent); }
  .banner.error { border-color: var(--vscode-inputValidation-errorBorder, #be1100); background: var(--vscode-inputValidation-errorBackground, transparent); }
  vscode-textarea { width: 100%; }
  .empty { padding: 14px; color: var(--vscode-descriptionForeground); }
  .timeline-layout { grid-template-columns: minmax(520px, 3fr) minmax(280px, 2fr); }
  .timeline { border: 1px solid var(--vscode-panel-border, var(--vscode-widget-border, transparent)); border-radius: 3px; overflow: auto; max-height: calc(100vh - 220px); padding: 4px 6px; }
  .timeline .note { padding: 0 4px; }
  .timeline svg { display: block; font-family: var(--vscode-font-family); font-size: 12px; }
  .timeline .axis { fill: var(--vscode-descriptionForeground); font-size: 11px; }
  .timeline .tick { stroke: var(--vscode-panel-border, rgba(128,128,128,0.3)); stroke-dasharray: 2 3; }
  .timeline .band { fill: var(--vscode-list-hoverBackground, rgba(128,128,128,0.06)); opacity: 0.5; }
  .timeline .label { fill: var(--vscode-foreground); }
  .timeline .label.gone { fill: var(--vscode-descriptionForeground); text-decoration: line-through; }
  .timeline .life { stroke: var(--vscode-descriptionForeground); stroke-width: 1.5; opacity: 0.6; }
  .mark { cursor: pointer; }
  .mark circle, .mark path { stroke: var(--vscode-editor-background); stroke-width: 1.5; }
  .mark path.cross { stroke-width: 3; fill: none; }
  .mark.agent circle, .mark.agent path { fill: #3794ff; } .mark.agent path.cross { stroke: #3794ff; }
  .mark.hook circle, .mark.hook path { fill: #b180d7; } .mark.hook path.cross { stroke: #b180d7; }
  .mark.agentkeep circle, .mark.agentkeep path { fill: #89d185; } .mark.agentkeep path.cross { stroke: #89d185; }
  .mark.restore-point circle, .mark.restore-point path { fill: #cca700; } .mark.restore-point path.cross { stroke: #cca700; }
  .mark.refused { opacity: 0.45; }
  .mark.picked circle, .mark.picked path:not(.cross) { stroke: var(--vscode-focusBorder); stroke-width: 3; }
  .mark:focus-visible { outline: none; } .mark:focus-visible circle, .mark:focus-visible path { stroke: var(--vscode-focusBorder); stroke-width: 3; }
  .legend { display: flex; flex-wrap: wrap; gap: 12px; margin: 4px 0 8px; font-size: 0.92em; }
  .legend .key::before { content: ''; display: inline-block; width: 10px; height: 10px; border-radius: 5px; margin-right: 5px; vertical-align: -1px; }
  .legend .key.agent::before { background: #3794ff; } .legend .key.hook::before { background: #b180d7; }
  .legend .key.agentkeep::before { background: #89d185; } .legend .key.restore-point::before { background: #cca700; }
  pre.text.before { border-left: 3px solid var(--vscode-gitDecoration-deletedResourceForeground, #c74e39); }
  pre.text.after { border-left: 3px solid var(--vscode-gitDecoration-addedResourceForeground, #81b88b); }
`;
