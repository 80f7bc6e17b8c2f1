/**
 * The Agent view (`agentkeep.agent`): agent > Restore points (newest first) and Memory
 * (stores > files with usage > entries). Data comes from the sidecar: agent.status,
 * restorePoint.list, memory.list (one call per store, so files group under their store).
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { MemoryFile, RestorePoint, ResultOf } from '../sidecar/protocol';
import { readAgentConfig, type AgentConfig } from './config';
import { displayLabel, entryTitle, formatAge, formatBytes, formatReason, shortReason, targetName, usageText } from './format';
import type { Sidecar } from './sidecar';
import { toSidecarError } from './sidecar';

/** Every node of the Agent tree. `kind` discriminates. */
export type AgentNode =
  | { kind: 'agent'; config: AgentConfig; status?: ResultOf<'agentStatus'>; usage?: ResultOf<'restorePointUsage'>; error?: string }
  | { kind: 'restorePoints'; config: AgentConfig }
  | { kind: 'restorePoint'; config: AgentConfig; rp: RestorePoint; label: string }
  | { kind: 'memory'; config: AgentConfig }
  | { kind: 'store'; config: AgentConfig; store: string }
  | { kind: 'memoryFile'; store: string; file: MemoryFile }
  | { kind: 'entry'; file: MemoryFile; text: string; id: string }
  | { kind: 'message'; label: string; detail?: string; icon?: string };

/** Tree data provider of the Agent view. Caches the last lists so tests can read what is shown. */
export class AgentTreeProvider implements vscode.TreeDataProvider<AgentNode> {
  private readonly emitter = new vscode.EventEmitter<AgentNode | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  /** Last restore points shown (newest first). */
  lastRestorePoints: RestorePoint[] = [];
  /** Last agent status shown. */
  lastStatus: ResultOf<'agentStatus'> | undefined;
  /** Last disk use shown (restorePoint.usage), per target. */
  lastUsage: ResultOf<'restorePointUsage'> | undefined;

  constructor(private readonly sidecar: Sidecar) {}

  /** Re-read everything from the sidecar. */
  refresh(): void {
    this.emitter.fire(undefined);
  }

  /**
   * Disk use of the target's restore points for the agent node. Waits at most USAGE_WAIT_MS (btrfs
   * walks its snapshots); a slower answer is kept and shown by a refresh when it arrives.
   */
  private async usage(target: string): Promise<ResultOf<'restorePointUsage'> | undefined> {
    const req = this.sidecar.request('restorePointUsage', { target }).then(
      (u) => u,
      () => undefined,
    );
    const first = await Promise.race([req, new Promise<'late'>((r) => setTimeout(() => r('late'), USAGE_WAIT_MS))]);
    if (first !== 'late') {
      this.lastUsage = first;
      return first;
    }
    void req.then((u) => {
      const changed = JSON.stringify(u) !== JSON.stringify(this.lastUsage);
      this.lastUsage = u;
      if (changed) this.refresh();
    });
    return this.lastUsage?.target === target ? this.lastUsage : undefined;
  }

