/**
 * AgentKeep extension entry point. Thin: views, commands, status bar, terminal, trust gating; all
 * work happens in the sidecar (out/sidecar.js), started lazily over stdio through
 * vscode-languageclient. Activation (onStartupFinished) is cheap: the sidecar starts only when an
 * agent is configured (agentkeep.target) or a view/command needs it.
 *
 * activate() returns AgentKeepApi, used by the extension-host tests.
 */
import * as vscode from 'vscode';
import { LensCommands, LensSettingKeys, type NextAction, type RestorePoint } from '../sidecar/protocol';
import { registerCommands, type Ctx } from './commands';
import { SNAPSHOT_SCHEME, SnapshotContentProvider } from './compare';
import { codeLensFilter, readAgentConfig, readRemoteSettings, readStateDir, setSimulateUntrusted } from './config';
import { ConfigFiles, type ConfigPromptRecord } from './configFiles';
import { DetailsPanel } from './details';
import { MemoryInspector, registerMemoryCommands, type InspectorRendered, type MemoryChange } from './memory';
import { Sidecar, type Connection } from './sidecar';
import { AgentStatusBar } from './statusBar';
import { AgentTreeProvider } from './tree';
import { AgentWatch, type AgentNotification } from './agentWatch';
import { canRamState, sidecarEnv, TOKEN_SECRET_KEY } from './proxmox';
import { SIDECAR_TOKEN_KEY } from './remoteToken';

/** What activate() returns (for tests and other extensions). */
export interface AgentKeepApi {
  /** Current status bar text, e.g. "$(history) 5m ago". */
  getStatusBarText(): string;
  /** Restore points shown by the tree at its last refresh (newest first). */
  getTreeRestorePoints(): RestorePoint[];
  /** The tree provider (tests walk it with getChildren/getTreeItem). */
  tree: AgentTreeProvider;
  /** Refresh the tree and status bar and wait for the status bar to update. */
  refresh(): Promise<void>;
  /** The last error a command showed (code, message, hint, the sidecar's next actions), or undefined. */
  lastError(): { code: string; message: string; hint?: string; actions?: NextAction[] } | undefined;
  /** Test hook: act as if the workspace were untrusted. */
  simulateUntrusted(v: boolean): void;
  /** Whether the sidecar process runs (or the remote sidecar is connected). */
  sidecarRunning(): boolean;
  /** Local sidecar, or the remote link's state (connecting, connected, reconnecting, failed). */
  sidecarConnection(): Connection;
  /** Id shown in the details panel, if open. */
  detailsShownId(): string | undefined;
  /** The sidecar client (tests send requests with a CancellationToken through it). */
  sidecar: Sidecar;
  /** Everything written to the AgentKeep output channel since activation (tests check no secret is in it). */
  outputText(): string;
  /** The message shown after the last VM rollback (machine state and warnings), or undefined. */
  lastRestoreMessage(): string | undefined;
  /** Config-file prompts shown so far (file, message, answer, restore point taken). */
  configPrompts(): ConfigPromptRecord[];
  /**
   * Test hook: answer config-file prompts with `answer` (a button label, or undefined = dismissed)
   * instead of showing a notification; `null` restores the notification.
   */
  answerConfigPrompts(answer: string | undefined | null): void;
  /** The memory inspector: whether it is open and what its webview last rendered. */
  memoryInspector(): {
    open: boolean;
    rendered?: InspectorRendered;
    /** Switch the open inspector to the entry list or the Timeline, optionally showing one write. */
    show(view: 'list' | 'timeline', write?: { store: string; id: string }): void;
    /** Answer the lint --fix "Apply?" question (tests); undefined: ask the person. */
    answerFix(answer: boolean | undefined): void;
  };
  /**
   * Test hook: memory edits/deletes call `fn` instead of showing the Undo notification (`null`
   * restores the notification).
   */
  onMemoryChange(fn: ((c: MemoryChange) => void) | null): void;
  /**
   * Look for restore points and requests made outside this window (the agent's hooks, MCP, apt, run)
   * now instead of at the next WATCH_INTERVAL_MS tick; resolves with the agent's new restore points.
   */
  checkAgentActivity(): Promise<RestorePoint[]>;
  /** Notifications about the agent's restore points shown so far (agentkeep.notifyAgentRestorePoints). */
  agentNotifications(): AgentNotification[];
}

