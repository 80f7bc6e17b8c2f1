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
import { readAgentConfig, readProxmoxSettings, requireTrust } from './config';
import { agentPicks, checkTokenFormat, hostOf, tokenId, withTag, type Guest } from './proxmoxModel';
import type { Sidecar } from './sidecar';
import { SidecarError } from './sidecar';

export * from './proxmoxModel';

/** SecretStorage key of the Proxmox API token. */
export const TOKEN_SECRET_KEY = 'agentkeep.proxmox.token';

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

/**
 * Where to discover guests: the configured target when its backend discovers agents (target.describe
 * `capabilities.discover`: a Proxmox guest), else agentkeep.proxmox.host. Undefined when neither is set.
 */
export async function discoveryTarget(sidecar: Sidecar): Promise<string | undefined> {
  const config = readAgentConfig();
  const d = config ? await sidecar.describeTarget(config.target).catch(() => undefined) : undefined;
  if (config && d?.capabilities.discover) return config.target;
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

/**
 * "AgentKeep: Set Proxmox API Token": ask for `USER@REALM!TOKENID=SECRET` (password input) unless
 * given, store it in SecretStorage, restart the sidecar with it. Returns the token id (no secret).
 */
export async function setProxmoxToken(
  secrets: vscode.SecretStorage,
  sidecar: Sidecar,
  token?: string,
): Promise<string | undefined> {
  let t = token;
  if (t === undefined) {
    t = await vscode.window.showInputBox({
      title: 'Proxmox API token',
      prompt:
        "USER@REALM!TOKENID=SECRET (Datacenter > Permissions > API Tokens). Kept in VS Code's secret storage, never in settings.",
      placeHolder: 'agent@pve!agentkeep=xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx',
      password: true,
      ignoreFocusOut: true,
      validateInput: (v) => checkTokenFormat(v),
    });
    if (t === undefined) return undefined;
  }
  t = t.trim();
  const bad = checkTokenFormat(t);
  if (bad)
    throw new SidecarError(
      `That is not a Proxmox API token. ${bad}`,
      'invalid_params',
      'Copy the token id and secret from Datacenter > Permissions > API Tokens.',
    );
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
  void vscode.window.setStatusBarMessage(
    had ? 'AgentKeep: Proxmox API token cleared' : 'AgentKeep: no Proxmox API token was stored',
    4000,
  );
  return had;
}

/**
 * "AgentKeep: Choose Agent": set agentkeep.target to `target`, or to a named agent of the sidecar's
 * state dir (agent.list: agentkeep.target and agentkeep.stores) or a guest picked from agent.discover
 * (the agentkeep.proxmox.tag guests of the configured host). Returns the new target.
 * @throws SidecarError when there is no named agent and no Proxmox host is configured, or discovery fails.
 */
export async function chooseAgent(sidecar: Sidecar, target?: string): Promise<string | undefined> {
  requireTrust('Choosing the agent');
  let chosen = target;
  let stores: string[] | undefined;
  if (!chosen) {
    // the named agents (agentkeep agent add); a state dir the sidecar cannot read just offers none
    const named = (await sidecar.request('agentList', {}).catch(() => undefined))?.agents ?? [];
    const where = await discoveryTarget(sidecar);
    if (!where && !named.length) {
      throw new SidecarError(
        'No Proxmox host is configured to discover agents on, and no named agent is set up.',
        'bad_target',
        'Set agentkeep.proxmox.host (and run "AgentKeep: Set Proxmox API Token"), name one with ' +
          'agentkeep agent add NAME --target T, or set agentkeep.target.',
      );
    }
    const tag = readProxmoxSettings().tag;
    // with named agents to offer, a failing discovery only leaves the guests out
    const found = where
      ? await discoverGuests(sidecar, where, '').catch((e: unknown) => (named.length ? [] : Promise.reject(e)))
      : [];
    const guests = withTag(found, tag);
    if (!guests.length && !named.length) {
      throw new SidecarError(
        tag ? `No guest with the Proxmox tag "${tag}" is visible to the token.` : 'No guest is visible to the token.',
        'target_not_found',
        tag
          ? `Add the tag "${tag}" to the agent's VM or container (Options > Tags), or change agentkeep.proxmox.tag. The token needs VM.Audit on the guests.`
          : 'Give the token VM.Audit on the guests.',
      );
    }
    const current = readAgentConfig()?.target;
    const what = [named.length ? 'Named agents' : '', where ? (tag ? `guests tagged "${tag}"` : 'all guests') : ''];
    const picked = await vscode.window.showQuickPick(agentPicks(named, guests, current), {
      title: 'Choose the agent this window manages',
      placeHolder: what.filter(Boolean).join(', then '),
      matchOnDescription: true,
    });
    chosen = picked?.target;
    stores = picked?.stores;
    if (!chosen) return undefined;
  }
  const scope = vscode.workspace.workspaceFolders?.length
    ? vscode.ConfigurationTarget.Workspace
    : vscode.ConfigurationTarget.Global;
  await vscode.workspace.getConfiguration('agentkeep').update('target', chosen, scope);
  if (stores) await vscode.workspace.getConfiguration('agentkeep').update('stores', stores, scope);
  return chosen;
}
