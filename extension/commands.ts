/**
 * The AgentKeep commands. Every command that changes state needs a trusted workspace (checked here,
 * not only by `enablement`, because hidden commands stay callable). Commands accept arguments so
 * tests and other extensions can drive them without UI:
 *   agentkeep.createRestorePoint({label?, reason?, vmstate?})             -> RestorePoint
 *   agentkeep.createRestorePointWithRam({label?, reason?})                -> RestorePoint (Proxmox qemu: RAM state)
 *   agentkeep.restore(id | treeNode | {id}, scope?, {confirm?, start?, stores?}) -> restore result
 *   agentkeep.setProxmoxToken(token?) / agentkeep.clearProxmoxToken()     -> token id / whether one was stored
 *   agentkeep.setSidecarToken(token?) / agentkeep.clearSidecarToken()     -> stored / whether one was stored
 *   agentkeep.reconnectSidecar()                                          -> (connects to the remote sidecar now)
 *   agentkeep.chooseAgent(target?)                                         -> the new agentkeep.target
 *   agentkeep.deleteRestorePoint(id | treeNode, {confirm?: boolean})      -> {deleted, freedBytes}
 *   agentkeep.keep(id | treeNode)                                          -> RestorePoint
 *   agentkeep.snapshotAndRun(lensArg, {decision?, fresh?, timeoutMs?, shellIntegrationTimeoutMs?}) -> SnapshotAndRunResult
 *   agentkeep.run(lensArg)                                                 -> RunOutcome-like
 *   agentkeep.compare(id | treeNode, toId?)                                -> CompareResult (pre/post pair, or two ids)
 *   agentkeep.compareWithNow(id | treeNode)                                -> CompareResult
 *   agentkeep.restorePointBeforeEdit({file}, {fresh?})                     -> {restorePoint, reused}
 *   agentkeep.setupDemo({open?: boolean, root?: string})                   -> DemoAgent
 *   agentkeep.pickFolder(folder?: string)                                  -> {target, stores}
 *   agentkeep.runAction(nextAction, {confirm?: boolean})                   -> the action's result (actions.ts)
 *   agentkeep.approveRequest(id | treeNode, {confirm?}) / denyRequest(id | treeNode, {note?}) -> (agentCommands.ts)
 *   agentkeep.protectAgent({kind?, mcp?, quiet?})                          -> ProtectResult (agentCommands.ts)
 * Errors are shown as a notification (message + hint, the sidecar's next actions as buttons) and the
 * command resolves undefined; the last error is kept for tests (Ctx.lastError).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  LensArgument,
  LensCommands,
  NextAction,
  REUSE_WINDOW_MS,
  type ChangeSummary,
  type Notice,
  type ProgressParams,
  type RestorePoint,
  type ResultOf,
  type Scope,
  type TargetDescription,
} from '../sidecar/protocol';
import { RUN_ACTION, runAction, showWithActions } from './actions';
import { approveRequest, denyRequest, protectAgent, type AgentCommandDeps } from './agentCommands';
import { compareRestorePoints, compareWithNow, type CompareResult } from './compare';
import { readAgentConfig, requireTrust, UntrustedError, type AgentConfig } from './config';
import type { ConfigFiles } from './configFiles';
import { createDemoAgent, type DemoAgent } from './demo';
import {
  describeGitRepos,
  describeMemoryLoss,
  describePreview,
  displayLabel,
  formatAge,
  plural,
  SCOPE_LABELS,
  shortCommand,
  shortReason,
} from './format';
import type { Sidecar } from './sidecar';
import { SidecarError, toSidecarError } from './sidecar';
import type { AgentStatusBar } from './statusBar';
import { runInTerminal } from './terminal';
import type { AgentNode, AgentTreeProvider } from './tree';
import {
  canRamState,
  chooseAgent,
  clearProxmoxToken,
  continuesMessage,
  guestWord,
  isVmTarget,
  ROLLBACK_AND_START,
  setProxmoxToken,
  vmRestoreOutcome,
  vmRollbackButtons,
  vmRollbackDetail,
  vmRollbackQuestion,
} from './proxmox';
import { clearSidecarToken, setSidecarToken } from './remoteToken';
import { CANCELLED } from './sidecar';

/** The argument of the CodeLens commands (the sidecar's LSP CodeLens): the protocol's LensArgument (1-based lines). */
export type LensArg = LensArgument;

/** Test/automation options of agentkeep.snapshotAndRun. */
export interface SnapshotAndRunOptions {
  /** Skip the Keep / Roll back / Compare prompt and do this (rollback then skips its confirmation). */
  decision?: 'keep' | 'rollback';
  /** Always take a new pre restore point (no reuse of one taken in the last 60 s). */
  fresh?: boolean;
  /** Give up waiting for the command after this many ms. */
  timeoutMs?: number;
  /** How long to wait for terminal shell integration (ms, default 5000). */
  shellIntegrationTimeoutMs?: number;
}

