/**
 * The AgentKeep commands. Every command that changes state needs a trusted workspace (checked here,
 * not only by `enablement`, because hidden commands stay callable). Commands accept arguments so
 * tests and other extensions can drive them without UI:
 *   agentkeep.createRestorePoint({label?, reason?})                       -> RestorePoint
 *   agentkeep.restore(id | treeNode | {id}, scope?, {confirm?: boolean})  -> restore result
 *   agentkeep.deleteRestorePoint(id | treeNode, {confirm?: boolean})      -> {deleted, freedBytes}
 *   agentkeep.keep(id | treeNode)                                          -> RestorePoint
 *   agentkeep.snapshotAndRun(lensArg, {decision?, timeoutMs?, shellIntegrationTimeoutMs?}) -> SnapshotAndRunResult
 *   agentkeep.run(lensArg)                                                 -> RunOutcome-like
 *   agentkeep.setupDemo({open?: boolean, root?: string})                   -> DemoAgent
 *   agentkeep.pickFolder(folder?: string)                                  -> {target, stores}
 * Errors are shown as a notification (message + hint) and the command resolves undefined; the last
 * error is kept for tests (Ctx.lastError).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ChangeSummary, ProgressParams, RestorePoint, ResultOf, Scope } from '../sidecar/protocol';
import { readAgentConfig, requireTrust, UntrustedError, type AgentConfig } from './config';
import { createDemoAgent, type DemoAgent } from './demo';
import { describeLoss, displayLabel, formatAge, plural, SCOPE_LABELS, shortReason } from './format';
import type { Sidecar } from './sidecar';
import { SidecarError, toSidecarError } from './sidecar';
import type { AgentStatusBar } from './statusBar';
import { runInTerminal } from './terminal';
import type { AgentNode, AgentTreeProvider } from './tree';

/** The argument of the CodeLens commands (from the sidecar's LSP CodeLens). Lines are 1-based. */
export interface LensArg {
  command: string;
  file: string;
  uri?: string;
  line: number;
  endLine?: number;
  class?: string;
}

/** Test/automation options of agentkeep.snapshotAndRun. */
export interface SnapshotAndRunOptions {
  /** Skip the Keep / Roll back prompt and do this. */
  decision?: 'keep' | 'rollback';
  /** Give up waiting for the command after this many ms. */
  timeoutMs?: number;
  /** How long to wait for terminal shell integration (ms, default 5000). */
  shellIntegrationTimeoutMs?: number;
}

/** What agentkeep.snapshotAndRun did. */
export interface SnapshotAndRunResult {
  restorePoint: RestorePoint;
  exitCode: number | undefined;
  viaShellIntegration: boolean;
  decision: 'keep' | 'rollback' | 'none' | 'cancelled';
  kept?: RestorePoint;
  restore?: ResultOf<'restorePointRestore'>;
}

/** State shared by the commands. */
export interface Ctx {
  context: vscode.ExtensionContext;
  sidecar: Sidecar;
  tree: AgentTreeProvider;
  statusBar: AgentStatusBar;
  output: vscode.OutputChannel;
  showDetails(id: string): Promise<void>;
  lastError?: { code: string; message: string; hint?: string };
}

/** A user-facing error raised by the extension itself (message names the problem, hint the fix). */
class UserError extends SidecarError {}

function requireConfig(): AgentConfig {
  const c = readAgentConfig();
  if (!c) throw new UserError('No agent is configured.', 'no_agent', 'Run "AgentKeep: Set Up Demo Agent" or "AgentKeep: Pick Agent Folder…", or set agentkeep.target.');
  return c;
}

/** Wrap a command: errors become a notification (message + hint) and are recorded for tests. */
function guarded<A extends unknown[], R>(ctx: Ctx, name: string, fn: (...args: A) => Promise<R>): (...args: A) => Promise<R | undefined> {
  return async (...args: A) => {
    try {
      ctx.lastError = undefined;
      return await fn(...args);
    } catch (e) {
      const err = e instanceof UntrustedError ? new SidecarError(e.message, e.code, e.hint) : toSidecarError(e);
      ctx.lastError = { code: err.code, message: err.message, hint: err.hint };
      ctx.output.appendLine(`[extension] ${name} failed: ${err.code}: ${err.full()}`);
      const show = err.code === 'untrusted' ? vscode.window.showWarningMessage : vscode.window.showErrorMessage;
      void show(err.full(), 'Show Log').then((b) => b && ctx.output.show());
      return undefined;
    }
  };
}

