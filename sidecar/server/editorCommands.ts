/**
 * What the language server does itself for editors other than VS Code (Neovim, Helix, Zed, Emacs…),
 * which have no AgentKeep extension to run the lens commands (issue 15 item 8):
 * - ServerCommands (sidecar/protocol/lens.ts) through workspace/executeCommand: "Take restore point"
 *   on a risky command and "Restore point before editing" on a risky config file take a restore point
 *   through the core and report it with window/showMessage (an error as type Error, with its hint and
 *   next actions as `agentkeep …` command lines, which such a user can paste into a terminal);
 * - the config-file lens on line 1 of a risky config file, "Restore point before editing (last: 5m ago)",
 *   and the one-time question on the first unsaved change of such a file since the last restore point
 *   (window/showMessageRequest: Take restore point / Not now / Don't ask again), as the extension's
 *   extension/configFiles.ts does for VS Code, with the same settings (LensSettings configFilesCodeLens,
 *   configFilesPrompt) and the same scoping: files inside the target's local root or a store root,
 *   any file for targets without a local root.
 * The agent the commands work on comes from LensSettings (agent, or target + stores) or else the
 * state dir's default (or only) named agent (sidecar/core/agents.ts `resolveAgent`).
 */
import * as path from 'node:path';
import { ResponseError, ErrorCodes as RpcErrorCodes, type CodeLens, type Connection } from 'vscode-languageserver';
import {
  BeforeEditArgument,
  LensArgument,
  nextAction,
  REUSE_WINDOW_MS,
  ServerCommands,
  type LensSettings,
  type ResultOf,
  type RestorePoint,
  type ServerCommandResult,
} from '../protocol';
import { formatAge } from '../protocol/format';
import { riskyConfigInScope, type RiskyConfig } from '../protocol/configFiles';
import { resolveAgent, type ResolvedAgent } from '../core/agents';
import { AgentKeepError } from '../core/errors';
import { toResponseError } from '../core/dispatch';
import type { CoreApi } from '../core/service';
import { commandLine, describeProblem } from '../cli/actions';

/** Why a restore point was taken (the protocol's Reason). */
type Reason = NonNullable<RestorePoint['reason']>;

/** LSP MessageType. */
const MessageType = { Error: 1, Warning: 2, Info: 3 } as const;

/** The buttons of the first-change question (the extension's, extension/configFiles.ts). */
export const PROMPT_TAKE = 'Take restore point';
export const PROMPT_NOT_NOW = 'Not now';
export const PROMPT_NEVER = "Don't ask again";

/** How long a read of the agent, its stores' roots and its newest restore point is used (ms). */
const SCOPE_TTL_MS = 10_000;

/** The agent with what the config-file scoping needs (store roots, the target's local root). */
interface Scope {
  agent: ResolvedAgent;
  homes: string[];
  localRoot?: string;
}

/** The restore point fields a ServerCommandResult carries. */
function brief(rp: RestorePoint): NonNullable<ServerCommandResult['restorePoint']> {
  return { id: rp.id, label: rp.label, createdAt: rp.createdAt, target: rp.target };
}

/**
 * The server-side commands and the config-file lens and question of one connection. Settings come
 * from initializationOptions and workspace/didChangeConfiguration (`update`).
 */
export class EditorCommands {
  private settings: Pick<LensSettings, 'agent' | 'target' | 'stores' | 'configFilesCodeLens' | 'configFilesPrompt'> =
    {};
  private scope: { at: number; value: Promise<Scope | undefined> } | undefined;
  private latest: { at: number; value: Promise<RestorePoint | undefined> } | undefined;
  /** file -> id of the newest restore point when the user was asked (or took one) for it ('' = none). */
  private readonly asked = new Map<string, string>();
  private readonly checking = new Set<string>();

  constructor(
    private readonly connection: Connection,
    private readonly core: CoreApi,
    private readonly stateDir: string,
    private readonly log: (msg: string) => void,
    /** Called after a restore point was taken or reused (the session asks the client to refresh its lenses). */
    private readonly onTaken: () => void = () => undefined,
  ) {}