/** What agentkeep.snapshotAndRun did. */
export interface SnapshotAndRunResult {
  /** The pre restore point (taken, or reused when one of the last 60 s still matches the target). */
  restorePoint: RestorePoint;
  /** True when the pre restore point was reused (see REUSE_WINDOW_MS). */
  reused: boolean;
  /** The post restore point (kind post, pairOf = the pre's id); absent when cancelled. */
  post?: RestorePoint;
  exitCode: number | undefined;
  viaShellIntegration: boolean;
  decision: 'keep' | 'rollback' | 'none' | 'cancelled';
  /** After Keep: the pre and post restore points, both with status kept. */
  kept?: RestorePoint;
  keptPost?: RestorePoint;
  restore?: ResultOf<'restorePointRestore'>;
  /** Compare views opened from the notification. */
  compared?: CompareResult[];
}

/** An automatic restore point younger than this (ms) is reused when nothing changed since (the protocol's). */
export { REUSE_WINDOW_MS };

/** State shared by the commands. */
export interface Ctx {
  context: vscode.ExtensionContext;
  sidecar: Sidecar;
  tree: AgentTreeProvider;
  statusBar: AgentStatusBar;
  output: vscode.OutputChannel;
  showDetails(id: string): Promise<void>;
  lastError?: { code: string; message: string; hint?: string; actions?: NextAction[] };
  /** The message shown after the last VM rollback (machine state, warnings), for tests. */
  lastRestoreMessage?: string;
  /** The config-file lenses and prompt (told when a restore point is taken before an edit). */
  configFiles?: ConfigFiles;
}

/** A user-facing error raised by the extension itself (message names the problem, hint the fix). */
class UserError extends SidecarError {}

/**
 * What the target is and can do (target.describe, cached by the Sidecar); undefined when the sidecar
 * cannot say (a target that does not parse: the request that follows reports that error).
 */
function describe(ctx: Pick<Ctx, 'sidecar'>, target: string): Promise<TargetDescription | undefined> {
  return ctx.sidecar.describeTarget(target).catch(() => undefined);
}

function requireConfig(): AgentConfig {
  const c = readAgentConfig();
  if (!c)
    throw new UserError(
      'No agent is configured.',
      'no_agent',
      'Run "AgentKeep: Set Up Demo Agent" or "AgentKeep: Pick Agent Folder…", or set agentkeep.target.',
    );
  return c;
}

/** The button that fixes an error code in VS Code, and the command it runs. */
const FIXES: Record<string, { title: string; command: [string, ...unknown[]] }> = {
  auth_failed: { title: 'Set Proxmox API Token', command: ['agentkeep.setProxmoxToken'] },
  no_sidecar_token: { title: 'Set Remote Sidecar Token', command: ['agentkeep.setSidecarToken'] },
  sidecar_unauthorized: { title: 'Set Remote Sidecar Token', command: ['agentkeep.setSidecarToken'] },
  sidecar_tls: { title: 'Open Settings', command: ['workbench.action.openSettings', 'agentkeep.sidecar'] },
  bad_sidecar_url: { title: 'Open Settings', command: ['workbench.action.openSettings', 'agentkeep.sidecar'] },
  sidecar_unreachable: { title: 'Reconnect', command: ['agentkeep.reconnectSidecar'] },
  connection_lost: { title: 'Reconnect', command: ['agentkeep.reconnectSidecar'] },
};

/** Wrap a command: errors become a notification (message + hint) and are recorded for tests. */
export function guarded<A extends unknown[], R>(
  ctx: Pick<Ctx, 'output' | 'lastError'>,
  name: string,
  fn: (...args: A) => Promise<R>,
): (...args: A) => Promise<R | undefined> {
  return async (...args: A) => {
    try {
      ctx.lastError = undefined;
      return await fn(...args);
    } catch (e) {
      const err = e instanceof UntrustedError ? new SidecarError(e.message, e.code, e.hint) : toSidecarError(e);
      const actions = err.actions ? { actions: err.actions } : {};
      ctx.lastError = { code: err.code, message: err.message, hint: err.hint, ...actions };
      ctx.output.appendLine(`[extension] ${name} failed: ${err.code}: ${err.full()}`);
      const show =
        err.code === 'untrusted' || err.code === CANCELLED
          ? vscode.window.showWarningMessage
          : vscode.window.showErrorMessage;
      // Proxmox refused or lacks credentials: the fix in VS Code is the token command, not an env var;
      // the remote sidecar's token, fingerprint or URL likewise (extension/remote.ts codes)
      const fix = FIXES[err.code];
      // the sidecar's next actions (undo, finish the restore, list, ...) are buttons that run them
      void showWithActions(show, err.full(), err.actions, [...(fix ? [fix.title] : []), 'Show Log']).then((b) =>
        fix && b === fix.title ? vscode.commands.executeCommand(...fix.command) : b && ctx.output.show(),
      );
      return undefined;
    }
  };
}

