/**
 * The Agent view's commands for the agent's own moments (issue 15 item 7):
 *   agentkeep.approveRequest(id | treeNode | {id}, {confirm?: false})   -> request.approve result
 *   agentkeep.denyRequest(id | treeNode | {id}, {note?: string})        -> the denied RestoreRequest
 *   agentkeep.protectAgent({kind?, mcp?, quiet?})                        -> ProtectResult
 * Approve shows the same confirmation a restore of the person's own gets (restorePoint.preview as a
 * modal), then request.approve runs the normal restore in the sidecar (with its pre-restore point).
 * Protect runs `agentkeep hook install hermes|agent-zero … --json` (out/sidecar.js, with Node) for the
 * configured target and stores: the hook installers are a CLI front end of the sidecar, not a
 * protocol method. All three need a trusted workspace.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { RestorePoint, RestoreRequest, ResultOf, Scope, StoreDescription } from '../sidecar/protocol';
import { readAgentConfig, readStateDir, requireTrust, type AgentConfig } from './config';
import { formatAge, SCOPE_LABELS } from './format';
import {
  agentZeroMcpSettings,
  hookAgentName,
  hookCandidates,
  hookInstallArgs,
  parseHookInstallOutput,
  requestView,
  type HookCandidate,
  type HookInstallOutput,
  type HookKind,
} from './origin';
import { SidecarError, toSidecarError, type Sidecar } from './sidecar';
import type { AgentNode } from './tree';

/** What the commands need from the extension (commands.ts passes its Ctx and its restore helpers). */
export interface AgentCommandDeps {
  context: vscode.ExtensionContext;
  sidecar: Sidecar;
  output: vscode.OutputChannel;
  afterChange(): Promise<void>;
  /** The restore confirmation of agentkeep.restore (restorePoint.preview as a modal); undefined = not confirmed. */
  confirmRestore(
    config: AgentConfig,
    rp: RestorePoint,
    scope: Scope,
    question: string,
    button: string,
  ): Promise<{ start?: boolean } | undefined>;
}

/** What agentkeep.protectAgent did. */
export interface ProtectResult {
  kind: HookKind;
  agent: string;
  /** The CLI's --json output: the change (files, message, notes with Hermes' first-use consent). */
  change: HookInstallOutput;
  /** Agent Zero: its MCP server settings (JSON) for Settings → MCP servers. */
  mcpSettings?: string;
}

function noAgent(): SidecarError {
  return new SidecarError(
    'No agent is configured.',
    'no_agent',
    'Run "AgentKeep: Set Up Demo Agent" or "AgentKeep: Pick Agent Folder…", or set agentkeep.target.',
  );
}

/** The pending request `arg` names (an id, a tree node, {id}), else one picked from the pending ones. */
async function resolveRequest(
  deps: AgentCommandDeps,
  config: AgentConfig,
  arg: unknown,
  title: string,
): Promise<RestoreRequest | undefined> {
  const node = arg as AgentNode | { id?: unknown } | undefined;
  const id =
    typeof arg === 'string'
      ? arg
      : node && 'kind' in node && node.kind === 'request'
        ? node.request.id
        : node && 'id' in node && typeof node.id === 'string'
          ? node.id
          : undefined;
  const pending = await deps.sidecar.request('requestList', { target: config.target, status: 'pending' });
  if (id) {
    const r = pending.find((x) => x.id === id);
    if (r) return r;
    const any = (await deps.sidecar.request('requestList', {})).find((x) => x.id === id);
    throw new SidecarError(
      any ? `Restore request ${id} is ${any.status}, not pending.` : `No restore request ${id}.`,
      'invalid_params',
      'Refresh the Agent view: only pending requests can be approved or denied.',
    );
  }
  if (!pending.length) {
    void vscode.window.showInformationMessage('The agent has no restore request waiting.');
    return undefined;
  }
  const rps = await deps.sidecar.request('restorePointList', { target: config.target }).catch(() => []);
  const picked = await vscode.window.showQuickPick(
    pending.map((r) => {
      const v = requestView(
        r,
        rps.find((p) => p.id === r.restorePoint),
      );
      return { label: `$(question) ${v.label}`, description: v.description, r };
    }),
    { title, placeHolder: 'Pick a restore request (newest first)' },
  );
  return picked?.r;
}

/**
 * Approve a restore request: the normal restore confirmation (what the restore of its scope changes,
 * from restorePoint.preview), then request.approve, which restores with a pre-restore point (Undo).
 */
