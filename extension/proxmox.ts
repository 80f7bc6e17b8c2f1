/**
 * Proxmox VE in the extension:
 * - the API token (`USER@REALM!TOKENID=SECRET`) lives in SecretStorage only: never in settings, the
 *   output channel or a log line. The sidecar gets it, with the fingerprint/CA settings, through its
 *   process environment (AGENTKEEP_PVE_TOKEN, AGENTKEEP_PVE_FINGERPRINT, AGENTKEEP_PVE_CA: the names
 *   the CLI reads), and is restarted when they change;
 * - guests from `agent.discover` (GET /cluster/resources?type=vm on the host, filtered by tag) for
 *   the fleet list in the Agent view and "AgentKeep: Choose Agent";
 * - the snapshot tree: restore points nested by their Proxmox `parent`, and where "you are here" is
 *   (Proxmox's `current` pseudo-snapshot).
 */
import * as vscode from 'vscode';
import { parseTarget, type ProxmoxTarget } from '../sidecar/core/target';
import type { RestorePoint, ResultOf } from '../sidecar/protocol';
import { readAgentConfig, readProxmoxSettings, requireTrust } from './config';
import type { Sidecar } from './sidecar';
import { SidecarError } from './sidecar';

/** SecretStorage key of the Proxmox API token. */
export const TOKEN_SECRET_KEY = 'agentkeep.proxmox.token';

/** A guest as agent.discover reports it. */
export type Guest = ResultOf<'agentDiscover'>[number];

/**
 * Why `token` is not a Proxmox API token in the form `USER@REALM!TOKENID=SECRET` (e.g.
 * `agent@pve!agentkeep=1b6f…`), or undefined when it is. Never echoes the secret.
 */
export function checkTokenFormat(token: string): string | undefined {
  const t = token.trim();
  if (!t) return 'Enter the token as USER@REALM!TOKENID=SECRET.';
  const eq = t.indexOf('=');
  if (eq < 0) return 'The "=SECRET" part is missing: write USER@REALM!TOKENID=SECRET (the secret is shown once, when the token is created).';
  const id = t.slice(0, eq);
  if (!/^[^\s@!=]+@[^\s@!=]+$/.test(id.split('!')[0] ?? '')) return 'The token must start with the user and realm, e.g. agent@pve!agentkeep=SECRET.';
  if (!/^[^\s@!=]+@[^\s@!=]+![A-Za-z][A-Za-z0-9._-]*$/.test(id)) return 'The token id is missing: write USER@REALM!TOKENID=SECRET, e.g. agent@pve!agentkeep=SECRET.';
  if (!/^\S+$/.test(t.slice(eq + 1))) return 'The secret after "=" is empty or has spaces.';
  return undefined;
}

/** The non-secret part of a token (`USER@REALM!TOKENID`), for messages. */
export function tokenId(token: string): string {
  return token.split('=')[0] ?? '';
}

/**
 * Environment of the sidecar process for Proxmox: AGENTKEEP_PVE_TOKEN from SecretStorage (only when
 * one is stored, so a token from the shell environment still works), AGENTKEEP_PVE_FINGERPRINT and
 * AGENTKEEP_PVE_CA from agentkeep.proxmox.fingerprint / caFile (when set).
 */
export async function sidecarEnv(secrets: vscode.SecretStorage): Promise<Record<string, string>> {
  const env: Record<string, string> = {};
  const token = await secrets.get(TOKEN_SECRET_KEY);
  if (token) env.AGENTKEEP_PVE_TOKEN = token;
  const s = readProxmoxSettings();
  if (s.fingerprint) env.AGENTKEEP_PVE_FINGERPRINT = s.fingerprint;
  if (s.caFile) env.AGENTKEEP_PVE_CA = s.caFile;
  return env;
}

/** The Proxmox part of a `proxmox://` target, or undefined for any other (or unparsable) target. */
export function proxmoxOf(target: string | undefined): ProxmoxTarget | undefined {
  if (!target?.startsWith('proxmox:')) return undefined;
  try {
    return parseTarget(target).proxmox;
  } catch {
    return undefined;
  }
}

/** Whether the target is a VM or container (proxmox:// or qemu:): rollbacks stop it, there is no file diff. */
export function isVmTarget(target: string): boolean {
  return target.startsWith('proxmox:') || target.startsWith('qemu:');
}

/** Whether restore points of this target can hold RAM state on request (Proxmox qemu guests). */
export function canRamState(target: string): boolean {
  return proxmoxOf(target)?.type === 'qemu';
}

/** `proxmox://HOST:PORT` of a proxmox target (for agent.discover). */
export function hostOf(p: Pick<ProxmoxTarget, 'host' | 'port'>): string {
  return `proxmox://${p.host.includes(':') ? `[${p.host}]` : p.host}:${p.port}`;
}

