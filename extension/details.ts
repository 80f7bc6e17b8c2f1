/**
 * The "Restore point details" webview panel: one panel, reused. It loads out/webview.js (built from
 * webview-ui/main.ts) under a strict CSP with a nonce and exchanges the messages of
 * webview-ui/messages.ts: the extension sends `show`; buttons send restore/keep/delete, which run
 * the normal commands (with their confirmations).
 */
import * as vscode from 'vscode';
import type { ActionMessage, ShowMessage } from '../webview-ui/messages';
import { isTrusted, readAgentConfig } from './config';
import { displayLabel, formatAge, formatReason } from './format';
import { isPreWithoutPost, originView, preWithoutPostText } from './origin';
import type { Sidecar } from './sidecar';
import { toSidecarError } from './sidecar';
import { webviewHtml } from './webviewHtml';

/** The single "Restore point details" webview panel (see the module comment). */
export class DetailsPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private id: string | undefined;
  private ready = false;
  private pending: ShowMessage | undefined;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly sidecar: Sidecar,
  ) {}

  /** The id shown now (tests). */
  get shownId(): string | undefined {
    return this.panel ? this.id : undefined;
  }

  /** Open (or reveal) the panel for restore point `id`. Throws SidecarError when it does not exist. */
  async show(id: string): Promise<void> {
    const msg = await this.load(id);
    this.id = id;
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel('agentkeep.details', 'Restore point', vscode.ViewColumn.Active, {
        enableScripts: true,
        localResourceRoots: [vscode.Uri.joinPath(this.context.extensionUri, 'out')],
        retainContextWhenHidden: false,
      });
      this.ready = false;
      this.panel.webview.html = this.html(this.panel.webview);
      this.panel.webview.onDidReceiveMessage((m: ActionMessage) => void this.onMessage(m));
      this.panel.onDidDispose(() => {
        this.panel = undefined;
        this.ready = false;
      });
    } else {
      this.panel.reveal();
    }
    this.panel.title = `Restore point: ${msg.title}`;
    this.post(msg);
  }

  /** Re-read the shown restore point (after a change). */
  async refresh(): Promise<void> {
    if (!this.panel || !this.id) return;
    try {
      this.post(await this.load(this.id));
    } catch {
      this.panel.dispose(); // it was deleted
    }
  }

  private post(msg: ShowMessage): void {
    if (this.ready) void this.panel?.webview.postMessage(msg);
    else this.pending = msg;
  }

  private async load(id: string): Promise<ShowMessage> {
    const config = readAgentConfig();
    if (!config) throw toSidecarError(new Error('No agent is configured.'));
    const rps = await this.sidecar.request('restorePointList', { target: config.target });
    const rp = rps.find((r) => r.id === id);
    if (!rp) throw toSidecarError(new Error(`No restore point "${id}" for ${config.target}. Refresh the Agent view.`));
    const byId = new Map(rps.map((r) => [r.id, r.label]));
    const title = displayLabel(rp, byId);
    const from = rp.restoredFrom ? byId.get(rp.restoredFrom) : undefined;
    const reason =
      rp.kind === 'pre-restore' && from && !rp.reason
        ? `Captured automatically before restoring "${from}", so that restore can be undone.`
        : formatReason(rp);
    const msg: ShowMessage = { type: 'show', rp, title, trusted: isTrusted(), age: formatAge(rp.createdAt), reason };
    const origin = originView(rp);
    if (origin) msg.origin = { who: origin.who, text: origin.text };
    if (isPreWithoutPost(rp, rps)) msg.withoutPost = preWithoutPostText(rp);
    try {
      msg.changes = await this.sidecar.request('restorePointDiff', {
        target: config.target,
        id,
        stores: config.stores,
      });
    } catch (e) {
      msg.diffError = toSidecarError(e).full();
    }
    return msg;
  }

  private async onMessage(m: ActionMessage): Promise<void> {
    switch (m.type) {
      case 'ready':
        this.ready = true;
        if (this.pending) {
          void this.panel?.webview.postMessage(this.pending);
          this.pending = undefined;
        }
        return;
      case 'restore':
        await vscode.commands.executeCommand('agentkeep.restore', this.id, m.scope);
        break;
      case 'keep':
        await vscode.commands.executeCommand('agentkeep.keep', this.id);
        break;
      case 'delete':
        await vscode.commands.executeCommand('agentkeep.deleteRestorePoint', this.id);
        break;
      case 'refresh':
        break;
    }
    await this.refresh();
  }

  private html(webview: vscode.Webview): string {
    return webviewHtml(webview, this.context.extensionUri, {
      script: 'webview.js',
      title: 'Restore point',
      css: DETAILS_CSS,
      loading: 'Loading…',
    });
  }

  dispose(): void {
    this.panel?.dispose();
  }
}

/** The details panel's stylesheet (VS Code theme variables). */
const DETAILS_CSS = `
  body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); background: var(--vscode-editor-background); padding: 0 20px 20px; line-height: 1.45; }
  h1 { font-size: 1.5em; font-weight: 600; margin: 16px 0 4px; }
  h3 { font-size: 1em; font-weight: 600; margin: 10px 0 2px; word-break: break-all; }
  h2 { font-size: 1.1em; font-weight: 600; margin: 20px 0 6px; border-bottom: 1px solid var(--vscode-panel-border, transparent); padding-bottom: 4px; }
  .sub { color: var(--vscode-descriptionForeground); }
  code { font-family: var(--vscode-editor-font-family); background: var(--vscode-textCodeBlock-background); padding: 1px 4px; border-radius: 3px; }
  dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
  dt { color: var(--vscode-descriptionForeground); }
  dd { margin: 0; }
  ul { margin: 4px 0; padding-left: 20px; }
  li { font-family: var(--vscode-editor-font-family); font-size: 0.95em; }
  .actions { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 14px 0; }
  button { font-family: inherit; font-size: inherit; border: 1px solid var(--vscode-button-border, transparent); padding: 4px 12px; border-radius: 2px; cursor: pointer; color: var(--vscode-button-foreground); background: var(--vscode-button-background); }
  button:hover { background: var(--vscode-button-hoverBackground); }
  button.secondary { color: var(--vscode-button-secondaryForeground); background: var(--vscode-button-secondaryBackground); }
  button.secondary:hover { background: var(--vscode-button-secondaryHoverBackground); }
  button:disabled { opacity: 0.5; cursor: default; }
  button:focus-visible, select:focus-visible { outline: 1px solid var(--vscode-focusBorder); outline-offset: 2px; }
  select { font-family: inherit; font-size: inherit; color: var(--vscode-dropdown-foreground); background: var(--vscode-dropdown-background); border: 1px solid var(--vscode-dropdown-border); padding: 3px 4px; }
  .note { color: var(--vscode-descriptionForeground); font-size: 0.95em; }
  .error { color: var(--vscode-errorForeground); }
  .warning { border-left: 3px solid var(--vscode-editorWarning-foreground); padding: 4px 10px; background: var(--vscode-inputValidation-warningBackground, transparent); }
  .badge { display: inline-block; padding: 0 6px; border-radius: 8px; background: var(--vscode-badge-background); color: var(--vscode-badge-foreground); font-size: 0.85em; margin-left: 6px; vertical-align: middle; }
`;