/** Register every command; returns their disposables. */
export function registerCommands(ctx: Ctx): vscode.Disposable[] {
  const reg = <A extends unknown[], R>(id: string, fn: (...args: A) => Promise<R>) =>
    vscode.commands.registerCommand(id, guarded(ctx, id, fn));
  const agentDeps: AgentCommandDeps = {
    context: ctx.context,
    sidecar: ctx.sidecar,
    output: ctx.output,
    afterChange: () => afterChange(ctx),
    confirmRestore: (config, rp, scope, question, button) => confirmRestore(ctx, config, rp, scope, question, button),
  };
  // a menu passes the tree node (or nothing) as the first argument: only an options object counts
  const optsOf = <T extends object>(v: unknown): T | undefined =>
    v && typeof v === 'object' && !('kind' in v && 'config' in v) ? (v as T) : undefined;
  return [
    reg('agentkeep.approveRequest', (arg?: unknown, opts?: { confirm?: boolean }) =>
      approveRequest(agentDeps, arg, optsOf(opts)),
    ),
    reg('agentkeep.denyRequest', (arg?: unknown, opts?: { note?: string }) =>
      denyRequest(agentDeps, arg, optsOf(opts)),
    ),
    reg('agentkeep.protectAgent', (opts?: unknown) =>
      protectAgent(agentDeps, optsOf<NonNullable<Parameters<typeof protectAgent>[1]>>(opts) ?? {}),
    ),
    reg('agentkeep.createRestorePoint', (opts?: CreateOptions) => createRestorePoint(ctx, opts)),
    reg('agentkeep.createRestorePointWithRam', (opts?: CreateOptions) =>
      createRestorePoint(ctx, { ...opts, vmstate: true }),
    ),
    reg('agentkeep.restore', (arg?: unknown, scope?: Scope, opts?: RestoreOptions) => restore(ctx, arg, scope, opts)),
    reg('agentkeep.setProxmoxToken', (token?: string) =>
      setProxmoxToken(ctx.context.secrets, ctx.sidecar, typeof token === 'string' ? token : undefined),
    ),
    reg('agentkeep.clearProxmoxToken', () => clearProxmoxToken(ctx.context.secrets, ctx.sidecar)),
    reg('agentkeep.setSidecarToken', (token?: string) =>
      setSidecarToken(ctx.context.secrets, ctx.sidecar, typeof token === 'string' ? token : undefined),
    ),
    reg('agentkeep.clearSidecarToken', () => clearSidecarToken(ctx.context.secrets, ctx.sidecar)),
    reg('agentkeep.reconnectSidecar', async () => {
      await ctx.sidecar.reconnect();
      ctx.tree.refresh();
      await ctx.statusBar.update();
    }),
    reg('agentkeep.chooseAgent', (target?: unknown) =>
      chooseAgent(ctx.sidecar, typeof target === 'string' ? target : undefined),
    ),
    reg('agentkeep.deleteRestorePoint', (arg?: unknown, opts?: { confirm?: boolean }) =>
      deleteRestorePoint(ctx, arg, opts),
    ),
    reg('agentkeep.keep', (arg?: unknown) => keep(ctx, arg)),
    reg('agentkeep.renameRestorePoint', (arg?: unknown, label?: string) =>
      renameRestorePoint(ctx, arg, typeof label === 'string' ? label : undefined),
    ),
    reg('agentkeep.toggleImportant', (arg?: unknown) => toggleImportant(ctx, arg)),
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
    reg('agentkeep.pickFolder', (folder?: string) => pickFolder(ctx, folder)),
    reg('agentkeep.showLog', async () => ctx.output.show()),
    reg(LensCommands.snapshotAndRun, (arg: LensArg, opts?: SnapshotAndRunOptions) => snapshotAndRun(ctx, arg, opts)),
    reg('agentkeep.compare', (arg?: unknown, to?: unknown) => compareCommand(ctx, arg, to)),
    reg('agentkeep.compareWithNow', async (arg?: unknown) => {
      const config = requireConfig();
      const id = await resolveId(ctx, config, arg, 'Compare which restore point with now?');
      if (!id) return undefined;
      return compareWithNow(ctx.sidecar, await findRestorePoint(ctx, config, id), config.stores);
    }),
    reg(LensCommands.restorePointBeforeEdit, (arg?: { file?: string }, opts?: { fresh?: boolean }) =>
      restorePointBeforeEdit(ctx, arg, opts),
    ),
    reg(RUN_ACTION, (a: unknown, opts?: { confirm?: boolean }) => {
      const parsed = NextAction.safeParse(a);
      if (!parsed.success) {
        const why = 'agentkeep.runAction needs a next action {title, method, params}.';
        throw new UserError(why, 'invalid_params', 'Use a button of an AgentKeep notification.');
      }
      const deps = { sidecar: ctx.sidecar, output: ctx.output, afterChange: () => afterChange(ctx) };
      return runAction(deps, parsed.data, opts);
    }),
    reg(LensCommands.run, async (arg: LensArg) => {
      requireTrust('Running a command');
      const lens = checkLens(arg);
      const out = await runInTerminal(lens.command, { cwd: path.dirname(lens.file), name: `Run: ${lens.command}` });
      return { exitCode: out.exitCode, viaShellIntegration: out.viaShellIntegration };
    }),
  ];
}

/** The lens argument, checked with the protocol's schema. @throws UserError invalid_params naming the fix */
function checkLens(arg: unknown): LensArg {
  const parsed = LensArgument.safeParse(arg);
  if (!parsed.success) {
    throw new UserError(
      'This command needs the CodeLens argument {command, file, line}.',
      'invalid_params',
      'Use the "Snapshot & run" or "Run" CodeLens above a command in a script.',
    );
  }
  return parsed.data;
}

