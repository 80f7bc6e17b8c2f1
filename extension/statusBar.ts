/**
 * The one status bar item: `$(history) 5m ago` = time since the newest restore point of the
 * configured agent (`$(history) no restore point` when none, `$(sync~spin) …` while creating or
 * restoring), with a `$(warning)` badge (warning background, the broken files and fixes in the
 * tooltip) while agent.status reports a store broken. Click: agentkeep.restore. Hidden while no agent
 * is configured.
 *
 * With a remote sidecar (agentkeep.sidecar.url) the item also shows the link: `$(debug-disconnect)
 * AgentKeep: reconnecting…` while the connection is lost and retried (the error, the URL and when the
 * next try is in the tooltip; click: reconnect now), `$(debug-disconnect) AgentKeep: not connected`
 * for a problem a retry cannot fix (token, fingerprint, URL: the fix in the tooltip), and the URL in
 * the tooltip while connected.
 */
import * as vscode from 'vscode';
import type { RestorePoint } from '../sidecar/protocol';
import { readAgentConfig } from './config';
import { formatAge, shortReason, statusBarText } from './format';
import type { Connection, Sidecar } from './sidecar';
import { toSidecarError } from './sidecar';
import { brokenStoreLines } from './storeView';

/** The status bar item (see the module comment); update() re-reads the newest restore point. */
export class AgentStatusBar implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;
  private latest: RestorePoint | undefined;
  private busy: string | undefined;
  private error: string | undefined;
  /** One line per store agent.status reports broken (storeView.ts brokenStoreLines). */
  private broken: string[] = [];
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly sidecar: Sidecar) {
    this.item = vscode.window.createStatusBarItem('agentkeep.status', vscode.StatusBarAlignment.Left, 50);
    this.item.name = 'AgentKeep';
    this.item.command = 'agentkeep.restore';
    this.timer = setInterval(() => this.render(), 30_000);
    this.connectionSub = sidecar.onDidChangeConnection((c) => {
      // back: re-read the newest restore point; otherwise render only (a request here would try to
      // connect, and the link's backoff decides when that happens)
      if (c.kind === 'reconnecting' || c.kind === 'failed') this.linkWasDown = true;
      if (c.kind === 'connected' && this.linkWasDown && this.shown) {
        this.linkWasDown = false;
        void this.update();
      } else this.render();
    });
  }

  private readonly connectionSub: vscode.Disposable;
  private shown = false;
  private linkWasDown = false;

  /** The text shown now (tests read it). */
  get text(): string {
    return this.item.text;
  }

  /** Re-read the newest restore point from the sidecar (agent.status) and render. */
  async update(): Promise<void> {
    const config = readAgentConfig();
    if (!config) {
      this.shown = false;
      this.item.hide();
      return;
    }
    this.shown = true;
    try {
      const s = await this.sidecar.request('agentStatus', { target: config.target, stores: config.stores });
      this.latest = s.latest;
      this.error = s.reachable ? undefined : (s.message ?? 'The target is not reachable.');
      this.broken = brokenStoreLines(s.stores);
    } catch (e) {
      this.error = toSidecarError(e).full();
    }
    this.render();
    this.item.show();
  }

  /** Show a spinning icon with `text` until the returned function is called. */
  setBusy(text: string): () => void {
    this.busy = text;
    this.render();
    return () => {
      if (this.busy === text) this.busy = undefined;
      this.render();
    };
  }

  private render(): void {
    const link = this.sidecar.connection;
    if (this.renderLink(link)) return;
    this.item.command = 'agentkeep.restore';
    if (this.busy) {
      this.item.text = `$(sync~spin) ${this.busy}`;
      this.item.tooltip = this.busy;
      return;
    }
    this.item.text = `${statusBarText(this.latest)}${this.broken.length ? ' $(warning)' : ''}`;
    const warn = this.broken.length ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    this.item.backgroundColor = warn;
    const lines: string[] = [];
    if (this.latest) {
      lines.push(`Last restore point: ${this.latest.label} (${formatAge(this.latest.createdAt)})`);
      const reason = shortReason(this.latest);
      if (reason) lines.push(reason);
    } else {
      lines.push('No restore point of this agent yet.');
    }
    if (this.error) lines.push(`Warning: ${this.error}`);
    for (const b of this.broken) lines.push(`Warning: ${b}`);
    if (link.kind === 'connected') lines.push(`Sidecar: ${link.url} (remote)`);
    lines.push('Click to restore.');
    this.item.tooltip = lines.join('\n');
    const last = this.latest
      ? `last restore point ${formatAge(this.latest.createdAt)}, click to restore`
      : 'no restore point';
    const broken = this.broken.length ? `, ${this.broken.length} memory store broken` : '';
    this.item.accessibilityInformation = { label: `AgentKeep: ${last}${broken}` };
  }

  /** The remote link's trouble, when there is any: rendered instead of the restore point (true). */
  private renderLink(link: Connection): boolean {
    if (link.kind !== 'reconnecting' && link.kind !== 'failed') return false;
    this.item.backgroundColor = undefined;
    this.item.command = 'agentkeep.reconnectSidecar';
    if (link.kind === 'reconnecting') {
      this.item.text = '$(debug-disconnect) AgentKeep: reconnecting…';
      const secs = Math.max(1, Math.round(link.retryInMs / 1000));
      this.item.tooltip = [
        link.error.message,
        `Reconnecting to ${link.url}: try ${link.attempt + 1} in about ${secs} s.`,
        'Click to try now.',
      ].join('\n');
      this.item.accessibilityInformation = { label: `AgentKeep: connection to the sidecar lost, reconnecting` };
    } else {
      this.item.text = '$(debug-disconnect) AgentKeep: not connected';
      this.item.tooltip = [link.error.message, link.error.hint ?? '', 'Click to try again.'].filter(Boolean).join('\n');
      this.item.accessibilityInformation = { label: `AgentKeep: not connected to the sidecar. ${link.error.message}` };
    }
    if (this.shown) this.item.show();
    return true;
  }

  dispose(): void {
    this.connectionSub.dispose();
    clearInterval(this.timer);
    this.item.dispose();
  }
}