export async function approveRequest(
  deps: AgentCommandDeps,
  arg?: unknown,
  opts?: { confirm?: boolean },
): Promise<ResultOf<'requestApprove'> | undefined> {
  requireTrust("Approving the agent's restore request");
  const configured = readAgentConfig();
  if (!configured) throw noAgent();
  const req = await resolveRequest(deps, configured, arg, "Approve which of the agent's restore requests?");
  if (!req) return undefined;
  const config = req.stores ? { ...configured, stores: req.stores } : configured;
  const rps = await deps.sidecar.request('restorePointList', { target: config.target });
  const rp = rps.find((p) => p.id === req.restorePoint);
  if (!rp)
    throw new SidecarError(
      `The agent asks to restore ${req.restorePoint}, which ${config.target} no longer has.`,
      'restore_point_not_found',
      'Deny the request (it cannot be carried out).',
    );
  if (opts?.confirm !== false) {
    const who = req.agent ? `The agent ${req.agent}` : 'The agent';
    const question = `${who} asks to restore "${rp.label}" (${formatAge(rp.createdAt)}): ${SCOPE_LABELS[req.scope]}. Reason: ${req.reason}`;
    const ok = await deps.confirmRestore(config, rp, req.scope, question, 'Approve and Restore');
    if (!ok) return undefined;
  }
  try {
    const res = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Restoring "${rp.label}" for the agent…` },
      () => deps.sidecar.request('requestApprove', { id: req.id }),
    );
    const undo = res.restore?.undo;
    deps.output.appendLine(
      `[extension] approved restore request ${req.id}: restored ${rp.id} (${req.scope}), undo ${undo ?? '-'}`,
    );
    void vscode.window
      .showInformationMessage(
        `Approved: restored "${rp.label}" (${SCOPE_LABELS[req.scope]}) as the agent asked.`,
        ...(undo ? ['Undo restore'] : []),
      )
      .then(async (b) => {
        if (b && undo) await vscode.commands.executeCommand('agentkeep.restore', undo, req.scope, { confirm: false });
      });
    return res;
  } finally {
    await deps.afterChange();
  }
}

/** Deny a restore request (request.deny, with an optional note the agent reads in request.list). */
export async function denyRequest(
  deps: AgentCommandDeps,
  arg?: unknown,
  opts?: { note?: string },
): Promise<RestoreRequest | undefined> {
  requireTrust("Denying the agent's restore request");
  const config = readAgentConfig();
  if (!config) throw noAgent();
  const req = await resolveRequest(deps, config, arg, "Deny which of the agent's restore requests?");
  if (!req) return undefined;
  let note = opts?.note;
  if (note === undefined) {
    note = await vscode.window.showInputBox({
      title: `Deny the restore of ${req.restorePoint}`,
      prompt: 'Why not? (optional: the agent sees it in request list; Enter denies, Escape cancels)',
      placeHolder: 'e.g. fix the config instead of rolling back',
    });
    if (note === undefined) return undefined;
  }
  try {
    const r = await deps.sidecar.request('requestDeny', { id: req.id, ...(note.trim() ? { note: note.trim() } : {}) });
    void vscode.window.setStatusBarMessage(`AgentKeep: denied the agent's restore request ${req.id}`, 4000);
    return r;
  } finally {
    await deps.afterChange();
  }
}

/**
 * A Node to run the hooks with. In desktop VS Code the extension host is Electron (`process.execPath`
 * would start the editor), so `node` is looked up on PATH; elsewhere (code-server, a remote VS Code
 * Server) the extension host's own Node is used.
 * @throws SidecarError naming the fix when no Node is found
 */