let ctxRef: Ctx | undefined;

/** VS Code entry point: registers views, commands, CodeLens and the status bar; returns the test API. */
export function activate(context: vscode.ExtensionContext): AgentKeepApi {
  const recorded: string[] = [];
  const output = recordingChannel(vscode.window.createOutputChannel('AgentKeep', { log: true }), recorded);
  const sidecar = new Sidecar(
    context,
    output,
    readStateDir,
    codeLensFilter,
    () => sidecarEnv(context.secrets),
    // agentkeep.sidecar.url set: the same client over a WebSocket to that sidecar (docs/remote.md)
    { settings: readRemoteSettings, token: () => Promise.resolve(context.secrets.get(SIDECAR_TOKEN_KEY)) },
  );
  const tree = new AgentTreeProvider(sidecar);
  const statusBar = new AgentStatusBar(sidecar);
  const details = new DetailsPanel(context, sidecar);
  const ctx: Ctx = { context, sidecar, tree, statusBar, output, showDetails: (id) => details.show(id) };
  ctxRef = ctx;
  const configFiles = new ConfigFiles(sidecar, (file) =>
    Promise.resolve(
      vscode.commands.executeCommand<{ restorePoint: RestorePoint; reused: boolean } | undefined>(
        LensCommands.restorePointBeforeEdit,
        { file },
      ),
    ),
  );
  ctx.configFiles = configFiles;
  // after a change or the inspector's Refresh: the Agent view and the status bar re-read (a store may be broken now)
  const memory = new MemoryInspector(context, sidecar, output, () => {
    tree.refresh();
    void statusBar.update();
  });
  context.subscriptions.push(memory, ...registerMemoryCommands(ctx, memory));
  context.subscriptions.push(
    configFiles,
    vscode.workspace.registerTextDocumentContentProvider(SNAPSHOT_SCHEME, new SnapshotContentProvider(sidecar)),
  );

  const view = vscode.window.createTreeView('agentkeep.agent', { treeDataProvider: tree, showCollapseAll: true });
  // restore points and requests the agent's hooks, MCP, apt or run make in other processes
  const watch = new AgentWatch(
    sidecar,
    () => {
      tree.refresh();
      void statusBar.update();
    },
    async (id) => {
      await vscode.commands.executeCommand('agentkeep.agent.focus');
      await details.show(id);
    },
    () => view.visible,
  );
  context.subscriptions.push(output, sidecar, statusBar, details, view, watch, ...registerCommands(ctx));
  context.subscriptions.push(view.onDidChangeVisibility(() => watch.update()));

  const applyConfig = async () => {
    const config = readAgentConfig();
    await vscode.commands.executeCommand('setContext', 'agentkeep.configured', !!config);
    if (!config) await vscode.commands.executeCommand('setContext', 'agentkeep.ramState', false);
    tree.refresh();
    watch.update();
    if (config) {
      void watch.check(); // the first look only records what is there
      // An agent is configured: start the sidecar (CodeLens comes from it) and show the status bar;
      // whether its restore points can hold RAM state on request comes from target.describe.
      const ram = sidecar.describeTarget(config.target).then(
        (d) => canRamState(d),
        () => false,
      );
      await statusBar.update();
      await vscode.commands.executeCommand('setContext', 'agentkeep.ramState', await ram);
    } else {
      statusBar.item.hide();
    }
  };

  let linkWasDown = false;
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (!e.affectsConfiguration('agentkeep')) return;
      if (e.affectsConfiguration('agentkeep.stateDir') || e.affectsConfiguration('agentkeep.sidecar'))
        await sidecar.restart().catch((err) => output.appendLine(`[extension] sidecar: ${String(err)}`));
      else if (
        e.affectsConfiguration('agentkeep.proxmox.fingerprint') ||
        e.affectsConfiguration('agentkeep.proxmox.caFile')
      )
        await sidecar.refreshEnv();
      if (e.affectsConfiguration(LensSettingKeys.codeLens))
        await sidecar.pushSettings().catch((err) => output.appendLine(`[extension] codeLens setting: ${String(err)}`));
      await applyConfig();
      void configFiles.refresh();
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      void applyConfig();
      void sidecar.pushSettings(); // the sidecar asks the editor to refresh its lenses
      void configFiles.refresh();
      void memory.refresh();
    }),
    // the token set or cleared (here or in another window): restart the sidecar with it
    context.secrets.onDidChange(async (e) => {
      if (e.key === SIDECAR_TOKEN_KEY) {
        // the remote sidecar's token set or cleared: connect again with it
        if (readRemoteSettings()) {
          await sidecar.restart().catch((err) => output.appendLine(`[extension] sidecar: ${String(err)}`));
          await applyConfig();
        }
        return;
      }
      if (e.key !== TOKEN_SECRET_KEY) return;
      await sidecar.refreshEnv();
      tree.refresh();
    }),
    // the remote sidecar is back (after a drop, or a new URL/token): everything re-reads from it
    sidecar.onDidChangeConnection((c) => {
      if (c.kind === 'reconnecting' || c.kind === 'failed') linkWasDown = true;
      if (c.kind !== 'connected' || !linkWasDown) return;
      linkWasDown = false;
      tree.refresh();
      void details.refresh();
      void memory.refresh();
    }),
    sidecar.onDidChange(() => {
      tree.refresh();
      void statusBar.update();
      void details.refresh();
      void memory.refresh();
    }),
  );
  void applyConfig().catch((e) => output.appendLine(`[extension] activation: ${String(e)}`));

  return {
    getStatusBarText: () => statusBar.text,
    getTreeRestorePoints: () => tree.lastRestorePoints,
    tree,
    refresh: async () => {
      tree.refresh();
      await statusBar.update();
    },
    lastError: () => ctx.lastError,
    simulateUntrusted: (v) => setSimulateUntrusted(v),
    sidecarRunning: () => sidecar.running,
    sidecarConnection: () => sidecar.connection,
    detailsShownId: () => details.shownId,
    sidecar,
    outputText: () => recorded.join(''),
    lastRestoreMessage: () => ctx.lastRestoreMessage,
    configPrompts: () => configFiles.prompts,
    answerConfigPrompts: (answer) => {
      configFiles.answer = answer === null ? undefined : async () => answer;
    },
    memoryInspector: () => ({
      open: memory.isOpen,
      rendered: memory.rendered,
      show: (view, write) => memory.showView(view, write),
      answerFix: (answer) => (memory.answerFix = answer === undefined ? undefined : async () => answer),
    }),
    onMemoryChange: (fn) => {
      memory.onChange = fn ?? undefined;
    },
    checkAgentActivity: () => watch.check(),
    agentNotifications: () => watch.shown,
  };
}

/**
 * The output channel, with everything written to it also appended to `sink` (append, appendLine,
 * replace and the log levels), so tests can check what users would see there.
 */
function recordingChannel(channel: vscode.LogOutputChannel, sink: string[]): vscode.LogOutputChannel {
  const MAX = 2000; // entries kept
  const keep = (text: string) => {
    sink.push(text);
    if (sink.length > MAX) sink.splice(0, sink.length - MAX);
  };
  const recordedMethods = new Set(['append', 'appendLine', 'replace', 'trace', 'debug', 'info', 'warn', 'error']);
  return new Proxy(channel, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof prop !== 'string' || typeof v !== 'function') return v;
      if (!recordedMethods.has(prop)) return (v as (...a: unknown[]) => unknown).bind(target);
      return (...args: unknown[]) => {
        keep(`${args.map((a) => (a instanceof Error ? (a.stack ?? a.message) : String(a))).join(' ')}\n`);
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** VS Code exit point: disposes the views and stops the sidecar (resolves when it has exited). */
export async function deactivate(): Promise<void> {
  await ctxRef?.sidecar.stop();
  ctxRef = undefined;
}