  getTreeItem(n: AgentNode): vscode.TreeItem {
    switch (n.kind) {
      case 'agent': {
        const item = new vscode.TreeItem(targetName(n.config.target), vscode.TreeItemCollapsibleState.Expanded);
        item.id = `agent:${n.config.target}`;
        item.contextValue = 'agent';
        const s = n.status;
        if (n.error) {
          item.description = 'sidecar error';
          item.iconPath = new vscode.ThemeIcon('error');
          item.tooltip = n.error;
        } else if (s) {
          const u = n.usage;
          item.description = `${s.reachable ? 'reachable' : 'unreachable'} · ${s.backend}${u ? ` · ${usageText(u)}` : ''}`;
          item.iconPath = new vscode.ThemeIcon(u && u.level !== 'ok' ? 'warning' : s.reachable ? 'vm-active' : 'vm-outline');
          const md = new vscode.MarkdownString(undefined, true);
          md.appendMarkdown(`**Target** \`${n.config.target}\`\n\n`);
          md.appendMarkdown(`Backend: ${s.backend} · ${s.reachable ? 'reachable' : `not reachable: ${s.message ?? ''}`}\n\n`);
          md.appendMarkdown(`Restore points: ${s.restorePoints}\n\n`);
          if (u) md.appendMarkdown(`Disk use: ${formatBytes(u.bytes)} of the ${formatBytes(u.capBytes)} cap${u.level === 'over' ? ' — **over the cap**: prune some restore points' : u.level === 'near' ? ' — near the cap' : ''}\n\n`);
          for (const st of s.stores) md.appendMarkdown(`Store \`${st.store}\`: ${st.ok ? 'ok' : st.message ?? 'not ok'}\n\n`);
          md.appendMarkdown(`Sidecar ${s.version}`);
          item.tooltip = md;
        } else {
          item.iconPath = new vscode.ThemeIcon('vm');
        }
        return item;
      }
      case 'restorePoints': {
        const item = new vscode.TreeItem('Restore points', vscode.TreeItemCollapsibleState.Expanded);
        item.id = `rps:${n.config.target}`;
        item.iconPath = new vscode.ThemeIcon('history');
        item.description = this.lastStatus ? String(this.lastStatus.restorePoints) : undefined;
        return item;
      }
      case 'restorePoint': {
        const rp = n.rp;
        const item = new vscode.TreeItem(n.label, vscode.TreeItemCollapsibleState.None);
        item.id = `rp:${rp.id}`;
        const reason = shortReason(rp);
        item.description = [formatAge(rp.createdAt), reason].filter(Boolean).join(' · ');
        item.contextValue = `restorePoint.${rp.status}.${rp.kind}`; // e.g. restorePoint.ready.pre (package.json menus match on it)
        item.iconPath = new vscode.ThemeIcon(rpIcon(rp));
        item.tooltip = rpTooltip(rp);
        item.command = { command: 'agentkeep.showDetails', title: 'Show details', arguments: [rp.id] };
        item.accessibilityInformation = { label: `Restore point ${n.label}, ${item.description}, ${rp.status}` };
        return item;
      }
      case 'memory': {
        const item = new vscode.TreeItem('Memory', vscode.TreeItemCollapsibleState.Expanded);
        item.id = `mem:${n.config.target}`;
        item.iconPath = new vscode.ThemeIcon('book');
        return item;
      }
      case 'store': {
        const item = new vscode.TreeItem(n.store.split(':')[0] ?? n.store, vscode.TreeItemCollapsibleState.Expanded);
        item.id = `store:${n.store}`;
        item.description = n.store.slice(n.store.indexOf(':') + 1);
        item.iconPath = new vscode.ThemeIcon('database');
        item.tooltip = n.store;
        return item;
      }
      case 'memoryFile': {
        const f = n.file;
        // MEMORY.md opens expanded: its entries are what people come to see.
        const state = f.kind === 'hermes-memory' ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed;
        const item = new vscode.TreeItem(path.basename(f.file), state);
        item.id = `mf:${f.file}`;
        const u = f.usage;
        item.description = u ? `${u.chars}/${u.limit} chars · ${f.entries.length} entries` : `${f.entries.length} entries`;
        item.iconPath = new vscode.ThemeIcon(u && u.chars > u.limit ? 'warning' : 'file-text');
        item.resourceUri = vscode.Uri.file(f.file);
        item.tooltip = u ? `${f.file}\n${f.kind}: ${u.chars} of ${u.limit} characters used` : `${f.file}\n${f.kind}`;
        item.command = { command: 'vscode.open', title: 'Open', arguments: [vscode.Uri.file(f.file)] };
        return item;
      }
      case 'entry': {
        const item = new vscode.TreeItem(entryTitle(n.text), vscode.TreeItemCollapsibleState.None);
        item.id = `entry:${n.file.file}:${n.id}`;
        item.description = `${n.text.length} chars`;
        item.tooltip = new vscode.MarkdownString().appendText(n.text);
        item.iconPath = new vscode.ThemeIcon('note');
        return item;
      }
      case 'message': {
        const item = new vscode.TreeItem(n.label, vscode.TreeItemCollapsibleState.None);
        item.tooltip = n.detail ?? n.label;
        item.iconPath = new vscode.ThemeIcon(n.icon ?? 'info');
        return item;
      }
    }
  }