export function hookNode(env: NodeJS.ProcessEnv = process.env): string {
  if (!process.versions.electron) return process.execPath;
  const names = process.platform === 'win32' ? ['node.exe'] : ['node'];
  for (const dir of (env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    for (const n of names) {
      const p = path.join(dir, n);
      try {
        fs.accessSync(p, fs.constants.X_OK);
        return p;
      } catch {
        // not here
      }
    }
  }
  throw new SidecarError(
    'The agent hooks run AgentKeep with Node, and no node was found on PATH (this VS Code runs on Electron).',
    'unsupported',
    'Install Node 20 or later so that `node` is on PATH, or run `agentkeep hook install` in a terminal.',
  );
}

/** Run `node out/sidecar.js ARGS` and parse its --json output. @throws SidecarError with the CLI's error */
function runCli(node: string, sidecar: string, args: string[]): Promise<HookInstallOutput> {
  return new Promise((resolve, reject) => {
    execFile(node, [sidecar, ...args], { timeout: 60_000, maxBuffer: 4 << 20 }, (err, stdout, stderr) => {
      try {
        const out = parseHookInstallOutput(stdout);
        if ('ok' in out) return resolve(out.ok);
        reject(new SidecarError(out.error.message, out.error.code, out.error.hint));
      } catch (e) {
        const why = err ? `${err.message}${stderr ? `: ${stderr.trim()}` : ''}` : String(e);
        reject(new SidecarError(`agentkeep hook install failed: ${why}`, 'internal', 'Show the log for details.'));
      }
    });
  });
}

/**
 * "Protect this agent's own changes": install the agent's own hook (Hermes config.yaml hooks, or
 * Agent Zero's extension files) for the configured target and stores, so the agent's risky tool
 * calls get pre/post restore points. Which agent comes from the stores (a quick pick when there are
 * several); Hermes is offered its MCP server too (`--mcp`), Agent Zero gets its MCP settings to copy.
 * The result (with Hermes' first-use consent note) is shown as a modal unless `quiet`.
 */
export async function protectAgent(
  deps: AgentCommandDeps,
  opts: { kind?: HookKind; mcp?: boolean; quiet?: boolean } = {},
): Promise<ProtectResult | undefined> {
  requireTrust("Protecting the agent's own changes");
  const config = readAgentConfig();
  if (!config) throw noAgent();
  const described = await Promise.all(
    config.stores.map((s) =>
      deps.sidecar.describeStore(s).then(
        (d): StoreDescription => d,
        (e) => ({ store: s, error: toSidecarError(e).message }),
      ),
    ),
  );
  const { candidates, skipped } = hookCandidates(described);
  const usable = opts.kind ? candidates.filter((c) => c.kind === opts.kind) : candidates;
  if (!usable.length) {
    throw new SidecarError(
      `No ${opts.kind === 'agent-zero' ? 'Agent Zero folder' : opts.kind === 'hermes' ? 'Hermes home' : 'Hermes home or Agent Zero folder'} on this machine among agentkeep.stores${skipped.length ? ` (${skipped.join('; ')})` : ''}.`,
      'invalid_params',
      'Add the agent\'s store to agentkeep.stores, e.g. "hermes:/home/me/.hermes" or "agent-zero:/a0", or use "Pick Agent Folder…".',
    );
  }
  let c: HookCandidate | undefined = usable[0];
  if (usable.length > 1) {
    const picked = await vscode.window.showQuickPick(
      usable.map((x) => ({ label: x.label, description: x.store, c: x })),
      { title: "Protect which agent's own changes?", placeHolder: 'The agent whose tool calls get restore points' },
    );
    c = picked?.c;
  }
  if (!c) return undefined;
  let mcp = opts.mcp;
  if (!opts.quiet && (mcp === undefined || c.kind === 'agent-zero')) {
    const hermes = c.kind === 'hermes';
    const what = hermes
      ? `Add AgentKeep's hooks to Hermes' config.yaml in ${c.dir}?`
      : `Write AgentKeep's extension files into Agent Zero at ${c.dir}?`;
    const detail = [
      `Before a risky tool call of the agent (an install, an update, a config rewrite, a destructive command) the hook takes a restore point of ${config.target}, and another one after it, paired. Other calls pass at once.`,
      hermes
        ? "AgentKeep's MCP server lets the agent take a restore point itself before something larger, and ask you for a restore (it shows here under Restore requests)."
        : 'Agent Zero gets AgentKeep as an MCP server in its own settings: the settings to paste are shown after the install.',
      hermes
        ? 'config.yaml keeps every other line and comment; a backup is kept, and `agentkeep hook remove hermes` puts it back.'
        : '`agentkeep hook remove agent-zero` deletes the two files again.',
    ].join('\n\n');
    const buttons = hermes ? ['Install Hooks and MCP Server', 'Install Hooks Only'] : ['Install'];
    const answer = await vscode.window.showInformationMessage(what, { modal: true, detail }, ...buttons);
    if (!answer) return undefined;
    if (hermes && mcp === undefined) mcp = answer === 'Install Hooks and MCP Server';
  }
  const agents = await deps.sidecar.request('agentList', {}).then(
    (r) => r.agents,
    () => [],
  );
  const agent = hookAgentName(c.kind, config, agents);
  const node = hookNode();
  const sidecar = deps.context.asAbsolutePath('out/sidecar.js');
  const args = hookInstallArgs(c, {
    agent,
    target: config.target,
    stores: config.stores,
    mcp,
    stateDir: readStateDir(),
  });
  deps.output.appendLine(`[extension] ${node} ${sidecar} ${args.join(' ')}`);
  const change = await runCli(node, sidecar, args);
  deps.output.appendLine(`[extension] ${change.message}${change.notes.map((n) => `\n  Note: ${n}`).join('')}`);
  const result: ProtectResult = { kind: c.kind, agent, change };
  if (c.kind === 'agent-zero')
    result.mcpSettings = agentZeroMcpSettings({ node, sidecar, agent, stateDir: change.stateDir ?? readStateDir() });
  await deps.afterChange();
  const detail = [
    ...change.notes,
    ...(result.mcpSettings
      ? [`AgentKeep's MCP server for Agent Zero (Settings → MCP servers):\n${result.mcpSettings}`]
      : []),
  ].join('\n\n');
  const buttons = result.mcpSettings ? ['Copy MCP Settings'] : [];
  const shown = opts.quiet
    ? vscode.window.showInformationMessage(`AgentKeep: ${change.message}`, ...buttons)
    : vscode.window.showInformationMessage(change.message, { modal: true, detail }, ...buttons);
  void Promise.resolve(shown).then(async (b) => {
    if (b === 'Copy MCP Settings' && result.mcpSettings) await vscode.env.clipboard.writeText(result.mcpSettings);
  });
  return result;
}
