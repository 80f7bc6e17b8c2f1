/**
 * The connection to the sidecar, started lazily through vscode-languageclient: the sidecar is both
 * the LSP server (CodeLens on risky commands) and the AgentKeep JSON-RPC service (agentkeep/*
 * requests from sidecar/protocol). Two transports under the one client:
 * - local (default): the extension forks `out/sidecar.js serve --stdio`;
 * - remote (agentkeep.sidecar.url set): a WebSocket to `agentkeep serve --ws` elsewhere, through
 *   RemoteLink (./remote.ts: URL rules, pinned certificate, token from SecretStorage, reconnect with
 *   backoff). Every caller (Agent view, memory inspector, CodeLens, status bar) uses the same
 *   `request()`; only how the LanguageClient gets its reader and writer differs.
 */
import * as vscode from 'vscode';
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  ErrorCodes,
  LanguageClient,
  LSPErrorCodes,
  ResponseError,
  RevealOutputChannelOn,
  TransportKind,
  type NodeModule,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { parseActions } from './actions';
import { isTrusted, type CodeLensFilter } from './config';
import { RemoteError, RemoteLink, type LinkState } from './remote';
import { socketTransports } from './remoteTransport';
import type WebSocket from 'ws';
import {
  Methods,
  Notifications,
  type ChangedParams,
  type MethodName,
  type NextAction,
  type ParamsOf,
  type ProgressParams,
  type LensSettings,
  type ResultOf,
  type StoreDescription,
  type TargetDescription,
} from '../sidecar/protocol';

/**
 * An error from the sidecar, with the protocol's string code, the hint that names the fix and the
 * next actions (shown as buttons, see actions.ts).
 */
export class SidecarError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly hint?: string,
    readonly actions?: NextAction[],
  ) {
    super(message);
    this.name = 'SidecarError';
  }
  /** Message and hint on one line, for notifications. */
  full(): string {
    return this.hint ? `${this.message} ${this.hint}` : this.message;
  }
}

/** Turn anything thrown by a request into a SidecarError (JSON-RPC errors carry data {code, hint, actions}). */
export function toSidecarError(e: unknown): SidecarError {
  if (e instanceof SidecarError) return e;
  if (e instanceof RemoteError) return new SidecarError(e.message, e.code, e.hint);
  if (e instanceof ResponseError) {
    if (e.code === LSPErrorCodes.RequestCancelled) return new SidecarError('Stopped waiting.', CANCELLED);
    if (e.code === ErrorCodes.PendingResponseRejected || e.code === ErrorCodes.ConnectionInactive)
      return new SidecarError(
        'The sidecar stopped before it answered.',
        'connection_lost',
        'Run "AgentKeep: Show Sidecar Log" to see why; the next action starts it again.',
      );
    const data = (e.data ?? {}) as { code?: unknown; hint?: unknown; actions?: unknown };
    const code = typeof data.code === 'string' ? data.code : String(e.code);
    const hint = typeof data.hint === 'string' ? data.hint : undefined;
    return new SidecarError(e.message, code, hint, parseActions(data.actions));
  }
  const msg = e instanceof Error ? e.message : String(e);
  return new SidecarError(msg, 'internal');
}

/** Code of the SidecarError a cancelled request rejects with. */
export const CANCELLED = 'cancelled';

/**
 * `work`, or a SidecarError `cancelled` as soon as `token` fires: the caller stops waiting at once,
 * whether or not the sidecar honours $/cancelRequest (the operation itself may go on there).
 */
function untilCancelled<T>(work: Promise<T>, token: vscode.CancellationToken | undefined): Promise<T> {
  if (!token) return work;
  return new Promise<T>((resolve, reject) => {
    const sub = token.onCancellationRequested(() => reject(new SidecarError('Stopped waiting.', CANCELLED)));
    work.then(resolve, reject).finally(() => sub.dispose());
  });
}