/** Progress adapter: sidecar progress notifications -> a VS Code progress. */
function progressReporter(
  progress: vscode.Progress<{ message?: string; increment?: number }>,
): (p: ProgressParams) => void {
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

/** Options of agentkeep.createRestorePoint. */
interface CreateOptions {
  label?: string;
  reason?: { text?: string };
  /** Proxmox qemu targets: include RAM state (asked when undefined and the label is asked too). */
  vmstate?: boolean;
}

/** Options of agentkeep.restore. */
interface RestoreOptions {
  /** false: no confirmation (tests, Undo). */
  confirm?: boolean;
  /** VM targets: start the guest after rolling back to a snapshot without RAM state. */
  start?: boolean;
  /** The stores to restore (a next action names the ones of the interrupted restore); default agentkeep.stores. */
  stores?: string[];
}

/**
 * withProgress for a sidecar call that may take long (a Proxmox task, a big directory). On a VM
 * target it is cancellable: cancel stops waiting (the request is cancelled through the
 * LanguageClient's CancellationToken) and says that the task continues on the host and where to see it.
 * @throws SidecarError `cancelled` with that message
 */
async function longTask<T>(
  ctx: Ctx,
  target: string,
  title: string,
  fn: (
    progress: vscode.Progress<{ message?: string; increment?: number }>,
    token: vscode.CancellationToken | undefined,
  ) => Promise<T>,
): Promise<T> {
  const d = await describe(ctx, target);
  const cancellable = !!d && isVmTarget(d);
  try {
    return await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title, cancellable },
      (progress, token) => fn(progress, cancellable ? token : undefined),
    );
  } catch (e) {
    const err = toSidecarError(e);
    if (err.code !== CANCELLED) throw e;
    const what = title.replace(/…$/, '');
    throw new SidecarError(continuesMessage(d, what.charAt(0).toLowerCase() + what.slice(1)), CANCELLED);
  }
}

async function createRestorePoint(ctx: Ctx, opts?: CreateOptions): Promise<RestorePoint | undefined> {
  requireTrust('Creating a restore point');
  const config = requireConfig();
  let vmstate = opts?.vmstate;
  const d = await describe(ctx, config.target);
  const ramOnRequest = !!d && canRamState(d);
  if (vmstate && !ramOnRequest) {
    throw new UserError(
      `Restore points of ${config.target} cannot hold RAM state.`,
      'unsupported',
      `RAM state needs a target whose backend saves it on request (a Proxmox VM); ${d ? `${d.name} (${d.backend}) snapshots` : 'this target snapshots'} its disk only.`,
    );
  }
  let label = opts?.label;
  if (label === undefined) {
    label = await vscode.window.showInputBox({
      title: 'Create restore point',
      prompt: 'A label to recognise this restore point by',
      value: `Manual ${new Date().toLocaleString()}`,
      validateInput: (v) => (v.trim() ? undefined : 'Enter a label'),
    });
    if (label === undefined) return undefined;
    if (vmstate === undefined && ramOnRequest) {
      const picked = await vscode.window.showQuickPick(
        [
          { label: '$(database) Disk only', description: 'fast; a rollback leaves the VM stopped', ram: false },
          {
            label: '$(chip) Take restore point with RAM state',
            description: 'slower, uses storage for the RAM; a rollback resumes the running VM',
            ram: true,
          },
        ],
        { title: `Create restore point "${label}"`, placeHolder: "Include the VM's RAM state (Proxmox vmstate)?" },
      );
      if (!picked) return undefined;
      vmstate = picked.ram;
    }
  }
  const done = ctx.statusBar.setBusy('Creating restore point…');
  try {
    // A QEMU snapshot saves the RAM state, and upstream QEMU pauses the VM for the whole save.
    const pauses = !!d && d.capabilities.ramState && !d.capabilities.canRunWhileRunning;
    const title = pauses
      ? `Creating restore point (the ${guestWord(d)} pauses while its RAM state is saved)…`
      : vmstate
        ? 'Creating restore point with RAM state…'
        : 'Creating restore point…';
    const rp = await longTask(ctx, config.target, title, (progress, token) =>
      ctx.sidecar.request(
        'restorePointCreate',
        {
          target: config.target,
          stores: config.stores,
          label,
          kind: 'manual',
          reason: opts?.reason,
          retention: config.retention,
          ...(vmstate ? { vmstate } : {}),
        },
        progressReporter(progress),
        token,
      ),
    );
    const pruned = rp.pruned?.length
      ? [
          `Retention deleted ${plural(rp.pruned.length, 'older restore point')} (${rp.pruned
            .map((d) => d.reason)
            .slice(0, 2)
            .join('; ')}).`,
        ]
      : [];
    void vscode.window.showInformationMessage(
      [
        `Restore point "${rp.label}" created${rp.machine.vmstate ? ' with RAM state' : ''}.`,
        ...(rp.machine.warnings ?? []),
        ...pruned,
      ].join(' '),
    );
    warnAfterCreate(rp);
    return rp;
  } finally {
    done();
    await afterChange(ctx);
  }
}

