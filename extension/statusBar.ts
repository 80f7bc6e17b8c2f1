/**
 * The one status bar item: `$(history) 5m ago` = time since the newest restore point of the
 * configured agent (`$(history) no restore point` when none, `$(sync~spin) …` while creating or
 * restoring), with a `$(warning)` badge (warning background, the broken files and fixes in the
 * tooltip) while agent.status reports a store broken. Click: agentkeep.restore. Hidden while no agent
 * is configured.
 */
import * as vscode from 'vscode';
import type { RestorePoint } from '../sidecar/protocol';
import { readAgentConfig } from './config';
import { formatAge, shortReason, statusBarText } from './format';
import type { Sidecar } from './sidecar';
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
  }

  /** The text shown now (tests read it). */
  get text(): string {
    return this.item.text;
  }

  /** Re-read the newest restore point from the sidecar (agent.status) and render. */
  async update(): Promise<void> {
    const config = readAgentConfig();
    if (!config) {
      this.item.hide();
      return;
    }
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
    lines.push('Click to restore.');
    this.item.tooltip = lines.join('\n');
    const last = this.latest
      ? `last restore point ${formatAge(this.latest.createdAt)}, click to restore`
      : 'no restore point';
    const broken = this.broken.length ? `, ${this.broken.length} memory store broken` : '';
    this.item.accessibilityInformation = { label: `AgentKeep: ${last}${broken}` };
  }

  dispose(): void {
    clearInterval(this.timer);
    this.item.dispose();
  }
}