  /** Take the settings of initializationOptions or of settings.agentkeep (fields not given stay). */
  update(s: Partial<Record<keyof LensSettings, unknown>>): void {
    const next = { ...this.settings };
    if (typeof s.agent === 'string') next.agent = s.agent || undefined;
    if (typeof s.target === 'string') next.target = s.target || undefined;
    if (Array.isArray(s.stores)) next.stores = s.stores.filter((x): x is string => typeof x === 'string');
    if (typeof s.configFilesCodeLens === 'boolean') next.configFilesCodeLens = s.configFilesCodeLens;
    if (typeof s.configFilesPrompt === 'boolean') next.configFilesPrompt = s.configFilesPrompt;
    const agentChanged = ['agent', 'target', 'stores'].some(
      (k) => JSON.stringify(next[k as keyof typeof next]) !== JSON.stringify(this.settings[k as keyof typeof next]),
    );
    this.settings = next;
    if (agentChanged) this.scope = this.latest = undefined;
  }

  /** The agent to work on. @throws AgentKeepError when none is set up, or the choice is unknown or ambiguous */
  private async agent(): Promise<ResolvedAgent> {
    const { agent, target, stores } = this.settings;
    const r = await resolveAgent(this.stateDir, {
      ...(agent !== undefined && target === undefined ? { agent } : {}),
      ...(target !== undefined ? { target } : {}),
      ...(stores ? { stores } : {}),
    });
    if (r) return r;
    throw new AgentKeepError(
      'InvalidParams',
      'No agent is set up for AgentKeep, so there is nothing to take a restore point of.',
      'Name the agent once in a terminal: agentkeep agent add NAME --target dir:/path/to/agent ' +
        '--store hermes:/path/to/.hermes, or give the language server the initialization option target ' +
        '(Neovim: init_options).',
    );
  }

  /** The agent and its config-file scoping, read at most every 10 s; undefined when no agent resolves. */
  private currentScope(): Promise<Scope | undefined> {
    if (this.scope && Date.now() - this.scope.at < SCOPE_TTL_MS) return this.scope.value;
    const value = (async (): Promise<Scope | undefined> => {
      const agent = await this.agent().catch(() => undefined);
      if (!agent) return undefined;
      const stores = agent.stores?.length ? await this.core.describeStores({ stores: agent.stores }) : [];
      const homes = stores.map((s) => s.localRoot).filter((h): h is string => !!h);
      const desc = await this.core.describeTarget({ target: agent.target }).catch(() => undefined);
      return { agent, homes, ...(desc?.localRoot ? { localRoot: desc.localRoot } : {}) };
    })().catch(() => undefined);
    this.scope = { at: Date.now(), value };
    return value;
  }

  /** The newest restore point (not failed) of the agent's target, read at most every 10 s. */
  private newest(scope: Scope): Promise<RestorePoint | undefined> {
    if (this.latest && Date.now() - this.latest.at < SCOPE_TTL_MS) return this.latest.value;
    const value = this.core
      .listRestorePoints({ target: scope.agent.target })
      .then((rps) => rps.find((r) => r.status !== 'failed'))
      .catch(() => undefined);
    this.latest = { at: Date.now(), value };
    return value;
  }

  private noteTaken(file: string | undefined, rp: RestorePoint): void {
    this.latest = { at: Date.now(), value: Promise.resolve(rp) };
    if (file) this.asked.set(file, rp.id);
  }

  /** Why `file` is a risky config file of the agent, or undefined (riskyConfigInScope, as the extension's lens and prompt). */
  private riskyIn(file: string, scope: Scope): RiskyConfig | undefined {
    return riskyConfigInScope(file, scope.homes, scope.localRoot);
  }