/**
 * Show what restorePoint.create warned about (the target's restore points near or over the size cap,
 * a restore that never finished), with the sidecar's next actions as buttons (free space, finish
 * the restore, go back).
 */
function warnAfterCreate(rp: { warnings?: string[]; notices?: Notice[] }): void {
  const notices = rp.notices ?? (rp.warnings ?? []).map((message) => ({ message }) as Notice);
  for (const n of notices) {
    const text = `AgentKeep: ${n.hint ? `${n.message} ${n.hint}` : n.message}`;
    void showWithActions(vscode.window.showWarningMessage, text, n.actions);
  }
}

async function afterChange(ctx: Ctx): Promise<void> {
  ctx.tree.refresh();
  await Promise.all([ctx.statusBar.update(), ctx.configFiles?.refresh()]);
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
    void vscode.window
      .showInformationMessage(
        'This agent has no restore points yet. Use "Snapshot & run" above a risky command, or "AgentKeep: Create Restore Point".',
        'Create Restore Point',
      )
      .then((b) => b && vscode.commands.executeCommand('agentkeep.createRestorePoint'));
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
  if (!rp)
    throw new UserError(
      `No restore point "${id}" for ${config.target}.`,
      'restore_point_not_found',
      'Refresh the Agent view and pick one from the list.',
    );
  return rp;
}

/**
 * The confirmation of a restore: restorePoint.preview (what the sidecar says a restore of `scope`
 * does) as a modal. A VM or container rollback shows what happens to the guest (hard stop, RAM
 * state, the start choice); a directory target the files, git repositories, memory entries and
 * outside-world actions. Resolves undefined when not confirmed, else whether to start the guest.
 * @param question the question for a directory target; `button` confirms it
 */
async function confirmRestore(
  ctx: Ctx,
  config: AgentConfig,
  rp: RestorePoint,
  scope: Scope,
  question: string,
  button: string,
): Promise<{ start?: boolean } | undefined> {
  const params = { target: config.target, id: rp.id, scope, stores: config.stores };
  const preview = await ctx.sidecar.request('restorePointPreview', params);
  const d = preview.effects ? await describe(ctx, config.target) : undefined;
  if (preview.effects && d) {
    const notes = preview.warnings.map((w) => `Note: ${w}`);
    const more = [...describeGitRepos(preview.gitRepos), ...describeMemoryLoss(preview), ...notes];
    const detail = [vmRollbackDetail(d, preview.effects), ...(more.length ? [more.join('\n')] : [])].join('\n\n');
    const buttons = vmRollbackButtons(preview.effects);
    const vmQuestion = vmRollbackQuestion(d, rp, scope);
    const answer = await vscode.window.showWarningMessage(vmQuestion, { modal: true, detail }, ...buttons);
    return answer ? { start: answer === ROLLBACK_AND_START } : undefined;
  }
  const undoable = 'The current state is captured first, so this restore can be undone.';
  const detail = `${describePreview(preview).join('\n')}\n\n${undoable}`;
  const answer = await vscode.window.showWarningMessage(question, { modal: true, detail }, button);
  return answer === button ? {} : undefined;
}

/** Restore: pick > scope > confirmation (restorePoint.preview) > restore with progress > Undo offer. */
async function restore(
  ctx: Ctx,
  arg?: unknown,
  scopeArg?: Scope,
  opts?: RestoreOptions,
): Promise<ResultOf<'restorePointRestore'> | undefined> {
  requireTrust('Restoring a restore point');
  const configured = requireConfig();
  const config = opts?.stores ? { ...configured, stores: opts.stores } : configured;
  const id = await resolveId(ctx, config, arg, 'Restore which restore point?');
  if (!id) return undefined;
  const rp = await findRestorePoint(ctx, config, id);
  let scope = scopeArg;
  if (!scope) {
    const picked = await vscode.window.showQuickPick(
      (['both', 'machine', 'agent'] as Scope[]).map((s) => ({
        label: SCOPE_LABELS[s],
        scope: s,
        description: s === 'both' ? 'recommended' : undefined,
      })),
      { title: `Restore "${rp.label}": what to put back?`, placeHolder: 'Scope of the restore' },
    );
    if (!picked) return undefined;
    scope = picked.scope;
  }
  let start = opts?.start;
  if (opts?.confirm !== false) {
    const question = `Restore "${rp.label}" (${formatAge(rp.createdAt)}): ${SCOPE_LABELS[scope]}?`;
    const ok = await confirmRestore(ctx, config, rp, scope, question, 'Restore');
    if (!ok) return undefined;
    if (start === undefined) start = ok.start;
  }
  return doRestore(ctx, config, rp, scope, false, start);
}