/** agentkeep.sidecar.url and .fingerprint; undefined url = start a local sidecar. */
export interface RemoteSettings {
  url: string;
  fingerprint: string;
}

/** Where the sidecar runs, for the status bar: `local`, or the remote link's state. */
export type Connection = { kind: 'local' } | LinkState;

/** Lazily started sidecar client. `request()` starts it on first use. */
export class Sidecar implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<LanguageClient> | undefined;
  private readonly progressListeners = new Map<string, (p: ProgressParams) => void>();
  private readonly changedEmitter = new vscode.EventEmitter<ChangedParams>();
  /** The extra environment the running sidecar got (JSON), to restart only when it changes. */
  private startedEnv: string | undefined;
  private envCheck: Promise<void> = Promise.resolve();
  /** Fires on `agentkeep/changed` from the sidecar. */
  readonly onDidChange = this.changedEmitter.event;
  private readonly connectionEmitter = new vscode.EventEmitter<Connection>();
  /** Fires when the remote link changes state (connecting, connected, reconnecting, failed). */
  readonly onDidChangeConnection = this.connectionEmitter.event;
  /** The remote link while agentkeep.sidecar.url is set and the sidecar was asked for. */
  private link: RemoteLink | undefined;
  /** The URL the link was made for. */
  private linkUrl: string | undefined;
  /** target.describe answers by target string (pure in the sidecar: kept for the session). */
  private readonly descriptions = new Map<string, Promise<TargetDescription>>();
  private readonly described = new Map<string, TargetDescription>();
  /** store.describe answers by store string (pure in the sidecar: kept for the session). */
  private readonly storeDescriptions = new Map<string, Promise<StoreDescription>>();
  private readonly storesDescribed = new Map<string, StoreDescription>();

  constructor(
    private readonly context: vscode.ExtensionContext,
    readonly output: vscode.LogOutputChannel,
    private readonly stateDir: () => string | undefined,
    private readonly codeLensFilter: () => CodeLensFilter,
    /**
     * Extra environment of the sidecar process (AGENTKEEP_PVE_TOKEN from SecretStorage,
     * AGENTKEEP_PVE_FINGERPRINT, AGENTKEEP_PVE_CA), read at each start. Never logged.
     */
    private readonly env: () => Promise<Record<string, string>> = async () => ({}),
    /** The remote sidecar: its settings (undefined = local) and its token (SecretStorage). */
    private readonly remote: {
      settings: () => RemoteSettings | undefined;
      token: () => Promise<string | undefined>;
    } = { settings: () => undefined, token: async () => undefined },
  ) {}

  /** True once the client runs. */
  get running(): boolean {
    return !!this.client?.isRunning();
  }

  /** Local sidecar, or the remote link's state. */
  get connection(): Connection {
    if (!this.remote.settings()) return { kind: 'local' };
    return this.link?.state ?? { kind: 'idle' };
  }

  /** Start the sidecar if it is not running (idempotent; concurrent callers share one start). */
  async start(): Promise<LanguageClient> {
    const remote = this.remote.settings();
    if (remote) return this.startRemote(remote);
    if (this.client) return this.client;
    if (!this.starting) {
      this.starting = this.doStart().then(
        (c) => {
          this.client = c;
          return c;
        },
        (e) => {
          this.starting = undefined;
          throw e;
        },
      );
    }
    return this.starting;
  }

  /**
   * Connect to the remote sidecar (or fail at once while the link waits to reconnect). A new
   * LanguageClient runs over each new socket; the link fails pending calls when the socket drops.
   */
  private async startRemote(remote: RemoteSettings): Promise<LanguageClient> {
    if (this.link && this.linkUrl !== remote.url) await this.stop();
    if (!this.link) {
      this.linkUrl = remote.url;
      const link: RemoteLink = new RemoteLink(
        async () => ({ ...(this.remote.settings() ?? remote), token: await this.remote.token() }),
        (ws) => this.attachRemote(link, ws),
        (st) => {
          if (st.kind === 'reconnecting' || st.kind === 'failed') {
            const lost = this.client;
            this.client = undefined;
            if (lost) void lost.dispose(500).catch(() => undefined);
            this.output.appendLine(
              `[extension] remote sidecar ${st.url}: ${st.error.message}${st.kind === 'reconnecting' ? ` Next try in ${Math.round(st.retryInMs / 100) / 10} s.` : ''}`,
            );
          } else if (st.kind === 'connected')
            this.output.appendLine(`[extension] connected to the remote sidecar ${st.url}`);
          this.connectionEmitter.fire(st);
        },
      );
      this.link = link;
    }
    await this.link.connect();
    if (!this.client) throw new SidecarError('Not connected to the remote sidecar.', 'connection_lost');
    return this.client;
  }

  /** Try the remote sidecar again now (the status bar's click while reconnecting). */
  async reconnect(): Promise<void> {
    const remote = this.remote.settings();
    if (!remote) return;
    if (!this.link) {
      await this.startRemote(remote);
      return;
    }
    await this.link.connect({ now: true });
  }

  /** The LanguageClient over one open socket of `link`; resolves once LSP initialize answered. */
  private async attachRemote(link: RemoteLink, ws: WebSocket): Promise<void> {
    this.clearDescriptions(); // another sidecar (or version) may describe things differently
    const client = new LanguageClient(
      'agentkeep',
      'AgentKeep',
      () => Promise.resolve(socketTransports(ws)),
      this.clientOptions({
        // the link notices the drop, reconnects and says so in the status bar: no restart, no pop-up
        errorHandler: {
          error: () => ({ action: ErrorAction.Continue, handled: true }),
          closed: () => ({ action: CloseAction.DoNotRestart, handled: true }),
        },
        revealOutputChannelOn: RevealOutputChannelOn.Never,
      }),
    );
    this.output.appendLine(`[extension] connecting to the remote sidecar ${this.linkUrl}`);
    await link.guard(client.start(), 'the LSP initialize answer');
    this.listen(client);
    this.client = client;
  }

  /** Client options shared by both transports. */
  private clientOptions(extra: Partial<LanguageClientOptions> = {}): LanguageClientOptions {
    return {
      documentSelector: [{ scheme: 'file' }, { scheme: 'untitled' }, { scheme: 'vscode-notebook-cell' }],
      outputChannel: this.output,
      // the sidecar filters by class (agentkeep.codeLens); pushed again on change by pushSettings().
      // clientCommands: this extension runs the lens commands (agentkeep.snapshotAndRun, …) and has its
      // own config-file lens, so the sidecar sends VS Code titles and no executeCommandProvider
      initializationOptions: { codeLens: this.codeLensFilter(), clientCommands: true } satisfies LensSettings,
      middleware: {
        // running commands needs trust: no lenses in an untrusted workspace, none when switched off
        provideCodeLenses: (doc, token, next) =>
          isTrusted() && this.codeLensFilter() !== 'off' ? next(doc, token) : [],
      },
      ...extra,
    };
  }

  private listen(client: LanguageClient): void {
    client.onNotification(Notifications.progress.method, (p: ProgressParams) =>
      this.progressListeners.get(p.token)?.(p),
    );
    client.onNotification(Notifications.changed.method, (c: ChangedParams) => this.changedEmitter.fire(c));
  }

  private clearDescriptions(): void {
    this.descriptions.clear();
    this.described.clear();
    this.storeDescriptions.clear();
    this.storesDescribed.clear();
  }

  private async doStart(): Promise<LanguageClient> {
    const module = this.context.asAbsolutePath('out/sidecar.js');
    const stateDir = this.stateDir();
    // `module` form: vscode-languageclient forks the bundled sidecar with the extension host's Node
    // (Electron run as Node in desktop VS Code) and appends --stdio --clientProcessId=<pid>, so the
    // sidecar exits when the extension host does.
    const args = ['serve', ...(stateDir ? ['--state-dir', stateDir] : [])];
    // the extension host's environment plus these (vscode-languageclient merges them over process.env)
    const env = await this.env();
    this.startedEnv = JSON.stringify(env);
    const run: NodeModule = { module, args, transport: TransportKind.stdio, options: { env } };
    const debug: NodeModule = { ...run, options: { env, execArgv: ['--nolazy', '--inspect=6019'] } };
    const serverOptions: ServerOptions = { run, debug };
    const client = new LanguageClient('agentkeep', 'AgentKeep', serverOptions, this.clientOptions());
    this.output.appendLine(`[extension] starting sidecar: ${module} ${args.join(' ')}`);
    await client.start();
    this.listen(client);
    return client;
  }

  /**
   * Send an agentkeep/* request. Params and result are typed by the protocol; the result is
   * validated against its zod schema. Throws SidecarError (message + hint from the sidecar).
   * `onProgress` receives `agentkeep/progress` notifications of this call.
   */
  async request<K extends MethodName>(
    name: K,
    params: ParamsOf<K>,
    onProgress?: (p: ProgressParams) => void,
    token?: vscode.CancellationToken,
  ): Promise<ResultOf<K>> {
    const def = Methods[name];
    let progressToken: string | undefined;
    if (onProgress) {
      progressToken = `ak-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
      this.progressListeners.set(progressToken, onProgress);
      (params as { progressToken?: string }).progressToken = progressToken;
    }
    try {
      const client = await this.start();
      // no undefined token argument: vscode-jsonrpc would send [params, null] by position
      const sent = untilCancelled(
        token ? client.sendRequest(def.method, params, token) : client.sendRequest(def.method, params),
        token,
      );
      // remote: a dropped connection fails the call at once, naming it, instead of leaving it waiting
      const raw = await (this.link && this.remote.settings() ? this.link.guard(sent, def.method) : sent);
      const parsed = def.result.safeParse(raw);
      if (!parsed.success) {
        throw new SidecarError(
          `The sidecar answered ${def.method} with an unexpected shape: ${parsed.error.issues[0]?.message ?? 'invalid'}.`,
          'internal',
          'Rebuild both halves with `node esbuild.mjs` so the extension and the sidecar use the same protocol.',
        );
      }
      return parsed.data as ResultOf<K>;
    } catch (e) {
      throw toSidecarError(e);
    } finally {
      if (progressToken) this.progressListeners.delete(progressToken);
    }
  }

  /**
   * What a target is and what its backend can do (target.describe: capabilities, local root, guest,
   * display name). The extension never reads a target string itself; it branches on this. Answers
   * are cached per target string (the sidecar computes them from the string alone); failures are not.
   * @throws SidecarError bad_target for a target that does not parse
   */
  describeTarget(target: string): Promise<TargetDescription> {
    let p = this.descriptions.get(target);
    if (!p) {
      p = this.request('targetDescribe', { target });
      this.descriptions.set(target, p);
      p.then(
        (d) => this.described.set(target, d),
        () => this.descriptions.delete(target),
      );
    }
    return p;
  }

  /** The description of `target` if target.describe (or agent.status) already answered, else undefined. */
  knownDescription(target: string): TargetDescription | undefined {
    return this.described.get(target);
  }

  /** Remember a description that came with another answer (agent.status `description`). */
  rememberDescription(target: string, d: TargetDescription): void {
    this.described.set(target, d);
    if (!this.descriptions.has(target)) this.descriptions.set(target, Promise.resolve(d));
  }

  /**
   * What a memory store is and can do (store.describe: kind, display name, location, local root,
   * capabilities). The extension never reads a store string itself; it uses this. Cached per store
   * string (the sidecar computes it from the string alone); failures are not.
   * @throws SidecarError bad_store for a store string that does not parse or names no registered kind
   */
  describeStore(store: string): Promise<StoreDescription> {
    let p = this.storeDescriptions.get(store);
    if (!p) {
      p = this.request('storeDescribe', { stores: [store] }).then(([d]) => {
        if (!d) throw new SidecarError(`The sidecar did not describe ${store}.`, 'internal', 'Update the sidecar.');
        return d;
      });
      this.storeDescriptions.set(store, p);
      p.then(
        (d) => this.storesDescribed.set(store, d),
        () => this.storeDescriptions.delete(store),
      );
    }
    return p;
  }

  /**
   * The stores as far as the sidecar can describe them, in order: a description, or the store string
   * itself for one it cannot (does not parse, or the sidecar is unreachable).
   */
  async describeStores(stores: readonly string[]): Promise<Array<StoreDescription | string>> {
    return Promise.all(stores.map((s) => this.describeStore(s).catch(() => s)));
  }

  /** The description of `store` if one already came (store.describe, agent.status, memory.list), else undefined. */
  knownStoreDescription(store: string): StoreDescription | undefined {
    return this.storesDescribed.get(store);
  }

  /** Remember store descriptions that came with another answer (agent.status, memory.list). */
  rememberStoreDescriptions(ds: ReadonlyArray<StoreDescription | undefined>): void {
    for (const d of ds) {
      if (!d) continue;
      this.storesDescribed.set(d.store, d);
      if (!this.storeDescriptions.has(d.store)) this.storeDescriptions.set(d.store, Promise.resolve(d));
    }
  }

  /**
   * Send the CodeLens filter to a running sidecar (workspace/didChangeConfiguration
   * `{agentkeep: {codeLens}}`); the sidecar then asks the editor to refresh its lenses. No-op when
   * the sidecar is not running (it gets the filter in initializationOptions when it starts).
   */
  async pushSettings(): Promise<void> {
    if (!this.client?.isRunning()) return;
    if (this.link && !this.link.connected) return; // sent with initialize on reconnect
    const agentkeep: LensSettings = { codeLens: this.codeLensFilter() };
    await this.client.sendNotification(DidChangeConfigurationNotification.type, { settings: { agentkeep } });
  }

  /**
   * Stop and restart (e.g. when agentkeep.stateDir, the Proxmox token, or the remote sidecar's URL,
   * fingerprint or token change). No-op if never started.
   */
  async restart(): Promise<void> {
    if (!this.client && !this.starting && !this.link) return;
    await this.stop();
    await this.start();
  }

  /**
   * Restart a running sidecar when its extra environment changed (Proxmox token set or cleared,
   * fingerprint or CA setting changed). Calls are serialised; no-op when not running or unchanged.
   */
  refreshEnv(): Promise<void> {
    this.envCheck = this.envCheck.then(async () => {
      if (!this.client && !this.starting) return;
      if (this.remote.settings()) return; // a remote sidecar has its own environment (docs/remote.md)
      if (JSON.stringify(await this.env()) === this.startedEnv) return;
      this.output.appendLine(
        '[extension] sidecar environment changed (Proxmox token or TLS settings): restarting the sidecar',
      );
      await this.restart();
    });
    return this.envCheck;
  }

  /** Stop the sidecar process, or close the link to the remote one. */
  async stop(): Promise<void> {
    const c = this.client ?? (await this.starting?.catch(() => undefined));
    this.client = undefined;
    this.starting = undefined;
    const link = this.link;
    this.link = undefined;
    this.linkUrl = undefined;
    this.clearDescriptions();
    if (c) await c.stop(2000).catch(() => undefined);
    if (link) {
      link.close();
      this.connectionEmitter.fire(this.connection);
    }
  }

  dispose(): void {
    void this.stop();
    this.changedEmitter.dispose();
    this.connectionEmitter.dispose();
  }
}
