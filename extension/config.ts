/**
 * Settings and workspace trust. `agentkeep.target`, `agentkeep.stores`, `agentkeep.stateDir` are
 * restricted configurations: in an untrusted workspace VS Code only gives their user-level values.
 */
import * as vscode from 'vscode';

/** The configured agent, or undefined when agentkeep.target is empty. */
export interface AgentConfig {
  target: string;
  stores: string[];
  stateDir?: string;
}

/** Read agentkeep.* settings. Returns undefined when no target is configured. */
export function readAgentConfig(): AgentConfig | undefined {
  const c = vscode.workspace.getConfiguration('agentkeep');
  const target = (c.get<string>('target') ?? '').trim();
  if (!target) return undefined;
  const stores = (c.get<string[]>('stores') ?? []).map((s) => s.trim()).filter(Boolean);
  const stateDir = (c.get<string>('stateDir') ?? '').trim() || undefined;
  return { target, stores, stateDir };
}

/** agentkeep.stateDir (undefined = the sidecar's default). */
export function readStateDir(): string | undefined {
  return (vscode.workspace.getConfiguration('agentkeep').get<string>('stateDir') ?? '').trim() || undefined;
}

/** agentkeep.codeLens.enabled (default true). */
export function codeLensEnabled(): boolean {
  return vscode.workspace.getConfiguration('agentkeep').get<boolean>('codeLens.enabled', true);
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
