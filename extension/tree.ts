/**
 * The Agent view (`agentkeep.agent`): agent > Restore points (newest first) and Memory
 * (stores > files with usage > entries). A Proxmox agent shows node, vmid, status and lock, its
 * restore points as the snapshot tree (nested by `parent`, "You are here", RAM-state badges) and
 * Agents: the guests with agentkeep.proxmox.tag (agent.discover), one click to manage another. Data comes from the sidecar: agent.status,
 * restorePoint.list, memory.list (one call per store, so files group under their store), memory.lint
 * (badges on entries with findings; none when the sidecar has no lint).
 */
import * as vscode from 'vscode';
import {
  Methods,
  type LintFinding,
  type MemoryFile,
  type RestorePoint,
  type RestoreRequest,
  type ResultOf,
  type StoreDescription,
  type TargetDescription,
} from '../sidecar/protocol';
import { readAgentConfig, readProxmoxSettings, type AgentConfig } from './config';
import { displayLabel, entryTitle, formatAge, formatBytes, formatReason, targetName } from './format';
import { describeAction, RUN_ACTION } from './actions';
import { findingsFor, lintStores } from './memory';
import {
  currentRestorePoint,
  discoverGuests,
  explainLock,
  findGuest,
  guestWord,
  hostLabel,
  hostOf,
  snapshotTree,
  withTag,
  type Guest,
} from './proxmox';
import { reachText, type MemoryReach } from './proxmoxModel';
import type { Sidecar } from './sidecar';
import {
  brokenFileRows,
  entryContextValue,
  isLocalMemoryFile,
  memoryFileView,
  storeItemView,
  type StoreStatus,
} from './storeView';
import { agentItemView } from './targetView';
import { isPreWithoutPost, originView, preWithoutPostText, requestView } from './origin';
import { rpItemView } from './rpView';
import { toSidecarError } from './sidecar';

/**
 * The rows of an interrupted restore (agent.status interruptedRestore): one per next action the
 * sidecar names (finish the restore, go back), each running it on click (confirmation first).
 */
function interruptedRows(status: ResultOf<'agentStatus'> | undefined): AgentNode[] {
  const ir = status?.interruptedRestore;
  if (!ir) return [];
  return (ir.actions ?? []).map((a) => ({
    kind: 'message' as const,
    label:
      a.method === Methods.restorePointRestore.method
        ? `${a.title}: restore ${String(a.params?.id)} (scope ${String(a.params?.scope)})`
        : a.title,
    detail:
      `A restore of ${ir.id} (scope ${ir.scope}) started ${ir.startedAt} never finished: ` +
      `the target may be half-restored. ${describeAction(a)}`,
    icon: a.params?.id === ir.id ? 'debug-continue' : 'discard',
    command: { command: RUN_ACTION, title: a.title, arguments: [a] },
  }));
}

/**
 * The row of a pending write-back (agent.status pendingWriteBack): the agent state captured before a
 * VM rollback that could not be written back into the guest yet; clicking runs the sidecar's action
 * (restore the pre-restore point with scope agent; confirmation first).
 */
function pendingWriteBackRows(status: ResultOf<'agentStatus'> | undefined): AgentNode[] {
  const wb = status?.pendingWriteBack;
  if (!wb) return [];
  return (wb.actions ?? []).map((a) => ({
    kind: 'message' as const,
    label: `${a.title}: the memory from before the rollback to ${wb.id} (kept in ${wb.undo})`,
    detail: `Not written back into the guest yet: ${wb.message}. ${describeAction(a)}`,
    icon: 'history',
    command: { command: RUN_ACTION, title: a.title, arguments: [a] },
  }));
}