  async getChildren(n?: AgentNode): Promise<AgentNode[]> {
    if (!n) {
      const config = readAgentConfig();
      if (!config) return []; // the welcome view shows
      try {
        const status = await this.sidecar.request('agentStatus', { target: config.target, stores: config.stores });
        this.lastStatus = status;
        return [{ kind: 'agent', config, status, usage: await this.usage(config.target) }];
      } catch (e) {
        return [{ kind: 'agent', config, error: toSidecarError(e).full() }];
      }
    }
    switch (n.kind) {
      case 'agent':
        if (n.error) return [{ kind: 'message', label: n.error, icon: 'error' }];
        return [
          { kind: 'restorePoints', config: n.config },
          { kind: 'memory', config: n.config },
        ];
      case 'restorePoints':
        try {
          const rps = await this.sidecar.request('restorePointList', { target: n.config.target });
          this.lastRestorePoints = rps;
          if (!rps.length) return [{ kind: 'message', label: 'No restore points yet', detail: 'Use "Snapshot & run" above a risky command, or Create Restore Point.' }];
          const byId = new Map(rps.map((r) => [r.id, r.label]));
          return rps.map((rp) => ({ kind: 'restorePoint', config: n.config, rp, label: displayLabel(rp, byId) }));
        } catch (e) {
          return [{ kind: 'message', label: toSidecarError(e).full(), icon: 'error' }];
        }
      case 'memory':
        if (!n.config.stores.length) return [{ kind: 'message', label: 'No memory store configured', detail: 'Set agentkeep.stores, e.g. ["hermes:/home/me/.hermes"].' }];
        return n.config.stores.map((store) => ({ kind: 'store', config: n.config, store }));
      case 'store':
        try {
          const res = await this.sidecar.request('memoryList', { stores: [n.store] });
          return res.stores.map((file) => ({ kind: 'memoryFile', store: n.store, file }));
        } catch (e) {
          return [{ kind: 'message', label: toSidecarError(e).full(), icon: 'error' }];
        }
      case 'memoryFile':
        return n.file.entries.map((e) => ({ kind: 'entry', file: n.file, text: e.text, id: e.id }));
      default:
        return [];
    }
  }
}

/** How long the Agent view waits for restorePoint.usage before showing the last known value (ms). */
const USAGE_WAIT_MS = 1500;

function rpIcon(rp: RestorePoint): string {
  if (rp.status === 'failed') return 'error';
  if (rp.status === 'kept') return 'pass';
  if (rp.status === 'rolled-back') return 'discard';
  if (rp.kind === 'pre-restore') return 'debug-step-back';
  return 'history';
}

/** Markdown tooltip with the restore point's details. */
export function rpTooltip(rp: RestorePoint): vscode.MarkdownString {
  const md = new vscode.MarkdownString(undefined, true);
  md.appendMarkdown(`**${escapeMd(rp.label)}**\n\n`);
  md.appendMarkdown(`${new Date(rp.createdAt).toLocaleString()} (${formatAge(rp.createdAt)}) · ${rp.kind} · ${rp.status}\n\n`);
  const reason = formatReason(rp);
  if (reason) md.appendMarkdown(`Reason: ${reason}\n\n`);
  md.appendMarkdown(`Machine (${rp.machine.backend}): ${rp.machine.files} entries, ${formatBytes(rp.machine.bytes)}, ${formatBytes(rp.machine.newBytes)} new, ${Math.round(rp.machine.durationMs)} ms\n\n`);
  const agentFiles = rp.agent.reduce((a, c) => a + c.files.length, 0);
  if (rp.agent.length) md.appendMarkdown(`Agent state: ${agentFiles} files from ${rp.agent.map((a) => `\`${a.store}\``).join(', ')}\n\n`);
  md.appendMarkdown(`\`${rp.id}\``);
  return md;
}

function escapeMd(s: string): string {
  return s.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, '\\$&');
}
