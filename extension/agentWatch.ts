/**
 * Restore points and restore requests that appear without this window doing anything: the agent's
 * hooks, its MCP tools, apt and `agentkeep run` run in other processes, so the sidecar's `changed`
 * notification never tells this window about them. While the Agent view is visible or the
 * notification is switched on (`agentkeep.notifyAgentRestorePoints`, default off), every
 * WATCH_INTERVAL_MS the watcher lists the target's restore points and pending requests; when either
 * set of ids changed it refreshes the views, and with the setting on it notifies about restore
 * points the agent (or a hook acting for it) took since the last look, with a button to show one.
 */
import * as vscode from 'vscode';
import type { RestorePoint } from '../sidecar/protocol';
import { readAgentConfig } from './config';
import { agentRestorePointMessage, newAgentRestorePoints } from './origin';
import type { Sidecar } from './sidecar';

/** How often the watcher looks (ms). */
export const WATCH_INTERVAL_MS = 15_000;

/** The setting that switches the notification on. */
export const NOTIFY_SETTING = 'agentkeep.notifyAgentRestorePoints';

/** Whether the notification is on (default off). */
export function notifyEnabled(): boolean {
  return vscode.workspace.getConfiguration('agentkeep').get<boolean>('notifyAgentRestorePoints', false) === true;
}

/** A notification the watcher showed (tests). */
export interface AgentNotification {
  message: string;
  ids: string[];
}

/** See the module comment. */
export class AgentWatch implements vscode.Disposable {
  private timer: NodeJS.Timeout | undefined;
  private target: string | undefined;
  /** Restore point ids at the last look (undefined before the first one). */
  private known: Set<string> | undefined;
  private requests = '';
  private chain: Promise<void> = Promise.resolve();
  /** Notifications shown so far (tests). */
  readonly shown: AgentNotification[] = [];

  constructor(
    private readonly sidecar: Sidecar,
    private readonly onChange: () => void,
    private readonly show: (id: string) => Promise<void>,
    private readonly visible: () => boolean,
  ) {}

  /** Start or stop the timer as the view's visibility or the setting says. */
  update(): void {
    const want = !!readAgentConfig() && (this.visible() || notifyEnabled());
    if (want && !this.timer) this.timer = setInterval(() => void this.check(), WATCH_INTERVAL_MS);
    else if (!want && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /**
   * Look once: list restore points and pending requests; refresh the views when something changed;
   * notify (setting on) about the agent's new restore points. Resolves with those new ones.
   * Errors are not shown (the Agent view shows them on its own refresh).
   */
  check(): Promise<RestorePoint[]> {
    // one look at a time: a caller while one runs gets the next one (so it sees what is there now)
    const next = this.chain.then(() => this.look());
    this.chain = next.then(
      () => undefined,
      () => undefined,
    );
    return next;
  }

  private async look(): Promise<RestorePoint[]> {
    const config = readAgentConfig();
    if (!config) return [];
    try {
      if (config.target !== this.target) {
        this.target = config.target;
        this.known = undefined;
        this.requests = '';
      }
      const [rps, reqs] = await Promise.all([
        this.sidecar.request('restorePointList', { target: config.target }),
        this.sidecar
          .request('requestList', { target: config.target, status: 'pending' })
          .then((r) => r.map((x) => x.id).join(','))
          .catch(() => this.requests),
      ]);
      const first = this.known === undefined;
      const news = newAgentRestorePoints(this.known, rps);
      const changed = !first && (rps.length !== this.known!.size || rps.some((r) => !this.known!.has(r.id)));
      const reqChanged = !first && reqs !== this.requests;
      this.known = new Set(rps.map((r) => r.id));
      this.requests = reqs;
      if (changed || reqChanged) this.onChange();
      if (news.length && notifyEnabled()) this.notify(news);
      return news;
    } catch {
      return [];
    }
  }

  /** Forget what was seen (the next look only records, it notifies nothing). */
  reset(): void {
    this.known = undefined;
    this.target = undefined;
  }

  private notify(news: RestorePoint[]): void {
    const message = agentRestorePointMessage(news);
    this.shown.push({ message, ids: news.map((r) => r.id) });
    void vscode.window.showInformationMessage(message, 'Show').then((b) => {
      if (b === 'Show') void this.show(news[0]!.id);
    });
  }

  dispose(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
