/**
 * Next actions (NextAction in sidecar/protocol) in the extension: what the sidecar says the user can
 * do next about an error or a warning becomes buttons on the notification and rows in the Agent
 * view, and a click runs the action's method with its params through the sidecar client. A restore
 * or delete of the configured agent goes through the existing commands (agentkeep.restore,
 * agentkeep.deleteRestorePoint), so it asks for confirmation exactly as they do; any other
 * destructive action asks first too.
 */
import * as vscode from 'vscode';
import { methodKey, NextAction, type MethodName, type ParamsOf, type ResultOf, type Scope } from '../sidecar/protocol';
import { readAgentConfig } from './config';

/** The command that runs one action: `agentkeep.runAction(action, {confirm?: false})`. */
export const RUN_ACTION = 'agentkeep.runAction';

/** At most this many action buttons on one notification (VS Code shows few; the rest are in the log). */
export const MAX_ACTION_BUTTONS = 3;

/** The valid NextActions in `v` (the `actions` of a JSON-RPC error's data or a notice), else undefined. */
export function parseActions(v: unknown): NextAction[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const out = v.flatMap((a) => {
    const r = NextAction.safeParse(a);
    return r.success ? [r.data] : [];
  });
  return out.length ? out : undefined;
}

/** Button label -> action, for the first MAX_ACTION_BUTTONS actions (labels made unique). */
export function actionButtons(actions: readonly NextAction[] | undefined): Map<string, NextAction> {
  const m = new Map<string, NextAction>();
  for (const a of actions ?? []) {
    if (m.size >= MAX_ACTION_BUTTONS) break;
    let label = a.title;
    for (let i = 2; m.has(label); i++) label = `${a.title} (${i})`;
    m.set(label, a);
  }
  return m;
}

/**
 * Show a notification with the actions as buttons (plus `extra` buttons); a clicked action runs
 * through RUN_ACTION. Resolves with the extra button clicked, if one was.
 */
export async function showWithActions(
  show: (message: string, ...items: string[]) => Thenable<string | undefined>,
  message: string,
  actions: readonly NextAction[] | undefined,
  extra: string[] = [],
): Promise<string | undefined> {
  const buttons = actionButtons(actions);
  const picked = await show(message, ...buttons.keys(), ...extra);
  const a = picked === undefined ? undefined : buttons.get(picked);
  if (a) {
    await vscode.commands.executeCommand(RUN_ACTION, a);
    return undefined;
  }
  return picked;
}

/**
 * One-line text of an action for a tooltip or the log, e.g.
 * `Go back (agentkeep/restorePoint.restore ak_…, scope both)`.
 */
export function describeAction(a: NextAction): string {
  if (a.command) return `${a.title} (${a.command}${a.setting ? ` ${a.setting}` : ''})`;
  const p = a.params ?? {};
  const bits = [p.id, p.scope ? `scope ${String(p.scope)}` : undefined].filter((x) => x !== undefined).map(String);
  return `${a.title} (${a.method}${bits.length ? ` ${bits.join(', ')}` : ''})`;
}

/** What runAction needs (the Sidecar client, as far as it is used here). */
export interface ActionDeps {
  sidecar: { request<K extends MethodName>(name: K, params: ParamsOf<K>): Promise<ResultOf<K>> };
  output: vscode.OutputChannel;
  /** Refresh the views after a change. */
  afterChange: () => Promise<void>;
}

/** Methods that only read: running one shows the Agent view (refreshed) instead of a raw result. */
const READ_ONLY: ReadonlySet<MethodName> = new Set([
  'restorePointList',
  'memoryList',
  'agentStatus',
  'restorePointUsage',
]);

/**
 * Run one action. Front-end commands: openSettings opens the settings at `setting`, showLog the
 * log. A restore or delete of the configured agent's target runs agentkeep.restore /
 * agentkeep.deleteRestorePoint (their confirmation, unless `confirm` is false); a read-only method
 * refreshes and shows the Agent view; any other method is sent as is, after a modal confirmation
 * when the action is destructive.
 * @returns the method's result, or undefined (cancelled, or a front-end command)
 * @throws SidecarError from the sidecar (the caller's `guarded` shows it)
 */
export async function runAction(deps: ActionDeps, a: NextAction, opts: { confirm?: boolean } = {}): Promise<unknown> {
  deps.output.appendLine(`[extension] next action: ${describeAction(a)}`);
  if (a.command === 'showLog') {
    deps.output.show();
    return undefined;
  }
  if (a.command === 'openSettings') {
    await vscode.commands.executeCommand('workbench.action.openSettings', a.setting ?? 'agentkeep');
    return undefined;
  }
  const key = a.method ? methodKey(a.method) : undefined;
  if (!key)
    throw new Error(
      `The sidecar suggested an action this extension does not know (${a.method ?? 'no method'}); update both.`,
    );
  const params = (a.params ?? {}) as Record<string, unknown>;
  const ours = readAgentConfig()?.target === params.target;
  if (key === 'restorePointRestore' && ours) {
    const p = params as ParamsOf<'restorePointRestore'>;
    return vscode.commands.executeCommand('agentkeep.restore', p.id, p.scope as Scope, {
      confirm: opts.confirm,
      stores: p.stores,
      start: p.start,
    });
  }
  if (key === 'restorePointDelete' && ours) {
    return vscode.commands.executeCommand(
      'agentkeep.deleteRestorePoint',
      (params as ParamsOf<'restorePointDelete'>).id,
      { confirm: opts.confirm },
    );
  }
  if (READ_ONLY.has(key)) {
    await deps.afterChange();
    await vscode.commands.executeCommand('agentkeep.agent.focus');
    return deps.sidecar.request(key, params as never);
  }
  if (a.destructive && opts.confirm !== false) {
    const answer = await vscode.window.showWarningMessage(
      `${a.title}?`,
      { modal: true, detail: describeAction(a) },
      'Run',
    );
    if (answer !== 'Run') return undefined;
  }
  try {
    const res = await deps.sidecar.request(key, params as never);
    void vscode.window.setStatusBarMessage(`AgentKeep: ${a.title}: done`, 4000);
    return res;
  } finally {
    await deps.afterChange();
  }
}