/**
 * Where to discover guests: the configured proxmox target, else agentkeep.proxmox.host. Undefined when
 * neither is set.
 */
export function discoveryTarget(): string | undefined {
  const config = readAgentConfig();
  if (config && proxmoxOf(config.target)) return config.target;
  const s = readProxmoxSettings();
  return s.host ? hostOf(s) : undefined;
}

/**
 * Every guest the token can see (tag "" = no filter), from agent.discover, sorted by node then vmid.
 * @throws SidecarError (AuthFailed, Hypervisor, ...) from the sidecar.
 */
export async function discoverGuests(sidecar: Sidecar, target: string, tag = ''): Promise<Guest[]> {
  const guests = await sidecar.request('agentDiscover', { target, tag });
  return [...guests].sort((a, b) => a.node.localeCompare(b.node) || a.vmid - b.vmid);
}

/** The guest a target names (same vmid; same node unless the target says `-`). */
export function findGuest(guests: readonly Guest[], p: ProxmoxTarget): Guest | undefined {
  return guests.find((g) => g.vmid === p.vmid && (p.node === '-' || g.node === p.node));
}

/** Guests carrying `tag` (every guest when tag is empty). */
export function withTag(guests: readonly Guest[], tag: string): Guest[] {
  return tag ? guests.filter((g) => g.tags.includes(tag)) : [...guests];
}

/** What a Proxmox `lock` means and what to do, in one sentence. */
export function explainLock(lock: string, p?: Pick<ProxmoxTarget, 'type' | 'vmid'>): string {
  const tool = p?.type === 'lxc' ? 'pct' : 'qm';
  const id = p?.vmid ?? 'VMID';
  switch (lock) {
    case 'backup':
      return 'A backup (vzdump) is running: wait for it to finish before taking or restoring a snapshot.';
    case 'snapshot':
      return `A snapshot is being taken. If no snapshot task runs any more, the lock is stale: clear it on the host with \`${tool} unlock ${id}\`.`;
    case 'snapshot-delete':
      return `A snapshot delete is running or got stuck. If no task runs, check the snapshot list, then clear it on the host with \`${tool} unlock ${id}\`.`;
    case 'rollback':
      return 'A rollback is running.';
    case 'migrate':
      return 'The guest is being migrated to another node.';
    case 'suspended':
    case 'suspending':
      return 'The guest is hibernated (suspended to disk): resume it first.';
    default:
      return `Proxmox lock "${lock}": another operation holds the guest. AgentKeep never unlocks it by itself (\`${tool} unlock ${id}\` on the host when you are sure nothing runs).`;
  }
}

/** The name a restore point has on the hypervisor (its `snapname`, else its id). */
export function snapnameOf(rp: RestorePoint): string {
  return rp.machine.snapname ?? rp.id;
}

/**
 * The restore point the guest runs on now (Proxmox's `current` has it as `parent`), inferred from the
 * journal: after a rollback the newest restore point is the pre-restore capture and the guest sits
 * on the restored one; otherwise it sits on the newest restore point. Undefined when there is none.
 * @param rps restore points of one target, any order
 */
export function currentRestorePoint(rps: readonly RestorePoint[]): RestorePoint | undefined {
  const live = rps.filter((r) => r.status !== 'failed');
  const newest = [...live].sort((a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt))[0];
  if (newest?.kind === 'pre-restore' && newest.restoredFrom) {
    const restored = live.find((r) => r.id === newest.restoredFrom);
    if (restored?.status === 'rolled-back') return restored;
  }
  return newest;
}

/**
 * The snapshot tree: children of each restore point by Proxmox `parent` (key: parent restore point
 * id; key undefined = roots, i.e. no parent or a parent AgentKeep did not make), each list oldest
 * first (by snaptime = createdAt), as the Proxmox Snapshots tab shows it.
 */
export function snapshotTree(rps: readonly RestorePoint[]): Map<string | undefined, RestorePoint[]> {
  const bySnap = new Map(rps.map((r) => [snapnameOf(r), r]));
  const tree = new Map<string | undefined, RestorePoint[]>();
  const sorted = [...rps].sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt));
  for (const rp of sorted) {
    const parent = rp.machine.parent ? bySnap.get(rp.machine.parent) : undefined;
    const key = parent && parent !== rp ? parent.id : undefined;
    const list = tree.get(key) ?? [];
    list.push(rp);
    tree.set(key, list);
  }
  return tree;
}

