/**
 * The Agent view (`agentkeep.agent`): agent > Restore points (newest first) and Memory
 * (stores > files with usage > entries). Data comes from the sidecar: agent.status,
 * restorePoint.list, memory.list (one call per store, so files group under their store), memory.lint
 * (badges on entries with findings; none when the sidecar has no lint).
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { LintFinding, MemoryFile, RestorePoint, ResultOf } from '../sidecar/protocol';
import { readAgentConfig, type AgentConfig } from './config';
import { displayLabel, entryTitle, formatAge, formatBytes, formatReason, plural, shortReason, targetName } from './format';
import { findingsFor, lintStores } from './memory';
import type { Sidecar } from './sidecar';
import { toSidecarError } from './sidecar';

/** Every node of the Agent tree. `kind` discriminates. */
export type AgentNode =
  | { kind: 'agent'; config: AgentConfig; status?: ResultOf<'agentStatus'>; error?: string }
  | { kind: 'restorePoints'; config: AgentConfig }
  | { kind: 'restorePoint'; config: AgentConfig; rp: RestorePoint; label: string }
  | { kind: 'memory'; config: AgentConfig }
  | { kind: 'store'; config: AgentConfig; store: string }
  | { kind: 'memoryFile'; store: string; file: MemoryFile }
  | { kind: 'entry'; store: string; file: MemoryFile; text: string; id: string }
  | { kind: 'message'; label: string; detail?: string; icon?: string };

/** Tree data provider of the Agent view. Caches the last lists so tests can read what is shown. */
export class AgentTreeProvider implements vscode.TreeDataProvider<AgentNode> {
  private readonly emitter = new vscode.EventEmitter<AgentNode | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  /** Last restore points shown (newest first). */
  lastRestorePoints: RestorePoint[] = [];
  /** Last agent status shown. */
  lastStatus: ResultOf<'agentStatus'> | undefined;
  /** Lint findings at the last refresh of the Memory node (empty when lint is unavailable). */
  findings: LintFinding[] = [];
  /** Why there are no findings (lint unavailable or failed), if so. */
  lintNote: string | undefined;

  constructor(private readonly sidecar: Sidecar) {}

  /** Re-read everything from the sidecar. */
  refresh(): void {
    this.emitter.fire(undefined);
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
          item.description = `${s.reachable ? 'reachable' : 'unreachable'} · ${s.backend}`;
          item.iconPath = new vscode.ThemeIcon(s.reachable ? 'vm-active' : 'vm-outline');
          const md = new vscode.MarkdownString(undefined, true);
          md.appendMarkdown(`**Target** \`${n.config.target}\`\n\n`);
          md.appendMarkdown(`Backend: ${s.backend} · ${s.reachable ? 'reachable' : `not reachable: ${s.message ?? ''}`}\n\n`);
          md.appendMarkdown(`Restore points: ${s.restorePoints}\n\n`);
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
        item.contextValue = 'memory';
        if (this.findings.length) item.description = `${this.findings.length} ${this.findings.length === 1 ? 'finding' : 'findings'}`;
        item.tooltip = this.lintNote ?? (this.findings.length ? `Lint: ${this.findings.length} findings. Open the memory inspector to review them.` : 'Lint found nothing.');
        return item;
      }
      case 'store': {
        const item = new vscode.TreeItem(n.store.split(':')[0] ?? n.store, vscode.TreeItemCollapsibleState.Expanded);
        item.id = `store:${n.store}`;
        item.contextValue = 'memoryStore';
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
        item.description = u ? `${u.chars}/${u.limit} chars · ${plural(f.entries.length, 'entry', 'entries')}` : plural(f.entries.length, 'entry', 'entries');
        item.iconPath = new vscode.ThemeIcon(u && u.chars > u.limit ? 'warning' : 'file-text');
        item.resourceUri = vscode.Uri.file(f.file);
        item.tooltip = u ? `${f.file}\n${f.kind}: ${u.chars} of ${u.limit} characters used` : `${f.file}\n${f.kind}`;
        item.command = { command: 'vscode.open', title: 'Open', arguments: [vscode.Uri.file(f.file)] };
        return item;
      }
      case 'entry': {
        const item = new vscode.TreeItem(entryTitle(n.text), vscode.TreeItemCollapsibleState.None);
        item.id = `entry:${n.file.file}:${n.id}`;
        const found = findingsFor(this.findings, n.id);
        const kinds = [...new Set(found.map((f) => f.kind))];
        item.description = [`${n.text.length} chars`, ...kinds].join(' · ');
        const md = new vscode.MarkdownString().appendText(n.text);
        for (const f of found) md.appendMarkdown('\n\n---\n\n').appendText(`${f.severity} · ${f.kind}: ${f.message}`);
        item.tooltip = md;
        const worst = found.some((f) => f.severity === 'error') ? 'error' : found.some((f) => f.severity === 'warning') ? 'warning' : found.length ? 'info' : undefined;
        item.iconPath = worst ? new vscode.ThemeIcon(worst, new vscode.ThemeColor(worst === 'error' ? 'list.errorForeground' : worst === 'warning' ? 'list.warningForeground' : 'foreground')) : new vscode.ThemeIcon('note');
        item.contextValue = n.file.readOnly ? 'memoryEntry.readOnly' : 'memoryEntry';
        item.command = { command: 'agentkeep.openMemoryInspector', title: 'Open in the memory inspector', arguments: [{ store: n.store, id: n.id }] };
        item.accessibilityInformation = { label: `Memory entry ${entryTitle(n.text)}, ${item.description}` };
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
        return [{ kind: 'agent', config, status }];
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
        {
          const before = this.findings.length;
          ({ findings: this.findings, lintNote: this.lintNote } = await lintStores(this.sidecar, n.config));
          if (before !== this.findings.length) setTimeout(() => this.emitter.fire(n), 0); // the Memory row shows the count
        }
        return n.config.stores.map((store) => ({ kind: 'store', config: n.config, store }));
      case 'store':
        try {
          const res = await this.sidecar.request('memoryList', { stores: [n.store] });
          return res.stores.map((file) => ({ kind: 'memoryFile', store: n.store, file }));
        } catch (e) {
          return [{ kind: 'message', label: toSidecarError(e).full(), icon: 'error' }];
        }
      case 'memoryFile':
        return n.file.entries.map((e) => ({ kind: 'entry', store: n.store, file: n.file, text: e.text, id: e.id }));
      default:
        return [];
    }
  }
}

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