/** Register every command; returns their disposables. */
export function registerCommands(ctx: Ctx): vscode.Disposable[] {
  const reg = <A extends unknown[], R>(id: string, fn: (...args: A) => Promise<R>) => vscode.commands.registerCommand(id, guarded(ctx, id, fn));
  return [
    reg('agentkeep.createRestorePoint', (opts?: { label?: string; reason?: { text?: string } }) => createRestorePoint(ctx, opts)),
    reg('agentkeep.restore', (arg?: unknown, scope?: Scope, opts?: { confirm?: boolean }) => restore(ctx, arg, scope, opts)),
    reg('agentkeep.deleteRestorePoint', (arg?: unknown, opts?: { confirm?: boolean }) => deleteRestorePoint(ctx, arg, opts)),
    reg('agentkeep.keep', (arg?: unknown) => keep(ctx, arg)),
    reg('agentkeep.showDetails', async (arg?: unknown) => {
      const config = requireConfig();
      const id = await resolveId(ctx, config, arg, 'Show details of which restore point?');
      if (id) await ctx.showDetails(id);
    }),
    reg('agentkeep.refresh', async () => {
      ctx.tree.refresh();
      await ctx.statusBar.update();
    }),
    reg('agentkeep.setupDemo', (opts?: { open?: boolean; root?: string }) => setupDemo(ctx, opts)),
    reg('agentkeep.pickFolder', (folder?: string) => pickFolder(folder)),
    reg('agentkeep.showLog', async () => ctx.output.show()),
    reg('agentkeep.snapshotAndRun', (arg: LensArg, opts?: SnapshotAndRunOptions) => snapshotAndRun(ctx, arg, opts)),
    reg('agentkeep.run', async (arg: LensArg) => {
      requireTrust('Running a command');
      const lens = checkLens(arg);
      const out = await runInTerminal(lens.command, { cwd: path.dirname(lens.file), name: `Run: ${lens.command}` });
      return { exitCode: out.exitCode, viaShellIntegration: out.viaShellIntegration };
    }),
  ];
}

function checkLens(arg: unknown): LensArg {
  const a = arg as Partial<LensArg> | undefined;
  if (!a || typeof a.command !== 'string' || !a.command.trim() || typeof a.file !== 'string' || typeof a.line !== 'number') {
    throw new UserError('This command needs the CodeLens argument {command, file, line}.', 'invalid_params', 'Use the "Snapshot & run" or "Run" CodeLens above a command in a script.');
  }
  return a as LensArg;
}

/** Progress adapter: sidecar progress notifications -> a VS Code progress. */
function progressReporter(progress: vscode.Progress<{ message?: string; increment?: number }>): (p: ProgressParams) => void {
  let last = 0;
  return (p) => {
    let increment: number | undefined;
    if (p.total && p.done !== undefined) {
      const pct = Math.min(100, (p.done / p.total) * 100);
      increment = Math.max(0, pct - last);
      last = pct;
    }
    progress.report({ message: p.total ? `${p.message} (${p.done ?? 0}/${p.total})` : p.message, increment });
  };
}

async function createRestorePoint(ctx: Ctx, opts?: { label?: string; reason?: { text?: string } }): Promise<RestorePoint | undefined> {
  requireTrust('Creating a restore point');
  const config = requireConfig();
  let label = opts?.label;
  if (label === undefined) {
    label = await vscode.window.showInputBox({
      title: 'Create restore point',
      prompt: 'A label to recognise this restore point by',
      value: `Manual ${new Date().toLocaleString()}`,
      validateInput: (v) => (v.trim() ? undefined : 'Enter a label'),
    });
    if (label === undefined) return undefined;
  }
  const done = ctx.statusBar.setBusy('Creating restore point…');
  try {
    const rp = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'Creating restore point…' },
      (progress) => ctx.sidecar.request('restorePointCreate', { target: config.target, stores: config.stores, label, kind: 'manual', reason: opts?.reason }, progressReporter(progress)),
    );
    void vscode.window.showInformationMessage(`Restore point "${rp.label}" created.`);
    return rp;
  } finally {
    done();
    await afterChange(ctx);
  }
}