/** Every node of the Agent tree. `kind` discriminates. */
export type AgentNode =
  | {
      kind: 'agent';
      config: AgentConfig;
      /** The target as its backend describes it (target.describe): name, capabilities, guest. */
      description?: TargetDescription;
      status?: ResultOf<'agentStatus'>;
      usage?: ResultOf<'restorePointUsage'>;
      error?: string;
      guest?: Guest;
      guests?: Guest[];
      guestError?: string;
      guestErrorCode?: string;
    }
  | { kind: 'restorePoints'; config: AgentConfig; description?: TargetDescription; guest?: Guest }
  | {
      kind: 'restorePoint';
      config: AgentConfig;
      rp: RestorePoint;
      label: string;
      children?: AgentNode[];
      /** A pre whose post never came (the command, the agent or its hook died, or it still runs). */
      withoutPost?: boolean;
    }
  /** The agent's restore requests waiting for a person (request.list, status pending). */
  | { kind: 'requests'; config: AgentConfig; requests: RestoreRequest[] }
  | { kind: 'request'; config: AgentConfig; request: RestoreRequest; rp?: RestorePoint }
  | { kind: 'here'; guest?: Guest }
  | {
      kind: 'guests';
      /** agent.discover target of the host, `proxmox://HOST:PORT`. */
      host: string;
      /** `HOST:PORT`, for the label. */
      hostLabel: string;
      guests: Guest[];
      tag: string;
      current: string;
      /** The guest the current target names. */
      currentGuest?: TargetDescription['guest'];
      /** The stores configured for the current target (its guest's memory is reached through them). */
      currentStores?: string[];
    }
  | { kind: 'guest'; guest: Guest; current: boolean; memory?: MemoryReach }
  | { kind: 'memory'; config: AgentConfig; description?: TargetDescription }
  | {
      kind: 'store';
      config: AgentConfig;
      store: string;
      description?: StoreDescription;
      /** The store as agent.status reported it (ok, missing, or `broken` with what and the fix). */
      status?: StoreStatus;
    }
  | { kind: 'memoryFile'; store: string; file: MemoryFile; description?: StoreDescription; first: boolean }
  | { kind: 'entry'; store: string; file: MemoryFile; text: string; id: string }
  | { kind: 'message'; label: string; detail?: string; icon?: string; command?: vscode.Command };

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
  /** Proxmox targets: the guest as agent.discover last reported it (node, vmid, status, lock). */
  lastGuest: Guest | undefined;
  /** Proxmox targets: the fleet last listed (guests with agentkeep.proxmox.tag). */
  lastGuests: Guest[] = [];
  /** Last disk use shown (restorePoint.usage), per target. */
  lastUsage: ResultOf<'restorePointUsage'> | undefined;
  /** The agent's pending restore requests at the last refresh (request.list). */
  lastRequests: RestoreRequest[] = [];

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
        const item = new vscode.TreeItem(
          targetName(n.config.target, n.description),
          vscode.TreeItemCollapsibleState.Expanded,
        );
        item.id = `agent:${n.config.target}`;
        item.contextValue = 'agent';
        const s = n.status;
        if (n.error) {
          item.description = 'sidecar error';
          item.iconPath = new vscode.ThemeIcon('error');
          item.tooltip = n.error;
        } else if (n.description?.guest) {
          return this.guestAgentItem(item, n, n.description, n.description.guest);
        } else if (s) {
          const v = agentItemView(n.config.target, n.description, s, n.usage);
          item.label = v.label;
          item.description = v.description;
          item.iconPath = new vscode.ThemeIcon(v.icon);
          item.tooltip = new vscode.MarkdownString(v.tooltip, true);
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
        const item = new vscode.TreeItem(
          n.label,
          n.children?.length ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None,
        );
        item.id = `rp:${rp.id}`;
        const v = rpItemView(rp, !!n.withoutPost);
        item.description = v.description;
        item.contextValue = `restorePoint.${rp.status}.${rp.kind}`; // e.g. restorePoint.ready.pre (package.json menus match on it)
        item.iconPath = new vscode.ThemeIcon(
          v.icon,
          v.icon === 'warning' ? new vscode.ThemeColor('list.warningForeground') : undefined,
        );
        item.tooltip = rpTooltip(rp, { withoutPost: n.withoutPost });
        item.command = { command: 'agentkeep.showDetails', title: 'Show details', arguments: [rp.id] };
        item.accessibilityInformation = { label: `Restore point ${n.label}, ${item.description}, ${rp.status}` };
        return item;
      }
      case 'requests': {
        const item = new vscode.TreeItem('Restore requests', vscode.TreeItemCollapsibleState.Expanded);
        item.id = `reqs:${n.config.target}`;
        item.iconPath = new vscode.ThemeIcon('bell-dot', new vscode.ThemeColor('list.warningForeground'));
        item.description = `${n.requests.length} waiting for you`;
        item.tooltip =
          'The agent asked for these restores (MCP restore_request). Nothing is restored until you approve: Approve shows what the restore would change and asks first; Deny records that you refused.';
        item.contextValue = 'restoreRequests';
        return item;
      }
      case 'request': {
        const v = requestView(n.request, n.rp);
        const item = new vscode.TreeItem(v.label, vscode.TreeItemCollapsibleState.None);
        item.id = `req:${n.request.id}`;
        item.description = v.description;
        item.tooltip = v.tooltip;
        item.iconPath = new vscode.ThemeIcon(v.icon);
        item.contextValue = v.contextValue;
        item.accessibilityInformation = { label: `Restore request: ${v.label}, ${v.description}` };
        return item;
      }
      case 'here': {
        const item = new vscode.TreeItem('You are here', vscode.TreeItemCollapsibleState.None);
        item.id = 'here';
        const g = n.guest;
        item.description = g
          ? `${g.type === 'lxc' ? 'container' : 'VM'} ${g.status}${g.lock ? ` · locked (${g.lock})` : ''}`
          : 'now';
        item.iconPath = new vscode.ThemeIcon('location');
        item.tooltip =
          'The current state of the guest (Proxmox "NOW"): changes since the restore point above are not in any snapshot yet.';
        return item;
      }
      case 'guests': {
        const item = new vscode.TreeItem('Agents', vscode.TreeItemCollapsibleState.Expanded);
        item.id = `guests:${n.host}`;
        item.description = `${n.guests.length} on ${n.hostLabel}${n.tag ? ` · tag ${n.tag}` : ''}`;
        item.iconPath = new vscode.ThemeIcon('server-environment');
        item.tooltip = `Guests tagged "${n.tag}" that the API token can see, on every node. Click one to manage it in this window.`;
        return item;
      }
      case 'guest': {
        const g = n.guest;
        const item = new vscode.TreeItem(g.name ?? `${g.type} ${g.vmid}`, vscode.TreeItemCollapsibleState.None);
        item.id = `guest:${g.target}`;
        const reach = reachText(n.memory);
        item.description = `${g.vmid} · ${g.node} · ${g.status}${g.lock ? ` · locked (${g.lock})` : ''}${reach.short ? ` · ${reach.short}` : ''}${n.current ? ' · this window' : ''}`;
        item.iconPath = g.lock
          ? new vscode.ThemeIcon('warning', new vscode.ThemeColor('list.warningForeground'))
          : new vscode.ThemeIcon(n.current ? 'pass-filled' : g.type === 'lxc' ? 'package' : 'vm');
        item.contextValue = n.current ? 'guest.current' : 'guest';
        item.tooltip = guestTooltip(g, reach.detail);
        if (!n.current)
          item.command = { command: 'agentkeep.chooseAgent', title: 'Manage this agent', arguments: [g.target] };
        return item;
      }
      case 'memory': {
        const item = new vscode.TreeItem('Memory', vscode.TreeItemCollapsibleState.Expanded);
        item.id = `mem:${n.config.target}`;
        item.iconPath = new vscode.ThemeIcon('book');
        item.contextValue = 'memory';
        return item;
      }
      case 'store': {
        // lint ran in getChildren of Memory, before this row is built: the count is current
        const found = this.findings.filter((f) =>
          f.stores ? f.stores.includes(n.store) : n.config.stores.length === 1,
        ).length;
        const v = storeItemView(n.store, n.description, found, this.lintNote, n.status);
        const item = new vscode.TreeItem(v.label, vscode.TreeItemCollapsibleState.Expanded);
        item.id = `store:${n.store}`;
        item.contextValue = 'memoryStore';
        item.description = v.description;
        const warn = v.icon === 'warning' ? new vscode.ThemeColor('list.warningForeground') : undefined;
        item.iconPath = new vscode.ThemeIcon(v.icon, warn);
        item.tooltip = v.tooltip;
        return item;
      }
      case 'memoryFile': {
        const f = n.file;
        const v = memoryFileView(f);
        // A store's first file opens expanded (Hermes: MEMORY.md): its entries are what people come to see;
        // so does a broken file: what is broken and the fix are its first rows.
        const open = n.first || !!f.broken;
        const state = open ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed;
        const item = new vscode.TreeItem(v.label, state);
        item.id = `mf:${f.file}#${f.kind}`; // Agent Zero: one index.pkl holds several area files
        item.description = v.description;
        item.contextValue = v.contextValue;
        const colors = { 'file-text': undefined, error: 'list.errorForeground', warning: 'list.warningForeground' };
        const color = colors[v.icon];
        item.iconPath = new vscode.ThemeIcon(v.icon, color ? new vscode.ThemeColor(color) : undefined);
        item.tooltip = v.tooltip;
        // only a local file opens in the editor (a store reached through an API names its files by URL)
        if (isLocalMemoryFile(f, n.description)) {
          item.resourceUri = vscode.Uri.file(f.file);
          item.command = { command: 'vscode.open', title: 'Open', arguments: [vscode.Uri.file(f.file)] };
        }
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
        const worst = found.some((f) => f.severity === 'error')
          ? 'error'
          : found.some((f) => f.severity === 'warning')
            ? 'warning'
            : found.length
              ? 'info'
              : undefined;
        item.iconPath = worst
          ? new vscode.ThemeIcon(
              worst,
              new vscode.ThemeColor(
                worst === 'error'
                  ? 'list.errorForeground'
                  : worst === 'warning'
                    ? 'list.warningForeground'
                    : 'foreground',
              ),
            )
          : new vscode.ThemeIcon('note');
        item.contextValue = entryContextValue(n.file);
        item.command = {
          command: 'agentkeep.openMemoryInspector',
          title: 'Open in the memory inspector',
          arguments: [{ store: n.store, id: n.id }],
        };
        item.accessibilityInformation = { label: `Memory entry ${entryTitle(n.text)}, ${item.description}` };
        return item;
      }
      case 'message': {
        const item = new vscode.TreeItem(n.label, vscode.TreeItemCollapsibleState.None);
        item.tooltip = n.detail ?? n.label;
        item.iconPath = new vscode.ThemeIcon(n.icon ?? 'info');
        item.command = n.command;
        return item;
      }
    }
  }

  /** The agent item of a hypervisor guest (Proxmox): guest name, `node · vmid · status`, lock as a warning. */
  private guestAgentItem(
    item: vscode.TreeItem,
    n: Extract<AgentNode, { kind: 'agent' }>,
    d: TargetDescription,
    pve: NonNullable<TargetDescription['guest']>,
  ): vscode.TreeItem {
    const g = n.guest;
    const kind = guestWord(d);
    item.label = g?.name ?? d.name;
    item.contextValue = `agent.${d.backend}.${pve.type}`; // e.g. agent.proxmox.qemu (package.json menus match on it)
    const reachable = n.status?.reachable !== false;
    const state = g ? g.status : reachable ? 'unknown state' : 'unreachable';
    item.description = `${g?.node ?? pve.node} · ${pve.vmid} · ${state}${g?.lock ? ` · locked (${g.lock})` : ''}`;
    item.iconPath = g?.lock
      ? new vscode.ThemeIcon('warning', new vscode.ThemeColor('list.warningForeground'))
      : new vscode.ThemeIcon(!reachable || !g ? 'vm-outline' : g.status === 'running' ? 'vm-running' : 'vm');
    const md = new vscode.MarkdownString(undefined, true);
    md.appendMarkdown(`**Target** \`${n.config.target}\`\n\n`);
    md.appendMarkdown(`Proxmox ${kind} ${pve.vmid} on node \`${g?.node ?? pve.node}\` (${pve.host}:${pve.port})\n\n`);
    if (g) md.appendMarkdown(`Status: ${g.status}\n\n`);
    if (g?.lock) md.appendMarkdown(`$(warning) Locked: \`${g.lock}\`. ${explainLock(g.lock, pve)}\n\n`);
    if (!reachable) md.appendMarkdown(`Not reachable: ${n.status?.message ?? ''}\n\n`);
    if (n.guestError) md.appendMarkdown(`Guest list failed: ${n.guestError}\n\n`);
    else if (!g)
      md.appendMarkdown(
        "The token cannot see this guest in /cluster/resources (check the VMID and the token's VM.Audit permission).\n\n",
      );
    if (n.status) md.appendMarkdown(`Restore points: ${n.status.restorePoints} · Sidecar ${n.status.version}`);
    item.tooltip = md;
    return item;
  }

  /**
   * The Memory rows of a guest agent without configured stores: the stores the sidecar finds by
   * probing the guest (agent.memoryReach), with their lint badges, or why its memory is not reachable.
   */
  private async probedMemory(config: AgentConfig): Promise<AgentNode[]> {
    let reach: MemoryReach;
    try {
      reach = await this.sidecar.request('agentMemoryReach', { target: config.target });
    } catch (e) {
      return [{ kind: 'message', label: toSidecarError(e).full(), icon: 'error' }];
    }
    const ok = reach.stores.filter((s) => s.reachable);
    if (!ok.length)
      return [
        {
          kind: 'message',
          label: `Memory not reachable: ${reach.reason ?? 'no store can be read'}`,
          ...(reach.hint ? { detail: reach.hint } : {}),
          icon: 'error',
        },
      ];
    const found = { ...config, stores: ok.map((s) => s.store) };
    ({ findings: this.findings, lintNote: this.lintNote } = await lintStores(this.sidecar, found));
    return [
      {
        kind: 'message',
        label: `Found in the guest ${reach.how}`,
        detail: 'Name the stores in agentkeep.stores (or agent add --store) to skip the probe.',
        icon: 'search',
      },
      ...ok.map((s): AgentNode => ({
        kind: 'store',
        config: found,
        store: s.store,
        ...(s.description ? { description: s.description } : {}),
      })),
    ];
  }

  /**
   * The "Restore requests" group when the agent has pending ones (request.list of the target); a
   * message row when they cannot be read (never an empty group that hides a broken list).
   */
  private async requestRows(config: AgentConfig): Promise<AgentNode[]> {
    try {
      const requests = await this.sidecar.request('requestList', { target: config.target, status: 'pending' });
      this.lastRequests = requests;
      if (!this.lastRestorePoints.length && requests.length) {
        // the rows name the restore point by its label: read the list once if the tree has not yet
        this.lastRestorePoints = await this.sidecar
          .request('restorePointList', { target: config.target })
          .catch(() => []);
      }
      return requests.length ? [{ kind: 'requests', config, requests }] : [];
    } catch (e) {
      this.lastRequests = [];
      const err = toSidecarError(e);
      return [
        {
          kind: 'message',
          label: `Restore requests cannot be read: ${err.message}`,
          detail: err.full(),
          icon: 'error',
        },
      ];
    }
  }

  private rpById(id: string): RestorePoint | undefined {
    return this.lastRestorePoints.find((r) => r.id === id);
  }

  async getChildren(n?: AgentNode): Promise<AgentNode[]> {
    if (!n) {
      const config = readAgentConfig();
      if (!config) return []; // the welcome view shows
      // a target that does not parse: agent.status below reports it
      const description = await this.sidecar.describeTarget(config.target).catch(() => undefined);
      const pve = description?.capabilities.discover ? description.guest : undefined;
      // hypervisor guests (Proxmox): node, vmid, status, lock and the fleet come from one agent.discover (every guest)
      const discovery = pve
        ? discoverGuests(this.sidecar, config.target, '').then(
            (g) => ({ guests: g, error: undefined, code: undefined }),
            (e) => {
              const err = toSidecarError(e);
              return { guests: [] as Guest[], error: err.full(), code: err.code };
            },
          )
        : undefined;
      try {
        const status = await this.sidecar.request('agentStatus', { target: config.target, stores: config.stores });
        this.lastStatus = status;
        this.sidecar.rememberDescription(config.target, status.description);
        this.sidecar.rememberStoreDescriptions(status.stores.map((x) => x.description));
        const d = await discovery;
        const usage = await this.usage(config.target);
        if (!pve || !d) return [{ kind: 'agent', config, description: status.description, status, usage }];
        this.lastGuest = findGuest(d.guests, pve);
        this.lastGuests = withTag(d.guests, readProxmoxSettings().tag);
        const guestError = { guestError: d.error, guestErrorCode: d.code };
        return [
          {
            kind: 'agent',
            config,
            description: status.description,
            status,
            usage,
            guest: this.lastGuest,
            guests: d.guests,
            ...guestError,
          },
        ];
      } catch (e) {
        return [{ kind: 'agent', config, error: toSidecarError(e).full() }];
      }
    }
    switch (n.kind) {
      case 'agent': {
        if (n.error) return [{ kind: 'message', label: n.error, icon: 'error' }];
        const interrupted = [...interruptedRows(n.status), ...pendingWriteBackRows(n.status)];
        if (n.guests && n.description?.guest) {
          const pve = n.description.guest;
          const tag = readProxmoxSettings().tag;
          return [
            ...interrupted,
            ...(n.guestErrorCode === 'auth_failed'
              ? [
                  {
                    kind: 'message' as const,
                    label: 'Proxmox refused the credentials: set the API token…',
                    detail: n.guestError,
                    icon: 'key',
                    command: { command: 'agentkeep.setProxmoxToken', title: 'Set Proxmox API Token' },
                  },
                ]
              : n.guestError
                ? [{ kind: 'message' as const, label: n.guestError, icon: 'error' }]
                : []),
            ...(await this.requestRows(n.config)),
            { kind: 'restorePoints', config: n.config, description: n.description, guest: n.guest },
            { kind: 'memory', config: n.config, description: n.description },
            {
              kind: 'guests',
              host: hostOf(pve),
              hostLabel: hostLabel(pve),
              guests: withTag(n.guests, tag),
              tag,
              current: n.config.target,
              currentGuest: pve,
              currentStores: n.config.stores,
            },
          ];
        }
        return [
          ...interrupted,
          ...(await this.requestRows(n.config)),
          { kind: 'restorePoints', config: n.config, description: n.description },
          { kind: 'memory', config: n.config },
        ];
      }
      case 'restorePoints':
        try {
          const rps = await this.sidecar.request('restorePointList', { target: n.config.target });
          this.lastRestorePoints = rps;
          if (!rps.length)
            return [
              {
                kind: 'message',
                label: 'No restore points yet',
                detail: 'Use "Snapshot & run" above a risky command, or Create Restore Point.',
              },
            ];
          const byId = new Map(rps.map((r) => [r.id, r.label]));
          // hypervisor snapshots nest by parent (Proxmox): show the tree with "You are here"
          if (n.description?.guest) return snapshotNodes(n.config, rps, byId, n.guest);
          return rps.map((rp) => ({
            kind: 'restorePoint',
            config: n.config,
            rp,
            label: displayLabel(rp, byId),
            ...(isPreWithoutPost(rp, rps) ? { withoutPost: true } : {}),
          }));
        } catch (e) {
          return [{ kind: 'message', label: toSidecarError(e).full(), icon: 'error' }];
        }
      case 'memory':
        if (!n.config.stores.length && n.description?.guest) return this.probedMemory(n.config);
        if (!n.config.stores.length)
          return [
            {
              kind: 'message',
              label: 'No memory store configured',
              detail: 'Set agentkeep.stores, e.g. ["hermes:/home/me/.hermes"].',
            },
          ];
        ({ findings: this.findings, lintNote: this.lintNote } = await lintStores(this.sidecar, n.config));
        return (await this.sidecar.describeStores(n.config.stores)).map((d, i) => {
          const status = this.lastStatus?.stores.find((x) => x.store === n.config.stores[i]);
          return {
            kind: 'store',
            config: n.config,
            store: n.config.stores[i]!,
            ...(typeof d === 'string' ? {} : { description: d }),
            ...(status ? { status } : {}),
          };
        });
      case 'store':
        try {
          const res = await this.sidecar.request('memoryList', { stores: [n.store] });
          this.sidecar.rememberStoreDescriptions(res.descriptions ?? []);
          const description = res.descriptions?.[0] ?? n.description;
          return res.stores.map((file, i) => ({
            kind: 'memoryFile',
            store: n.store,
            file,
            first: i === 0,
            ...(description ? { description } : {}),
          }));
        } catch (e) {
          return [{ kind: 'message', label: toSidecarError(e).full(), icon: 'error' }];
        }
      case 'memoryFile': {
        // a broken file says what is broken and the fix first; then the entries that could be read
        const rows = brokenFileRows(n.file).map((r): AgentNode => ({ kind: 'message', ...r }));
        const entries = n.file.entries.map((e): AgentNode => ({
          kind: 'entry',
          store: n.store,
          file: n.file,
          text: e.text,
          id: e.id,
        }));
        return [...rows, ...entries];
      }
      case 'restorePoint':
        return n.children ?? [];
      case 'requests':
        return n.requests.map((request) => ({
          kind: 'request',
          config: n.config,
          request,
          ...(this.rpById(request.restorePoint) ? { rp: this.rpById(request.restorePoint) } : {}),
        }));
      case 'guests':
        if (!n.guests.length)
          return [
            {
              kind: 'message',
              label: n.tag ? `No guest tagged "${n.tag}"` : 'No guest visible',
              detail: 'Tag the agent guests in Proxmox (Options > Tags) or change agentkeep.proxmox.tag.',
            },
          ];
        // every guest listed is on the current target's host (discovery asked that host); the
        // sidecar says for each whether its memory is reachable and how (agent.memoryReach)
        return Promise.all(
          n.guests.map(async (guest): Promise<AgentNode> => {
            const current = guest.target === n.current || n.currentGuest?.vmid === guest.vmid;
            const stores = current && n.currentStores?.length ? { stores: n.currentStores } : {};
            const memory = await this.sidecar
              .request('agentMemoryReach', { target: guest.target, ...stores })
              .catch(() => undefined);
            return { kind: 'guest', guest, current, ...(memory ? { memory } : {}) };
          }),
        );
      default:
        return [];
    }
  }
}