  /**
   * The config-file lens of a document: one lens on line 1 when `file` is a risky config file of the
   * agent and configFilesCodeLens is not false, with its title and command (resolveConfigLens) filled in.
   */
  async configLenses(file: string | undefined): Promise<CodeLens[]> {
    if (!file || this.settings.configFilesCodeLens === false) return [];
    const scope = await this.currentScope();
    const risky = scope && this.riskyIn(file, scope);
    if (!risky) return [];
    // with its command (as the risky-command lenses of other editors: Neovim 0.7 runs unresolved lenses);
    // codeLens/resolve of it still gives a fresh "last: …"
    return [
      await this.resolveConfigLens({
        range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } },
        data: { kind: 'beforeEdit', file, reason: risky.reason },
      }),
    ];
  }

  /** codeLens/resolve of a config-file lens: "Restore point before editing (last: 5m ago | none yet)". */
  async resolveConfigLens(lens: CodeLens): Promise<CodeLens> {
    const data = lens.data as { file: string; reason?: string };
    const scope = await this.currentScope();
    const rp = scope && (await this.newest(scope));
    const last = rp ? `last: ${formatAge(rp.createdAt)}` : 'none yet';
    return {
      ...lens,
      command: {
        title: `Restore point before editing (${last})`,
        command: ServerCommands.restorePointBeforeEdit,
        arguments: [{ file: data.file }],
        ...(data.reason ? { tooltip: data.reason } : {}),
      },
    };
  }

  /**
   * workspace/executeCommand of a ServerCommands command. Shows the outcome with window/showMessage
   * and returns it (ServerCommandResult).
   * @throws ResponseError InvalidParams for an unknown command or an argument that does not fit
   */
  async execute(command: string, args: unknown[] | undefined): Promise<ServerCommandResult> {
    if (command === ServerCommands.takeRestorePoint) {
      const arg = LensArgument.safeParse(args?.[0]);
      if (!arg.success)
        throw badArgument(command, arg.error.issues[0]?.message, 'the lens argument {command, file, line}');
      return this.takeBeforeCommand(arg.data);
    }
    if (command === ServerCommands.restorePointBeforeEdit) {
      const arg = BeforeEditArgument.safeParse(args?.[0]);
      if (!arg.success) throw badArgument(command, arg.error.issues[0]?.message, '{file: "/abs/path"}');
      return this.takeBeforeEdit(arg.data.file);
    }
    throw new ResponseError(
      RpcErrorCodes.InvalidParams,
      `Unknown command "${command}". The AgentKeep language server runs ${Object.values(ServerCommands).join(', ')}.`,
      { code: 'invalid_params', hint: 'Use a command of an AgentKeep lens.' },
    );
  }

  /** "Take restore point" on a risky command: a manual restore point labelled with the command (no post follows). */
  private async takeBeforeCommand(arg: LensArgument): Promise<ServerCommandResult> {
    const shown = arg.command.split('\n')[0] + (arg.command.includes('\n') ? ' …' : '');
    const reason: Reason = {
      command: arg.command,
      file: arg.file,
      line: arg.line,
      ...(arg.class ? { class: arg.class } : {}),
      ...(arg.reason ? { risk: arg.reason } : {}),
    };
    return this.take({ label: arg.command, reason, kind: 'manual' }, (rp, reused, undo) =>
      reused
        ? `AgentKeep: using the restore point taken ${formatAge(rp.createdAt)} (${rp.id}, nothing changed since). Now run \`${shown}\`.${undo}`
        : `AgentKeep: restore point ${rp.id} taken before \`${shown}\`. Now run it.${undo}`,
    );
  }

  /** "Restore point before editing" a config file: kind config-edit, as the extension's command. */
  private async takeBeforeEdit(file: string): Promise<ServerCommandResult> {
    const base = path.basename(file);
    const r = await this.take(
      { label: `before editing ${base}`, reason: { file, text: `before editing ${base}` }, kind: 'config-edit' },
      (rp, reused, undo) =>
        reused
          ? `AgentKeep: using the restore point taken ${formatAge(rp.createdAt)} (${rp.id}, nothing changed since) for ${base}.${undo}`
          : `AgentKeep: restore point ${rp.id} taken before editing ${base}.${undo}`,
      file,
    );
    return r;
  }

  /** Create (or reuse, within REUSE_WINDOW_MS) a restore point of the agent; tell the user either way. */
  private async take(
    p: { label: string; reason: Reason; kind: 'manual' | 'config-edit' },
    describe: (rp: RestorePoint, reused: boolean, undo: string) => string,
    file?: string,
  ): Promise<ServerCommandResult> {
    let result: ServerCommandResult;
    // server-initiated work-done progress (a no-op for a client without window.workDoneProgress)
    const progress = await this.connection.window.createWorkDoneProgress().catch(() => undefined);
    progress?.begin('AgentKeep', undefined, `Taking a restore point: ${p.label.split('\n')[0]}`);
    try {
      const agent = await this.agent();
      const r: ResultOf<'restorePointCreate'> = await this.core.createRestorePoint({
        target: agent.target,
        ...(agent.stores ? { stores: agent.stores } : {}),
        label: p.label,
        kind: p.kind,
        reason: p.reason,
        reuse: true,
        reuseWithinMs: REUSE_WINDOW_MS,
      });
      const reused = r.reused === true;
      this.noteTaken(file, r);
      this.onTaken();
      const undoLine = commandLine(
        nextAction('Roll back', 'restorePointRestore', { target: agent.target, id: r.id, scope: 'both' }),
        { stateDir: this.stateDir, yes: false },
      );
      const undo = undoLine ? ` To roll back: ${undoLine}` : '';
      result = { ok: true, message: describe(r, reused, undo), restorePoint: brief(r), reused };
      this.show(MessageType.Info, result.message);
      for (const w of r.warnings ?? []) this.show(MessageType.Warning, `AgentKeep: ${w}`);
      for (const n of r.notices ?? [])
        this.show(MessageType.Warning, `AgentKeep: ${describeProblem(n, { stateDir: this.stateDir, yes: false })}`);
    } catch (e) {
      const err = toResponseError(e);
      const actions = err.data?.actions;
      const text = describeProblem(
        { message: err.message, ...(err.data?.hint ? { hint: err.data.hint } : {}), ...(actions ? { actions } : {}) },
        { stateDir: this.stateDir, yes: false },
      );
      if (err.data?.code === 'internal')
        this.log(`agentkeep: ${p.label}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
      result = {
        ok: false,
        message: `AgentKeep: no restore point was taken. ${text}`,
        error: {
          code: err.data?.code ?? 'internal',
          message: err.message,
          ...(err.data?.hint ? { hint: err.data.hint } : {}),
        },
      };
      this.show(MessageType.Error, result.message);
    } finally {
      progress?.done();
    }
    return result;
  }

  private show(type: 1 | 2 | 3, message: string): void {
    void this.connection.sendNotification('window/showMessage', { type, message }).catch(() => undefined);
  }

  /**
   * A document changed and differs from its opened or saved text: on the first such change of a risky
   * config file since the newest restore point, ask once whether to take one (configFilesPrompt).
   */
  onDirty(file: string | undefined): void {
    if (!file || this.settings.configFilesPrompt === false || this.checking.has(file)) return;
    this.checking.add(file);
    void (async () => {
      let risky: RiskyConfig | undefined;
      try {
        const scope = await this.currentScope();
        risky = scope && this.riskyIn(file, scope);
        if (!scope || !risky) return;
        const latestId = (await this.newest(scope))?.id ?? '';
        if (this.asked.get(file) === latestId) return; // asked (or taken) since the newest restore point
        this.asked.set(file, latestId);
      } finally {
        this.checking.delete(file);
      }
      await this.ask(file, risky);
    })().catch((e) => this.log(`agentkeep: config-file question: ${e instanceof Error ? e.message : String(e)}`));
  }

  private async ask(file: string, risky: RiskyConfig): Promise<void> {
    const answer = (await this.connection.sendRequest('window/showMessageRequest', {
      type: MessageType.Info,
      message: `AgentKeep: take a restore point before changing ${path.basename(file)}? ${risky.reason}`,
      actions: [{ title: PROMPT_TAKE }, { title: PROMPT_NOT_NOW }, { title: PROMPT_NEVER }],
    })) as { title?: string } | null;
    if (answer?.title === PROMPT_TAKE) await this.takeBeforeEdit(file);
    else if (answer?.title === PROMPT_NEVER) {
      this.settings.configFilesPrompt = false;
      this.show(
        MessageType.Info,
        'AgentKeep will not ask again until the editor restarts; to turn the question off for good, give the ' +
          'language server the initialization option configFilesPrompt: false (Neovim: init_options).',
      );
    }
  }
}

/** An executeCommand argument that does not fit: InvalidParams naming the problem and the expected shape. */
function badArgument(command: string, why: string | undefined, expected: string): ResponseError<unknown> {
  return new ResponseError(
    RpcErrorCodes.InvalidParams,
    `${command}: the argument does not fit${why ? ` (${why})` : ''}.`,
    { code: 'invalid_params', hint: `Pass ${expected} as the one argument.` },
  );
}