async function afterChange(ctx: Ctx): Promise<void> {
  ctx.tree.refresh();
  await ctx.statusBar.update();
}

/** Resolve an id from a string, a tree node or {id}; otherwise ask with a quick pick. */
async function resolveId(ctx: Ctx, config: AgentConfig, arg: unknown, title: string): Promise<string | undefined> {
  if (typeof arg === 'string' && arg) return arg;
  const node = arg as AgentNode | { id?: unknown } | undefined;
  if (node && 'kind' in node && node.kind === 'restorePoint') return node.rp.id;
  if (node && 'id' in node && typeof node.id === 'string') return node.id;
  const rp = await pickRestorePoint(ctx, config, title);
  return rp?.id;
}

async function pickRestorePoint(ctx: Ctx, config: AgentConfig, title: string): Promise<RestorePoint | undefined> {
  const rps = await ctx.sidecar.request('restorePointList', { target: config.target });
  if (!rps.length) {
    void vscode.window.showInformationMessage('This agent has no restore points yet. Use "Snapshot & run" above a risky command, or "AgentKeep: Create Restore Point".', 'Create Restore Point').then((b) => b && vscode.commands.executeCommand('agentkeep.createRestorePoint'));
    return undefined;
  }
  const byId = new Map(rps.map((r) => [r.id, r.label]));
  const picked = await vscode.window.showQuickPick(
    rps.map((rp) => ({
      label: `$(history) ${displayLabel(rp, byId)}`,
      description: [formatAge(rp.createdAt), shortReason(rp)].filter(Boolean).join(' · '),
      detail: `${rp.kind} · ${rp.status} · ${new Date(rp.createdAt).toLocaleString()}`,
      rp,
    })),
    { title, placeHolder: 'Pick a restore point (newest first)', matchOnDescription: true, matchOnDetail: true },
  );
  return picked?.rp;
}

async function findRestorePoint(ctx: Ctx, config: AgentConfig, id: string): Promise<RestorePoint> {
  const rps = await ctx.sidecar.request('restorePointList', { target: config.target });
  const rp = rps.find((r) => r.id === id);
  if (!rp) throw new UserError(`No restore point "${id}" for ${config.target}.`, 'restore_point_not_found', 'Refresh the Agent view and pick one from the list.');
  return rp;
}

/** Restore: pick > scope > confirmation (what will be lost) > restore with progress > Undo offer. */
async function restore(ctx: Ctx, arg?: unknown, scopeArg?: Scope, opts?: { confirm?: boolean }): Promise<ResultOf<'restorePointRestore'> | undefined> {
  requireTrust('Restoring a restore point');
  const config = requireConfig();
  const id = await resolveId(ctx, config, arg, 'Restore which restore point?');
  if (!id) return undefined;
  const rp = await findRestorePoint(ctx, config, id);
  let scope = scopeArg;
  if (!scope) {
    const picked = await vscode.window.showQuickPick(
      (['both', 'machine', 'agent'] as Scope[]).map((s) => ({ label: SCOPE_LABELS[s], scope: s, description: s === 'both' ? 'recommended' : undefined })),
      { title: `Restore "${rp.label}": what to put back?`, placeHolder: 'Scope of the restore' },
    );
    if (!picked) return undefined;
    scope = picked.scope;
  }
  if (opts?.confirm !== false) {
    const changes = await ctx.sidecar.request('restorePointDiff', { target: config.target, id, stores: config.stores });
    const answer = await vscode.window.showWarningMessage(
      `Restore "${rp.label}" (${formatAge(rp.createdAt)}): ${SCOPE_LABELS[scope]}?`,
      { modal: true, detail: describeLoss(changes, scope).join('\n') + '\n\nThe current state is captured first, so this restore can be undone.' },
      'Restore',
    );
    if (answer !== 'Restore') return undefined;
  }
  return doRestore(ctx, config, rp, scope);
}