async function doRestore(
  ctx: Ctx,
  config: AgentConfig,
  rp: RestorePoint,
  scope: Scope,
  quiet = false,
  start?: boolean,
): Promise<ResultOf<'restorePointRestore'>> {
  const done = ctx.statusBar.setBusy(`Restoring ${rp.label}…`);
  try {
    const res = await longTask(ctx, config.target, `Restoring "${rp.label}"…`, (progress, token) =>
      ctx.sidecar.request(
        'restorePointRestore',
        { target: config.target, id: rp.id, scope, stores: config.stores, ...(start !== undefined ? { start } : {}) },
        progressReporter(progress),
        token,
      ),
    );
    const d = res.machineState !== undefined || res.warnings?.length ? await describe(ctx, config.target) : undefined;
    if (d && (res.machineState !== undefined || res.warnings?.length)) {
      const text = vmRestoreOutcome(d, rp, res);
      ctx.output.appendLine(`[extension] ${text}`);
      if (!quiet) {
        const show =
          res.machineState === 'running' ? vscode.window.showInformationMessage : vscode.window.showWarningMessage;
        void show(text, 'Undo restore').then(async (b) => {
          if (b && res.undo)
            await vscode.commands.executeCommand('agentkeep.restore', res.undo.id, scope, { confirm: false });
        });
      }
      ctx.lastRestoreMessage = text;
      return res;
    }
    if (!quiet) {
      void vscode.window
        .showInformationMessage(
          `Restored "${rp.label}" (${SCOPE_LABELS[scope]}). ${summarize(res.changes, scope)}`,
          'Undo restore',
        )
        .then(async (b) => {
          if (b && res.undo)
            await vscode.commands.executeCommand('agentkeep.restore', res.undo.id, scope, { confirm: false });
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
  if (scope !== 'machine' && c.agentChanged.length)
    parts.push(`${plural(c.agentChanged.length, 'agent-state file')} put back`);
  return parts.length ? `${parts.join(', ')}.` : 'Nothing had changed.';
}

async function deleteRestorePoint(
  ctx: Ctx,
  arg?: unknown,
  opts?: { confirm?: boolean },
): Promise<ResultOf<'restorePointDelete'> | undefined> {
  requireTrust('Deleting a restore point');
  const config = requireConfig();
  const id = await resolveId(ctx, config, arg, 'Delete which restore point?');
  if (!id) return undefined;
  const rp = await findRestorePoint(ctx, config, id);
  if (opts?.confirm !== false) {
    const answer = await vscode.window.showWarningMessage(
      `Delete restore point "${rp.label}" (${formatAge(rp.createdAt)})?`,
      {
        modal: true,
        detail: 'You will not be able to restore it any more. Files that other restore points also hold stay stored.',
      },
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

/** Rename a restore point (restorePoint.label); Proxmox keeps the new label in the snapshot description too. */
async function renameRestorePoint(ctx: Ctx, arg?: unknown, label?: string): Promise<RestorePoint | undefined> {
  requireTrust('Renaming a restore point');
  const config = requireConfig();
  const id = await resolveId(ctx, config, arg, 'Rename which restore point?');
  if (!id) return undefined;
  const rp = await findRestorePoint(ctx, config, id);
  const next =
    label ??
    (await vscode.window.showInputBox({
      title: 'Rename restore point',
      value: rp.label,
      prompt: 'A label that says why this restore point matters',
      validateInput: (v) =>
        v.trim() ? (v.length > 200 ? 'At most 200 characters.' : undefined) : 'The label cannot be empty.',
    }));
  if (next === undefined || next.trim() === rp.label) return undefined;
  try {
    return await ctx.sidecar.request('restorePointLabel', { target: config.target, id, label: next.trim() });
  } finally {
    await afterChange(ctx);
  }
}

/** Mark a restore point important (retention keeps the newest 10 important ones longer), or clear the mark. */
async function toggleImportant(ctx: Ctx, arg?: unknown): Promise<RestorePoint | undefined> {
  requireTrust('Marking a restore point important');
  const config = requireConfig();
  const id = await resolveId(ctx, config, arg, 'Mark which restore point important (or not)?');
  if (!id) return undefined;
  const rp = await findRestorePoint(ctx, config, id);
  try {
    const r = await ctx.sidecar.request('restorePointLabel', { target: config.target, id, important: !rp.important });
    void vscode.window.setStatusBarMessage(
      r.important ? `"${r.label}" is marked important` : `"${r.label}" is no longer marked important`,
      4000,
    );
    return r;
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

/**
 * A restore point for an automatic moment (before a command, before a config edit), `kind` pre or
 * config-edit: restorePoint.create with `reuse` (unless `fresh`), so the sidecar returns the newest
 * restore point instead when it is younger than REUSE_WINDOW_MS and nothing changed since (its rule,
 * see the protocol); this only shows progress and says which it was.
 */
async function takeOrReuse(
  ctx: Ctx,
  config: AgentConfig,
  p: { label: string; reason: RestorePoint['reason']; title: string; fresh?: boolean; kind?: 'pre' | 'config-edit' },
): Promise<{ restorePoint: RestorePoint; reused: boolean; cancelled: boolean }> {
  const done = ctx.statusBar.setBusy('Creating restore point…');
  let cancelled = false;
  let reused = false;
  try {
    const rp = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: p.title, cancellable: true },
      async (progress, token) => {
        const params = {
          target: config.target,
          stores: config.stores,
          label: p.label,
          kind: p.kind ?? 'pre',
          reason: p.reason,
          retention: config.retention,
          ...(p.fresh ? {} : { reuse: true, reuseWithinMs: REUSE_WINDOW_MS }),
        };
        const r = await ctx.sidecar.request('restorePointCreate', params, progressReporter(progress));
        cancelled = token.isCancellationRequested;
        reused = r.reused === true;
        if (!reused) warnAfterCreate(r);
        return r;
      },
    );
    const age = formatAge(rp.createdAt);
    if (reused) ctx.output.appendLine(`[extension] reusing restore point ${rp.id} (${age}, nothing changed since)`);
    return { restorePoint: rp, reused, cancelled };
  } finally {
    done();
    if (!reused) await afterChange(ctx);
  }
}

/**
 * Snapshot & run, a pre/post pair as snap-pac makes them: pre restore point (or a reused one of the
 * last minute) > the command in a terminal (exit code through shell integration) > post restore point
 * (kind post, pairOf = pre) > "`cmd` exited N" with Keep / Roll back / Compare (Roll back first when
 * the command failed). Keep marks both kept; Roll back restores the pre with scope both after showing
 * what will be undone; Compare opens the pre-to-post changes and asks again.
 */
async function snapshotAndRun(
  ctx: Ctx,
  arg: LensArg,
  opts: SnapshotAndRunOptions = {},
): Promise<SnapshotAndRunResult | undefined> {
  requireTrust('Snapshot & run');
  const lens = checkLens(arg);
  const config = requireConfig();
  const reason = {
    command: lens.command,
    file: lens.file,
    line: lens.line,
    class: lens.class,
    ...(typeof lens.reason === 'string' && lens.reason ? { risk: lens.reason } : {}),
  };
  const shown = shortCommand(lens.command);
  const pre = await takeOrReuse(ctx, config, {
    label: lens.command,
    reason,
    title: `Creating restore point before ${shown}`,
    fresh: opts.fresh,
  });
  const rp = pre.restorePoint;
  if (pre.cancelled) {
    void vscode.window.showInformationMessage(
      `Cancelled: ${shown} did not run. The restore point "${rp.label}" was created.`,
    );
    return {
      restorePoint: rp,
      reused: pre.reused,
      exitCode: undefined,
      viaShellIntegration: false,
      decision: 'cancelled',
    };
  }
  const outcome = await runInTerminal(lens.command, {
    cwd: path.dirname(lens.file),
    name: `AgentKeep: ${shown}`,
    timeoutMs: opts.timeoutMs,
    shellIntegrationTimeoutMs: opts.shellIntegrationTimeoutMs,
    assumeFinished: opts.decision !== undefined,
  });
  const doneBusy = ctx.statusBar.setBusy('Creating restore point…');
  let post: RestorePoint;
  try {
    post = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Creating restore point after ${shown}` },
      (progress) =>
        ctx.sidecar.request(
          'restorePointCreate',
          {
            target: config.target,
            stores: config.stores,
            label: `after: ${lens.command}`,
            kind: 'post',
            pairOf: rp.id,
            reason,
            retention: config.retention,
          },
          progressReporter(progress),
        ),
    );
  } finally {
    doneBusy();
    await afterChange(ctx);
  }
  const result: SnapshotAndRunResult = {
    restorePoint: rp,
    reused: pre.reused,
    post,
    exitCode: outcome.exitCode,
    viaShellIntegration: outcome.viaShellIntegration,
    decision: 'none',
  };
  let decision = opts.decision;
  if (!decision) {
    const failed = outcome.exitCode !== undefined && outcome.exitCode !== 0;
    const how =
      outcome.exitCode === undefined
        ? outcome.finished
          ? 'finished'
          : 'may still be running'
        : `exited ${outcome.exitCode}`;
    const buttons = failed ? ['Roll back', 'Keep', 'Compare'] : ['Keep', 'Roll back', 'Compare'];
    const show = failed ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
    const before = pre.reused
      ? `using the restore point taken ${formatAge(rp.createdAt)} (nothing changed since)`
      : `restore point taken ${formatAge(rp.createdAt)}`;
    for (;;) {
      const answer = await show(
        `\`${shown}\` ${how} · ${before}. Keep the change, roll back, or compare before and after?`,
        ...buttons,
      );
      if (answer === 'Compare') {
        (result.compared ??= []).push(await compareRestorePoints(ctx.sidecar, rp, post, `${shown}: before ↔ after`));
        continue;
      }
      decision = answer === 'Keep' ? 'keep' : answer === 'Roll back' ? 'rollback' : undefined;
      break;
    }
  }
  if (decision === 'keep') {
    result.decision = 'keep';
    result.kept = await ctx.sidecar.request('restorePointKeep', { target: config.target, id: rp.id });
    result.keptPost = await ctx.sidecar.request('restorePointKeep', { target: config.target, id: post.id });
    await afterChange(ctx);
  } else if (decision === 'rollback') {
    let start: boolean | undefined;
    if (!opts.decision) {
      const question = `Roll back ${shown}: restore "${rp.label}" (${formatAge(rp.createdAt)}), machine + agent state?`;
      const ok = await confirmRestore(ctx, config, rp, 'both', question, 'Roll back');
      if (!ok) return result;
      start = ok.start;
    }
    result.decision = 'rollback';
    result.restore = await doRestore(ctx, config, rp, 'both', false, start);
  }
  return result;
}

/**
 * Compare: a restore point of a pre/post pair against its partner (pre -> post), or `arg` against
 * `to` when both are given; a restore point without a partner is compared with now.
 */
async function compareCommand(ctx: Ctx, arg?: unknown, to?: unknown): Promise<CompareResult | undefined> {
  const config = requireConfig();
  const id = await resolveId(ctx, config, arg, 'Compare which restore point?');
  if (!id) return undefined;
  const rps = await ctx.sidecar.request('restorePointList', { target: config.target });
  const find = (x: string): RestorePoint => {
    const r = rps.find((p) => p.id === x);
    if (!r)
      throw new UserError(
        `No restore point "${x}" for ${config.target}.`,
        'restore_point_not_found',
        'Refresh the Agent view and pick one from the list.',
      );
    return r;
  };
  const rp = find(id);
  if (typeof to === 'string' && to) return compareRestorePoints(ctx.sidecar, rp, find(to));
  if (rp.kind === 'post' && rp.pairOf)
    return compareRestorePoints(
      ctx.sidecar,
      find(rp.pairOf),
      rp,
      `${rp.reason?.command ? shortCommand(rp.reason.command) : rp.label}: before ↔ after`,
    );
  const post = rps.find((p) => p.kind === 'post' && p.pairOf === rp.id);
  if (post)
    return compareRestorePoints(
      ctx.sidecar,
      rp,
      post,
      `${rp.reason?.command ? shortCommand(rp.reason.command) : rp.label}: before ↔ after`,
    );
  return compareWithNow(ctx.sidecar, rp, config.stores);
}

/** "Restore point before editing" (config-file lens and prompt): take one, or reuse one of the last minute. */
async function restorePointBeforeEdit(
  ctx: Ctx,
  arg?: { file?: string },
  opts?: { fresh?: boolean },
): Promise<{ restorePoint: RestorePoint; reused: boolean } | undefined> {
  requireTrust('Creating a restore point');
  const config = requireConfig();
  const file = arg?.file ?? vscode.window.activeTextEditor?.document.uri.fsPath;
  if (!file)
    throw new UserError(
      'No file to take a restore point for.',
      'invalid_params',
      'Use the "Restore point before editing" lens at the top of a config file.',
    );
  const base = path.basename(file);
  const r = await takeOrReuse(ctx, config, {
    label: `before editing ${base}`,
    reason: { file, text: `before editing ${base}` },
    title: `Creating restore point before editing ${base}`,
    fresh: opts?.fresh,
    kind: 'config-edit',
  });
  ctx.configFiles?.noteTaken(file, r.restorePoint);
  void vscode.window.setStatusBarMessage(
    r.reused
      ? `AgentKeep: using the restore point taken ${formatAge(r.restorePoint.createdAt)} (nothing changed since)`
      : `AgentKeep: restore point taken before editing ${base}`,
    5000,
  );
  return { restorePoint: r.restorePoint, reused: r.reused };
}

/** Create the demo agent under global storage and open its workspace (unless open: false). */
async function setupDemo(ctx: Ctx, opts?: { open?: boolean; root?: string }): Promise<DemoAgent> {
  const root = opts?.root ?? path.join(ctx.context.globalStorageUri.fsPath, 'demo');
  const demo = createDemoAgent(root);
  ctx.output.appendLine(`[extension] demo agent ${demo.created ? 'created' : 'already there'} at ${demo.root}`);
  if (opts?.open !== false) {
    await vscode.commands.executeCommand('vscode.openFolder', vscode.Uri.file(demo.workspace), {
      forceNewWindow: false,
    });
  }
  return demo;
}

/** Point agentkeep.target at a folder (and agentkeep.stores at the stores the sidecar finds in it, if any). */
async function pickFolder(ctx: Ctx, folder?: string): Promise<{ target: string; stores: string[] } | undefined> {
  requireTrust('Choosing the agent folder');
  let dir = folder;
  if (!dir) {
    const picked = await vscode.window.showOpenDialog({
      canSelectFolders: true,
      canSelectFiles: false,
      canSelectMany: false,
      openLabel: 'Use as agent folder',
      title: "Pick the agent's home folder (e.g. the folder that holds .hermes)",
    });
    dir = picked?.[0]?.fsPath;
    if (!dir) return undefined;
  }
  if (!path.isAbsolute(dir) || !fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
    throw new UserError(
      `"${dir}" is not an existing folder.`,
      'target_not_found',
      'Pick a folder that exists on this machine.',
    );
  }
  // every registered store kind looks in the folder (store.detect): Hermes homes, Agent Zero roots, ...
  const stores = (await ctx.sidecar.request('storeDetect', { root: dir })).map((d) => d.store);
  const where = vscode.workspace.workspaceFolders?.length
    ? vscode.ConfigurationTarget.Workspace
    : vscode.ConfigurationTarget.Global;
  const c = vscode.workspace.getConfiguration('agentkeep');
  await c.update('target', `dir:${dir}`, where);
  if (stores.length) await c.update('stores', stores, where);
  return { target: `dir:${dir}`, stores };
}