/**
 * The Proxmox snapshot tree as nodes: restore points nested by `parent` (oldest first, as the
 * Snapshots tab shows them), with "You are here" under the restore point the guest sits on.
 */
function snapshotNodes(
  config: AgentConfig,
  rps: RestorePoint[],
  byId: ReadonlyMap<string, string>,
  guest: Guest | undefined,
): AgentNode[] {
  const tree = snapshotTree(rps);
  const here = currentRestorePoint(rps);
  const build = (key: string | undefined): AgentNode[] => {
    const nodes: AgentNode[] = (tree.get(key) ?? []).map((rp) => {
      const children = build(rp.id);
      return {
        kind: 'restorePoint',
        config,
        rp,
        label: displayLabel(rp, byId),
        children: children.length ? children : undefined,
        ...(isPreWithoutPost(rp, rps) ? { withoutPost: true } : {}),
      };
    });
    if (here?.id === key || (key === undefined && !here)) nodes.push({ kind: 'here', guest });
    return nodes;
  };
  return build(undefined);
}

/** Tooltip of a guest: name, type, node, vmid, status, lock explained, tags. */
function guestTooltip(g: Guest, memory = ''): vscode.MarkdownString {
  const md = new vscode.MarkdownString(undefined, true);
  md.appendMarkdown(`**${escapeMd(g.name ?? `${g.type} ${g.vmid}`)}** (${g.type === 'lxc' ? 'container' : 'VM'})\n\n`);
  md.appendMarkdown(`Node \`${g.node}\` · VMID ${g.vmid} · ${g.status}\n\n`);
  if (g.lock)
    md.appendMarkdown(`$(warning) Locked: \`${g.lock}\`. ${explainLock(g.lock, { type: g.type, vmid: g.vmid })}\n\n`);
  if (g.tags.length) md.appendMarkdown(`Tags: ${g.tags.map((t) => `\`${t}\``).join(', ')}\n\n`);
  if (memory) md.appendMarkdown(`${escapeMd(memory)}\n\n`);
  md.appendMarkdown(`\`${g.target}\``);
  return md;
}