async function doRestore(ctx: Ctx, config: AgentConfig, rp: RestorePoint, scope: Scope, quiet = false): Promise<ResultOf<'restorePointRestore'>> {
  const done = ctx.statusBar.setBusy(`Restoring ${rp.label}…`);
  try {
    const res = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Restoring "${rp.label}"…` },
      (progress) => ctx.sidecar.request('restorePointRestore', { target: config.target, id: rp.id, scope, stores: config.stores }, progressReporter(progress)),
    );
    if (!quiet) {
      void vscode.window.showInformationMessage(`Restored "${rp.label}" (${SCOPE_LABELS[scope]}). ${summarize(res.changes, scope)}`, 'Undo restore').then(async (b) => {
        if (b) await vscode.commands.executeCommand('agentkeep.restore', res.undo.id, scope, { confirm: false });
      });
    }
    return res;
  } finally {
    done();
    await afterChange(ctx);
  }
}

function summarize(c: ChangeSummary, scope: Scope): string {
  const parts: string[] = [];
  if (scope !== 'agent') {
    if (c.added.length) parts.push(`${plural(c.added.length, 'new file or folder', 'new files and folders')} removed`);
    if (c.changed.length) parts.push(`${plural(c.changed.length, 'file')} reverted`);
    if (c.removed.length) parts.push(`${plural(c.removed.length, 'file')} brought back`);
  }
  if (scope !== 'machine' && c.agentChanged.length) parts.push(`${plural(c.agentChanged.length, 'agent-state file')} put back`);
  return parts.length ? `${parts.join(', ')}.` : 'Nothing had changed.';
}

async function deleteRestorePoint(ctx: Ctx, arg?: unknown, opts?: { confirm?: boolean }): Promise<ResultOf<'restorePointDelete'> | undefined> {
  requireTrust('Deleting a restore point');
  const config = requireConfig();
  const id = await resolveId(ctx, config, arg, 'Delete which restore point?');
  if (!id) return undefined;
  const rp = await findRestorePoint(ctx, config, id);
  if (opts?.confirm !== false) {
    const answer = await vscode.window.showWarningMessage(
      `Delete restore point "${rp.label}" (${formatAge(rp.createdAt)})?`,
      { modal: true, detail: 'You will not be able to restore it any more. Files that other restore points also hold stay stored.' },
      'Delete',
    );
    if (answer !== 'Delete') return undefined;
  }
  try {
    const res = await ctx.sidecar.request('restorePointDelete', { target: config.target, id });
    void vscode.window.setStatusBarMessage(`Deleted restore point "${rp.label}"`, 4000);
    return res;
  } finally {
    await afterChange(ctx);
  }
}

async function keep(ctx: Ctx, arg?: unknown): Promise<RestorePoint | undefined> {
  requireTrust('Keeping a change');
  const config = requireConfig();
  const id = await resolveId(ctx, config, arg, 'Keep the change after which restore point?');
  if (!id) return undefined;
  try {
    return await ctx.sidecar.request('restorePointKeep', { target: config.target, id });
  } finally {
    await afterChange(ctx);
  }
}

/** Snapshot & run: restore point (kind pre) > run in a terminal > Keep / Roll back. */
async function snapshotAndRun(ctx: Ctx, arg: LensArg, opts: SnapshotAndRunOptions = {}): Promise<SnapshotAndRunResult | undefined> {
  requireTrust('Snapshot & run');
  const lens = checkLens(arg);
  const config = requireConfig();
  const reason = { command: lens.command, file: lens.file, line: lens.line, class: lens.class };
  const done = ctx.statusBar.setBusy('Creating restore point…');
  let rp: RestorePoint;
  let cancelled = false;
  try {
    rp = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Creating restore point before ${lens.command}`, cancellable: true },
      async (progress, token) => {
        const r = await ctx.sidecar.request('restorePointCreate', { target: config.target, stores: config.stores, label: lens.command, kind: 'pre', reason }, progressReporter(progress));
        cancelled = token.isCancellationRequested;
        return r;
      },
    );
  } finally {
    done();
    await afterChange(ctx);
  }
  if (cancelled) {
    void vscode.window.showInformationMessage(`Cancelled: ${lens.command} did not run. The restore point "${rp.label}" was created.`);
    return { restorePoint: rp, exitCode: undefined, viaShellIntegration: false, decision: 'cancelled' };
  }
  const outcome = await runInTerminal(lens.command, {
    cwd: path.dirname(lens.file),
    name: `AgentKeep: ${lens.command}`,
    timeoutMs: opts.timeoutMs,
    shellIntegrationTimeoutMs: opts.shellIntegrationTimeoutMs,
    assumeFinished: opts.decision !== undefined,
  });
  const result: SnapshotAndRunResult = { restorePoint: rp, exitCode: outcome.exitCode, viaShellIntegration: outcome.viaShellIntegration, decision: 'none' };
  let decision = opts.decision;
  if (!decision) {
    const failed = outcome.exitCode !== undefined && outcome.exitCode !== 0;
    const how = outcome.exitCode === undefined ? (outcome.finished ? 'finished' : 'may still be running') : `exited ${outcome.exitCode}`;
    const buttons = failed ? ['Roll back', 'Keep'] : ['Keep', 'Roll back'];
    const show = failed ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
    const answer = await show(`${lens.command} ${how}. Keep the change, or roll back to the restore point taken ${formatAge(rp.createdAt)}?`, ...buttons);
    decision = answer === 'Keep' ? 'keep' : answer === 'Roll back' ? 'rollback' : undefined;
  }
  if (decision === 'keep') {
    result.decision = 'keep';
    result.kept = await ctx.sidecar.request('restorePointKeep', { target: config.target, id: rp.id });
    await afterChange(ctx);
  } else if (decision === 'rollback') {
    result.decision = 'rollback';
    result.restore = await doRestore(ctx, config, rp, 'both');
  }
  return result;
}

