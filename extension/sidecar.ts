/**
 * The connection to the sidecar (`out/sidecar.js serve --stdio`), started lazily through
 * vscode-languageclient: the sidecar is both the LSP server (CodeLens on risky commands) and the
 * AgentKeep JSON-RPC service (agentkeep/* requests from sidecar/protocol).
 */
import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  LSPErrorCodes,
  ResponseError,
  TransportKind,
  type NodeModule,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { parseActions } from './actions';
import { isTrusted, type CodeLensFilter } from './config';
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
  if (e instanceof ResponseError) {
    if (e.code === LSPErrorCodes.RequestCancelled) return new SidecarError('Stopped waiting.', CANCELLED);
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
  ) {}

  /** True once the client runs. */
  get running(): boolean {
    return !!this.client?.isRunning();
  }

  /** Start the sidecar if it is not running (idempotent; concurrent callers share one start). */
  async start(): Promise<LanguageClient> {
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
    const clientOptions: LanguageClientOptions = {
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
    };
    const client = new LanguageClient('agentkeep', 'AgentKeep', serverOptions, clientOptions);
    this.output.appendLine(`[extension] starting sidecar: ${module} ${args.join(' ')}`);
    await client.start();
    client.onNotification(Notifications.progress.method, (p: ProgressParams) =>
      this.progressListeners.get(p.token)?.(p),
    );
    client.onNotification(Notifications.changed.method, (c: ChangedParams) => this.changedEmitter.fire(c));
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
      const raw = await untilCancelled(
        token ? client.sendRequest(def.method, params, token) : client.sendRequest(def.method, params),
        token,
      );
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
    const agentkeep: LensSettings = { codeLens: this.codeLensFilter() };
    await this.client.sendNotification(DidChangeConfigurationNotification.type, { settings: { agentkeep } });
  }

  /** Stop and restart (e.g. when agentkeep.stateDir or the Proxmox token changes). No-op if never started. */
  async restart(): Promise<void> {
    if (!this.client && !this.starting) return;
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
      if (JSON.stringify(await this.env()) === this.startedEnv) return;
      this.output.appendLine(
        '[extension] sidecar environment changed (Proxmox token or TLS settings): restarting the sidecar',
      );
      await this.restart();
    });
    return this.envCheck;
  }

  /** Stop the sidecar process. */
  async stop(): Promise<void> {
    const c = this.client ?? (await this.starting?.catch(() => undefined));
    this.client = undefined;
    this.starting = undefined;
    if (c) await c.stop().catch(() => undefined);
  }

  dispose(): void {
    void this.stop();
    this.changedEmitter.dispose();
  }
}