/** The message after a cancelled wait: the task goes on where it runs, and how to watch it. */
export function continuesMessage(target: string, what: string): string {
  const p = proxmoxOf(target);
  if (p) {
    const node = p.node === '-' ? 'NODE' : p.node;
    return `Stopped waiting for ${what}. The Proxmox task continues on ${p.host}: watch it under Tasks in the Proxmox web UI (node ${node}, VMID ${p.vmid}) or with \`pvesh get /nodes/${node}/tasks --vmid ${p.vmid}\` on the host. The Agent view updates when it ends.`;
  }
  return `Stopped waiting for ${what}. It continues in the AgentKeep sidecar; the Agent view updates when it ends.`;
}

/**
 * "AgentKeep: Set Proxmox API Token": ask for `USER@REALM!TOKENID=SECRET` (password input) unless
 * given, store it in SecretStorage, restart the sidecar with it. Returns the token id (no secret).
 */
export async function setProxmoxToken(secrets: vscode.SecretStorage, sidecar: Sidecar, token?: string): Promise<string | undefined> {
  let t = token;
  if (t === undefined) {
    t = await vscode.window.showInputBox({
      title: 'Proxmox API token',
      prompt: 'USER@REALM!TOKENID=SECRET (Datacenter > Permissions > API Tokens). Kept in VS Code\'s secret storage, never in settings.',
      placeHolder: 'agent@pve!agentkeep=xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx',
      password: true,
      ignoreFocusOut: true,
      validateInput: (v) => checkTokenFormat(v),
    });
    if (t === undefined) return undefined;
  }
  t = t.trim();
  const bad = checkTokenFormat(t);
  if (bad) throw new SidecarError(`That is not a Proxmox API token. ${bad}`, 'invalid_params', 'Copy the token id and secret from Datacenter > Permissions > API Tokens.');
  await secrets.store(TOKEN_SECRET_KEY, t);
  sidecar.output.appendLine('[extension] Proxmox API token stored in SecretStorage');
  await sidecar.refreshEnv();
  void vscode.window.showInformationMessage(`Proxmox API token ${tokenId(t)} saved in VS Code's secret storage.`);
  return tokenId(t);
}

/** "AgentKeep: Clear Proxmox API Token": delete it from SecretStorage and restart the sidecar without it. */
export async function clearProxmoxToken(secrets: vscode.SecretStorage, sidecar: Sidecar): Promise<boolean> {
  const had = (await secrets.get(TOKEN_SECRET_KEY)) !== undefined;
  await secrets.delete(TOKEN_SECRET_KEY);
  sidecar.output.appendLine('[extension] Proxmox API token removed from SecretStorage');
  await sidecar.refreshEnv();
  void vscode.window.setStatusBarMessage(had ? 'AgentKeep: Proxmox API token cleared' : 'AgentKeep: no Proxmox API token was stored', 4000);
  return had;
}

/**
 * "AgentKeep: Choose Agent": set agentkeep.target to `target`, or to a guest picked from
 * agent.discover (the agentkeep.proxmox.tag guests of the configured host). Returns the new target.
 * @throws SidecarError when no Proxmox host is configured or discovery fails.
 */
export async function chooseAgent(sidecar: Sidecar, target?: string): Promise<string | undefined> {
  requireTrust('Choosing the agent');
  let chosen = target;
  if (!chosen) {
    const where = discoveryTarget();
    if (!where) {
      throw new SidecarError('No Proxmox host is configured to discover agents on.', 'bad_target', 'Set agentkeep.proxmox.host (and run "AgentKeep: Set Proxmox API Token"), or set agentkeep.target.');
    }
    const tag = readProxmoxSettings().tag;
    const guests = withTag(await discoverGuests(sidecar, where, ''), tag);
    if (!guests.length) {
      throw new SidecarError(
        tag ? `No guest with the Proxmox tag "${tag}" is visible to the token.` : 'No guest is visible to the token.',
        'target_not_found',
        tag ? `Add the tag "${tag}" to the agent's VM or container (Options > Tags), or change agentkeep.proxmox.tag. The token needs VM.Audit on the guests.` : 'Give the token VM.Audit on the guests.',
      );
    }
    const current = readAgentConfig()?.target;
    const picked = await vscode.window.showQuickPick(
      guests.map((g) => ({
        label: `$(${g.type === 'lxc' ? 'package' : 'vm'}) ${g.name ?? `${g.type} ${g.vmid}`}`,
        description: `${g.vmid} · ${g.node} · ${g.status}${g.lock ? ` · locked (${g.lock})` : ''}${g.target === current ? ' · current' : ''}`,
        detail: g.tags.length ? `tags: ${g.tags.join(', ')}` : undefined,
        target: g.target,
      })),
      { title: 'Choose the agent this window manages', placeHolder: tag ? `Guests tagged "${tag}"` : 'All guests', matchOnDescription: true },
    );
    chosen = picked?.target;
    if (!chosen) return undefined;
  }
  const scope = vscode.workspace.workspaceFolders?.length ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
  await vscode.workspace.getConfiguration('agentkeep').update('target', chosen, scope);
  return chosen;
}
