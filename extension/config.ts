/**
 * Settings and workspace trust. `agentkeep.target`, `agentkeep.stores`, `agentkeep.stateDir` and
 * `agentkeep.proxmox.*` are restricted configurations: in an untrusted workspace VS Code only gives
 * their user-level values, so a cloned repository cannot redirect snapshots.
 */
import * as vscode from 'vscode';
import {
  LENS_SETTING_DEFAULTS,
  LensSettingKeys,
  parseCodeLensFilter,
  RISK_CLASSES,
  type CodeLensFilter,
} from '../sidecar/protocol';

/** The configured agent, or undefined when agentkeep.target is empty. */
export interface AgentConfig {
  target: string;
  stores: string[];
  stateDir?: string;
  /** agentkeep.retention.keep / keepImportant when set (passed with each restorePoint.create). */
  retention?: { keep?: number; keepImportant?: number };
}

/** Read agentkeep.* settings. Returns undefined when no target is configured. */
export function readAgentConfig(): AgentConfig | undefined {
  const c = vscode.workspace.getConfiguration('agentkeep');
  const target = (c.get<string>('target') ?? '').trim() || proxmoxTargetFromSettings();
  if (!target) return undefined;
  const stores = (c.get<string[]>('stores') ?? []).map((s) => s.trim()).filter(Boolean);
  const stateDir = (c.get<string>('stateDir') ?? '').trim() || undefined;
  const retention = readRetention(c);
  return { target, stores, stateDir, ...(retention ? { retention } : {}) };
}

/** agentkeep.retention.keep / keepImportant: whole numbers >= 0, else unset (the sidecar's config.json or defaults apply). */
function readRetention(c: vscode.WorkspaceConfiguration): AgentConfig['retention'] {
  const num = (k: string): number | undefined => {
    const v = c.get<unknown>(k);
    return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined;
  };
  const keep = num('retention.keep');
  const keepImportant = num('retention.keepImportant');
  if (keep === undefined && keepImportant === undefined) return undefined;
  return { ...(keep !== undefined ? { keep } : {}), ...(keepImportant !== undefined ? { keepImportant } : {}) };
}

/** agentkeep.proxmox.* settings (see package.json for their meaning). */
export interface ProxmoxSettings {
  host: string;
  port: number;
  /** Empty = look the node up (`-` in the target). */
  node: string;
  /** 0 = not set. */
  vmid: number;
  type: 'qemu' | 'lxc';
  /** Colon-hex SHA-256 fingerprint of the API certificate, or empty. */
  fingerprint: string;
  /** PEM file of the CA, or empty. */
  caFile: string;
  /** Tag of agent guests for discovery (default `agent`; empty = every guest). */
  tag: string;
}

/** Read agentkeep.proxmox.* (restricted configurations: user-level values only in an untrusted workspace). */
export function readProxmoxSettings(): ProxmoxSettings {
  const c = vscode.workspace.getConfiguration('agentkeep.proxmox');
  const str = (k: string, d = '') => (c.get<string>(k) ?? d).trim();
  return {
    host: str('host'),
    port: c.get<number>('port') || 8006,
    node: str('node'),
    vmid: c.get<number>('vmid') || 0,
    type: c.get<string>('type') === 'lxc' ? 'lxc' : 'qemu',
    fingerprint: str('fingerprint'),
    caFile: str('caFile'),
    tag: str('tag', 'agent'),
  };
}

/**
 * The target built from agentkeep.proxmox.host + vmid: `proxmox://HOST:PORT/NODE/TYPE/VMID` (NODE `-`
 * when agentkeep.proxmox.node is empty). Empty string when host or vmid is not set.
 */
export function proxmoxTargetFromSettings(s: ProxmoxSettings = readProxmoxSettings()): string {
  if (!s.host || !s.vmid) return '';
  const host = s.host.includes(':') && !s.host.startsWith('[') ? `[${s.host}]` : s.host; // IPv6
  return `proxmox://${host}:${s.port}/${s.node || '-'}/${s.type}/${s.vmid}`;
}

/**
 * agentkeep.sidecar.url and agentkeep.sidecar.fingerprint (restricted configurations: a workspace
 * cannot point the editor at another sidecar). Undefined when the URL is empty: the extension starts
 * its own sidecar. The token is in SecretStorage (remoteToken.ts), never here.
 */
export function readRemoteSettings(): { url: string; fingerprint: string } | undefined {
  const c = vscode.workspace.getConfiguration('agentkeep.sidecar');
  const url = (c.get<string>('url') ?? '').trim();
  return url ? { url, fingerprint: (c.get<string>('fingerprint') ?? '').trim() } : undefined;
}

/** agentkeep.stateDir (undefined = the sidecar's default). */
export function readStateDir(): string | undefined {
  return (vscode.workspace.getConfiguration('agentkeep').get<string>('stateDir') ?? '').trim() || undefined;
}

/**
 * The risk classes a CodeLens filter can name (the sidecar's list; package.json's agentkeep.codeLens enum
 * matches it), and the filter type: the protocol's (sidecar/protocol/risk.ts, lens.ts).
 */
export { RISK_CLASSES, type CodeLensFilter };

/** A setting of LensSettingKeys by its full name, read through its section (agentkeep / configFiles.codeLens). */
function lensSetting<T>(key: string, fallback: T): T {
  const [section, ...rest] = key.split('.');
  return vscode.workspace.getConfiguration(section).get<T>(rest.join('.'), fallback);
}

/**
 * agentkeep.codeLens: `"all"` (default), `"off"`, or a list of classes (deps, toolchain, config, system,
 * destructive, remote-code). The setting that came before it, `"agentkeep.codeLens.enabled": false` in a
 * settings.json, reads as `{enabled: false}` under the same key and still means "off".
 */
export function codeLensFilter(): CodeLensFilter {
  return parseCodeLensSetting(lensSetting<unknown>(LensSettingKeys.codeLens, LENS_SETTING_DEFAULTS.codeLens));
}

/** See codeLensFilter: the protocol's parseCodeLensFilter (unknown classes dropped; anything unreadable is "all"). */
export function parseCodeLensSetting(v: unknown): CodeLensFilter {
  return parseCodeLensFilter(v);
}

/** agentkeep.configFiles.codeLens: "Restore point before editing" on risky config files (default true). */
export function configFilesCodeLens(): boolean {
  return lensSetting<boolean>(LensSettingKeys.configFilesCodeLens, LENS_SETTING_DEFAULTS.configFilesCodeLens);
}

/** agentkeep.configFiles.prompt: ask for a restore point on the first change of a risky config file (default true). */
export function configFilesPrompt(): boolean {
  return lensSetting<boolean>(LensSettingKeys.configFilesPrompt, LENS_SETTING_DEFAULTS.configFilesPrompt);
}

let simulateUntrusted = false;

/** Test hook: behave as if the workspace were untrusted. */
export function setSimulateUntrusted(v: boolean): void {
  simulateUntrusted = v;
}

/** Whether the workspace is trusted (and not simulated untrusted by a test). */
export function isTrusted(): boolean {
  return vscode.workspace.isTrusted && !simulateUntrusted;
}

/** Thrown by actions that need a trusted workspace. */
export class UntrustedError extends Error {
  readonly code = 'untrusted';
  readonly hint = 'Trust this workspace (Manage Workspace Trust) to create or restore restore points and run commands.';
  constructor(action: string) {
    super(`${action} needs a trusted workspace.`);
    this.name = 'UntrustedError';
  }
}

/** Throw UntrustedError unless trusted. */
export function requireTrust(action: string): void {
  if (!isTrusted()) throw new UntrustedError(action);
}