/** How long the Agent view waits for restorePoint.usage before showing the last known value (ms). */
const USAGE_WAIT_MS = 1500;

/** Markdown tooltip with the restore point's details (who took it; a pre without its post: what happened, what to do). */
export function rpTooltip(rp: RestorePoint, o: { withoutPost?: boolean } = {}): vscode.MarkdownString {
  const md = new vscode.MarkdownString(undefined, true);
  md.appendMarkdown(`**${escapeMd(rp.label)}**\n\n`);
  md.appendMarkdown(
    `${new Date(rp.createdAt).toLocaleString()} (${formatAge(rp.createdAt)}) · ${rp.kind} · ${rp.status}\n\n`,
  );
  const origin = originView(rp);
  if (origin) md.appendMarkdown(`$(${origin.icon}) Taken by ${origin.who}: ${escapeMd(origin.text)}\n\n`);
  if (o.withoutPost) md.appendMarkdown(`$(warning) **No post restore point.** ${preWithoutPostText(rp)}\n\n`);
  const reason = formatReason(rp);
  if (reason && !origin) md.appendMarkdown(`Reason: ${reason}\n\n`);
  else if (origin && rp.reason?.risk) md.appendMarkdown(`Risk: ${escapeMd(rp.reason.risk)}\n\n`);
  if (rp.machine.snapname !== undefined || rp.machine.vmstate !== undefined) {
    const m = rp.machine;
    md.appendMarkdown(
      `Machine (${m.backend}): snapshot \`${m.snapname ?? rp.id}\`${m.parent ? ` (parent \`${m.parent}\`)` : ''}, ${Math.round(m.durationMs)} ms\n\n`,
    );
    md.appendMarkdown(
      m.vmstate
        ? '$(chip) **RAM state**: a rollback resumes the VM where it was.\n\n'
        : 'Disk only (no RAM state): after a rollback the VM is stopped unless you choose to start it.\n\n',
    );
    for (const w of m.warnings ?? []) md.appendMarkdown(`$(warning) ${escapeMd(w)}\n\n`);
  } else {
    md.appendMarkdown(
      `Machine (${rp.machine.backend}): ${rp.machine.files} entries, ${formatBytes(rp.machine.bytes)}, ${formatBytes(rp.machine.newBytes)} new, ${Math.round(rp.machine.durationMs)} ms\n\n`,
    );
  }
  const agentFiles = rp.agent.reduce((a, c) => a + c.files.length, 0);
  if (rp.agent.length)
    md.appendMarkdown(`Agent state: ${agentFiles} files from ${rp.agent.map((a) => `\`${a.store}\``).join(', ')}\n\n`);
  md.appendMarkdown(`\`${rp.id}\``);
  return md;
}

function escapeMd(s: string): string {
  return s.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, '\\$&');
}