/** Create the demo agent under global storage and open its workspace (unless open: false). */
async function setupDemo(ctx: Ctx, opts?: { open?: boolean; root?: string }): Promise<DemoAgent> {
  const root = opts?.root ?? path.join(ctx.context.globalStorageUri.fsPath, 'demo');
  const demo = createDemoAgent(root);
  ctx.output.appendLine(`[extension] demo agent ${demo.created ? 'created' : 'already there'} at ${demo.root}`);
  if (opts?.open !== false) {
    await vscode.commands.executeCommand('vscode.openFolder', vscode.Uri.file(demo.workspace), { forceNewWindow: false });
  }
  return demo;
}

/** Point agentkeep.target at a folder (and agentkeep.stores at its Hermes home, if any). */
async function pickFolder(folder?: string): Promise<{ target: string; stores: string[] } | undefined> {
  requireTrust('Choosing the agent folder');
  let dir = folder;
  if (!dir) {
    const picked = await vscode.window.showOpenDialog({ canSelectFolders: true, canSelectFiles: false, canSelectMany: false, openLabel: 'Use as agent folder', title: 'Pick the agent\'s home folder (e.g. the folder that holds .hermes)' });
    dir = picked?.[0]?.fsPath;
    if (!dir) return undefined;
  }
  if (!path.isAbsolute(dir) || !fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
    throw new UserError(`"${dir}" is not an existing folder.`, 'target_not_found', 'Pick a folder that exists on this machine.');
  }
  const stores: string[] = [];
  if (fs.existsSync(path.join(dir, 'memories'))) stores.push(`hermes:${dir}`);
  else if (fs.existsSync(path.join(dir, '.hermes', 'memories'))) stores.push(`hermes:${path.join(dir, '.hermes')}`);
  const where = vscode.workspace.workspaceFolders?.length ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
  const c = vscode.workspace.getConfiguration('agentkeep');
  await c.update('target', `dir:${dir}`, where);
  if (stores.length) await c.update('stores', stores, where);
  return { target: `dir:${dir}`, stores };
}
