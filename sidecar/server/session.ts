/**
 * One AgentKeep language-server session on a vscode-languageserver connection, whatever the
 * transport (stdio or one WebSocket): LSP initialize with full text sync and CodeLens, every
 * `agentkeep/*` method routed through dispatch, and core notifications forwarded.
 *
 * Two kinds of client (LensSettings.clientCommands in initializationOptions):
 * - the VS Code extension (`clientCommands: true`): lenses "$(history) Snapshot & run" / "$(play) Run"
 *   name its own commands (LensCommands); it serves the config-file lens itself;
 * - any other editor: plain titles, one "Take restore point" lens per block of risky commands, the
 *   "Restore point before editing" lens and first-change question on risky config files, and the
 *   commands run here through workspace/executeCommand (ServerCommands; ./editorCommands.ts). A
 *   terminal command is not run by the sidecar: the restore point is taken and the message says to run
 *   it (an LSP client has no terminal to give; `agentkeep run` makes the before/after pair in one).
 */
import { fileURLToPath } from 'node:url';
import {
  CancellationToken,
  CodeLens,
  LSPErrorCodes,
  ResponseError,
  TextDocuments,
  TextDocumentSyncKind,
  type Connection,
  type InitializeResult,
} from 'vscode-languageserver';
import { TextDocument } from 'vscode-languageserver-textdocument';
import {
  codeLensSettingOf,
  LensCommands,
  Notifications,
  parseCodeLensFilter,
  SERVER_COMMANDS,
  ServerCommands,
  type ChangedParams,
  type CodeLensFilter,
  type ErrorData,
  type LensArgument,
  type LensSettings,
  type ProgressParams,
} from '../protocol';
import { dispatch, toResponseError, wireMethods } from '../core/dispatch';
import type { CoreApi, CoreOptions } from '../core/service';
import { fileKind, RISK_CLASSES, scanCommands, type FileKind, type RiskyCommand } from '../risk';
import { VERSION } from '../cli/version';
import { EditorCommands } from './editorCommands';

/** Command ids of the two lenses (contributed by the extension; sidecar/protocol/lens.ts). */
export const SNAPSHOT_AND_RUN_COMMAND = LensCommands.snapshotAndRun;
export const RUN_COMMAND = LensCommands.run;

/** The one argument of both lens commands: the protocol's (sidecar/protocol/lens.ts). */
export type { LensArgument };

/** Creates the core for a server; the server passes hooks that forward notifications. */
export type CoreFactory = (opts: CoreOptions) => CoreApi;

/**
 * Fans core notifications out to every live connection (one for stdio, one per socket for WS).
 * The core is shared by all connections of one server process.
 */
export class ConnectionHub {
  private readonly conns = new Set<Connection>();

  add(c: Connection): void {
    this.conns.add(c);
  }
  delete(c: Connection): void {
    this.conns.delete(c);
  }
  get size(): number {
    return this.conns.size;
  }
  progress(p: ProgressParams): void {
    for (const c of this.conns) void c.sendNotification(Notifications.progress.method, p).catch(() => undefined);
  }
  changed(p: ChangedParams): void {
    for (const c of this.conns) void c.sendNotification(Notifications.changed.method, p).catch(() => undefined);
  }
  /** Core options whose onProgress/onChanged go to this hub. */
  coreOptions(base: CoreOptions): CoreOptions {
    return { ...base, onProgress: (p) => this.progress(p), onChanged: (c) => this.changed(c) };
  }
}

function fsPathOf(uri: string): string {
  try {
    if (uri.startsWith('file:')) return fileURLToPath(uri);
    return decodeURIComponent(new URL(uri).pathname);
  } catch {
    return uri;
  }
}

/** File kind of a document whose name does not decide it (untitled, oddly named), from its languageId. */
const LANGUAGE_KIND = new Map<string, FileKind>(
  Object.entries({
    shellscript: 'shell',
    markdown: 'markdown',
    dockerfile: 'dockerfile',
    makefile: 'makefile',
    powershell: 'powershell',
    dockercompose: 'compose',
    'github-actions-workflow': 'workflow',
    just: 'justfile',
    // Neovim's filetypes
    sh: 'shell',
    bash: 'shell',
    zsh: 'shell',
    make: 'makefile',
    ps1: 'powershell',
  }),
);

/** The lens filter and its parsing are the protocol's (sidecar/protocol/lens.ts), shared with the extension. */
export { parseCodeLensFilter, type CodeLensFilter };

/** Risky commands of a document: its file kind from the URI (notebook cells, file name) or else its languageId. */
export function riskyCommandsOf(doc: TextDocument): RiskyCommand[] {
  const file = fsPathOf(doc.uri);
  const text = doc.getText();
  if (doc.uri.startsWith('vscode-notebook-cell:')) return scanCommands(file, text, 'notebook-cell');
  const byName = fileKind(file, text);
  const kind = byName === 'unknown' ? (LANGUAGE_KIND.get(doc.languageId) ?? 'unknown') : byName;
  return scanCommands(file, text, kind);
}

const PRIORITY: Record<string, number> = Object.fromEntries(RISK_CLASSES.map((c, i) => [c, i + 1]));

/**
 * Group risky commands into blocks: commands on consecutive lines (the next starts on the line after the
 * previous one ends) form one block. A block's command is its commands joined by "\n", its class the
 * highest of them.
 */
export function lensBlocks(
  cmds: RiskyCommand[],
): Array<{ line: number; endLine: number; command: string; class: string; reason: string }> {
  const out: Array<{ line: number; endLine: number; command: string; class: string; reason: string }> = [];
  for (const c of cmds) {
    const last = out.at(-1);
    if (last && c.line === last.endLine + 1) {
      last.endLine = c.endLine;
      last.command += `\n${c.text}`;
      if (PRIORITY[c.class] > PRIORITY[last.class]) {
        last.class = c.class;
        last.reason = c.reason;
      }
    } else out.push({ line: c.line, endLine: c.endLine, command: c.text, class: c.class, reason: c.reason });
  }
  return out;
}

/**
 * Which lenses a client gets: `vscode` (the extension runs LensCommands: "Snapshot & run" + "Run" with
 * codicons) or `plain` (any other editor: one "Take restore point" per block, run by the sidecar).
 */
export type LensStyle = 'vscode' | 'plain';

/**
 * CodeLenses of a document: one "Snapshot & run" + "Run" pair per block of risky commands on consecutive
 * lines, on the block's first line (style `plain`: one "Take restore point" lens instead). Commands of
 * classes the filter leaves out are dropped before grouping.
 * Lenses carry only a range and `data` ({kind: 'snapshot' | 'run' | 'take', arg}); resolveCodeLens (below,
 * `lensCommand`) fills in the command, so a client pays for commands only on the lenses it shows.
 * @param cmds the document's risky commands (cached by the caller per document version)
 */
export function codeLensesFor(
  doc: TextDocument,
  filter: CodeLensFilter = 'all',
  cmds: RiskyCommand[] = riskyCommandsOf(doc),
  style: LensStyle = 'vscode',
): CodeLens[] {
  if (filter === 'off') return [];
  const file = fsPathOf(doc.uri);
  const shown = filter === 'all' ? cmds : cmds.filter((c) => filter.includes(c.class));
  const lenses: CodeLens[] = [];
  for (const b of lensBlocks(shown)) {
    const arg: LensArgument = {
      command: b.command,
      file,
      uri: doc.uri,
      line: b.line,
      endLine: b.endLine,
      class: b.class,
      ...(b.reason ? { reason: b.reason } : {}),
    };
    const lineText = doc
      .getText({ start: { line: b.line - 1, character: 0 }, end: { line: b.line, character: 0 } })
      .replace(/\r?\n$/, '');
    const range = { start: { line: b.line - 1, character: 0 }, end: { line: b.line - 1, character: lineText.length } };
    // other editors get the command right away (data kept, so a codeLens/resolve gives the same lens):
    // Neovim 0.7 runs vim.lsp.codelens.run() on lenses it has not resolved yet and crashes on a
    // lens without a command. VS Code's lenses stay range-only, resolved for the visible ones.
    if (style === 'plain') {
      lenses.push(resolveLens({ range, data: { kind: 'take', arg } }));
      continue;
    }
    lenses.push({ range, data: { kind: 'snapshot', arg } });
    lenses.push({ range, data: { kind: 'run', arg } });
  }
  return lenses;
}

/**
 * codeLens/resolve: fill in the command of a lens from codeLensesFor ("$(history) Snapshot & run" →
 * agentkeep.snapshotAndRun, "$(play) Run" → agentkeep.run, "Take restore point" →
 * agentkeep.takeRestorePoint (run by the sidecar), one LensArgument). A lens without our `data` is
 * returned unchanged.
 */
export function resolveLens(lens: CodeLens): CodeLens {
  if (lens.command) return lens;
  const data = lens.data as { kind?: string; arg?: LensArgument } | undefined;
  if (!data?.arg) return lens;
  // the tooltip names why the command is risky (LSP 3.18 Command.tooltip; VS Code shows it on hover)
  const tooltip = data.arg.reason
    ? {
        tooltip:
          data.kind === 'run'
            ? `Run without a restore point. ${data.arg.reason}`
            : data.kind === 'take'
              ? `Take a restore point, then run the command yourself. ${data.arg.reason}`
              : `Take a restore point, then run. ${data.arg.reason}`,
      }
    : {};
  if (data.kind === 'take')
    return {
      ...lens,
      command: {
        title: 'Take restore point',
        command: ServerCommands.takeRestorePoint,
        arguments: [data.arg],
        ...tooltip,
      },
    };
  const command =
    data.kind === 'run'
      ? { title: '$(play) Run', command: RUN_COMMAND, arguments: [data.arg], ...tooltip }
      : { title: '$(history) Snapshot & run', command: SNAPSHOT_AND_RUN_COMMAND, arguments: [data.arg], ...tooltip };
  return { ...lens, command };
}

/**
 * `work`, or a RequestCancelled ResponseError (LSP -32800, data.code "cancelled") as soon as the
 * client sends $/cancelRequest for it. Cancelling stops the waiting, not the work: a create or
 * rollback runs to its end (a Proxmox task continues on the host either way), the core records the
 * outcome in the journal and sends agentkeep/changed, so nothing is left half-recorded. A failure of
 * the abandoned work goes to `onLateError`.
 */
export function untilCancelled<T>(
  work: Promise<T>,
  token: CancellationToken,
  onLateError: (e: unknown) => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let cancelled = false;
    const sub = token.onCancellationRequested(() => {
      cancelled = true;
      reject(
        new ResponseError<ErrorData>(
          LSPErrorCodes.RequestCancelled,
          'Stopped waiting: the request was cancelled. The operation continues and its result appears in the restore point list when it ends.',
          {
            code: 'cancelled',
          },
        ),
      );
    });
    work.then(resolve, (e) => (cancelled ? onLateError(e) : reject(e))).finally(() => sub.dispose());
  });
}

/** What a session needs besides the core. */
export interface SessionOptions {
  /** The state dir (absolute) whose config.json names the agents: the agent of ServerCommands. */
  stateDir: string;
}

/** The file path of a file: URI (the config-file lens and question are for files on disk only). */
function filePathOf(uri: string): string | undefined {
  if (!uri.startsWith('file:')) return undefined;
  try {
    return fileURLToPath(uri);
  } catch {
    return undefined;
  }
}

/**
 * Wire one connection: LSP lifecycle, documents, CodeLens, workspace/executeCommand (other editors'
 * ServerCommands), agentkeep/* requests. Calls `connection.listen()`. The caller adds the connection
 * to the hub (for notifications).
 * @param log where diagnostics go (never stdout for stdio)
 */
export function serveConnection(
  connection: Connection,
  core: CoreApi,
  log: (msg: string) => void,
  opts: SessionOptions,
): void {
  const documents = new TextDocuments(TextDocument);
  // per document: the scan of one version, and the lenses of that version under the current filter
  const cache = new Map<string, { version: number; cmds: RiskyCommand[]; filterKey?: string; lenses?: CodeLens[] }>();
  let filter: CodeLensFilter = 'all';
  let canRefresh = false;
  // the VS Code extension runs the lens commands itself; every other editor gets ServerCommands
  let style: LensStyle = 'plain';
  // a taken restore point changes the config-file lens ("last: just now")
  const editor = new EditorCommands(connection, core, opts.stateDir, log, () => {
    if (canRefresh) void connection.sendRequest('workspace/codeLens/refresh').catch(() => undefined);
  });
  // other editors: the text each document had when opened or last saved (a change away from it is "unsaved")
  const saved = new Map<string, string>();

  connection.onInitialize((params): InitializeResult => {
    // LensSettings (sidecar/protocol/lens.ts); parsed leniently, an unreadable filter is "all"
    const init = (params as Partial<typeof params> | null)?.initializationOptions as
      Partial<Record<keyof LensSettings, unknown>> | undefined;
    if (init && typeof init === 'object' && 'codeLens' in init) filter = parseCodeLensFilter(init.codeLens);
    // a client that sends no capabilities (params {}) has none
    const caps = (params as Partial<typeof params> | null)?.capabilities;
    canRefresh = Boolean(caps?.workspace?.codeLens?.refreshSupport);
    // decided by the flag, not by clientInfo.name: only the extension has the agentkeep.* commands,
    // a VS Code (or fork) window without it could not run them either
    style = init && typeof init === 'object' && init.clientCommands === true ? 'vscode' : 'plain';
    if (style === 'vscode') {
      return {
        capabilities: {
          textDocumentSync: TextDocumentSyncKind.Full,
          codeLensProvider: { resolveProvider: true },
        },
        serverInfo: { name: 'agentkeep', version: VERSION },
      };
    }
    if (init && typeof init === 'object') editor.update(init);
    return {
      capabilities: {
        // didSave marks a document clean again (the first-change question is about unsaved changes)
        textDocumentSync: { openClose: true, change: TextDocumentSyncKind.Full, save: { includeText: false } },
        codeLensProvider: { resolveProvider: true },
        executeCommandProvider: { commands: [...SERVER_COMMANDS] },
      },
      serverInfo: { name: 'agentkeep', version: VERSION },
    };
  });

  // settings push: {agentkeep: {codeLens: 'all' | 'off' | [classes], …LensSettings}} (or {codeLens: …})
  connection.onDidChangeConfiguration((p) => {
    if (style === 'plain') {
      const s = p.settings as { agentkeep?: unknown } | undefined;
      const own = s?.agentkeep && typeof s.agentkeep === 'object' ? s.agentkeep : s;
      if (own && typeof own === 'object') editor.update(own as Partial<Record<keyof LensSettings, unknown>>);
    }
    const v = codeLensSettingOf(p.settings);
    if (v === undefined && style === 'vscode') return;
    if (v !== undefined) filter = v;
    if (canRefresh) void connection.sendRequest('workspace/codeLens/refresh').catch(() => undefined);
  });

  connection.onCodeLens(async (params) => {
    const doc = documents.get(params.textDocument.uri);
    if (!doc) return [];
    let hit = cache.get(doc.uri);
    if (!hit || hit.version !== doc.version) {
      hit = { version: doc.version, cmds: riskyCommandsOf(doc) };
      cache.set(doc.uri, hit);
    }
    const key = JSON.stringify(filter);
    if (hit.filterKey !== key || !hit.lenses) {
      hit.lenses = codeLensesFor(doc, filter, hit.cmds, style);
      hit.filterKey = key;
    }
    if (style === 'vscode') return hit.lenses;
    return [...(await editor.configLenses(filePathOf(doc.uri))), ...hit.lenses];
  });

  connection.onCodeLensResolve((lens) =>
    (lens.data as { kind?: string } | undefined)?.kind === 'beforeEdit' && !lens.command
      ? editor.resolveConfigLens(lens)
      : resolveLens(lens),
  );

  connection.onExecuteCommand((p) => editor.execute(p.command, p.arguments));

  documents.onDidOpen((e) => {
    if (style === 'plain') saved.set(e.document.uri, e.document.getText());
  });
  documents.onDidSave((e) => saved.set(e.document.uri, e.document.getText()));
  documents.onDidChangeContent((e) => {
    if (style !== 'plain') return;
    const was = saved.get(e.document.uri);
    if (was !== undefined && was !== e.document.getText()) editor.onDirty(filePathOf(e.document.uri));
  });
  documents.onDidClose((e) => {
    cache.delete(e.document.uri);
    saved.delete(e.document.uri);
  });

  for (const wire of wireMethods()) {
    // vscode-jsonrpc passes the params (spread when sent by position) and then the CancellationToken
    connection.onRequest(wire, async (...args: unknown[]) => {
      const last = args.at(-1);
      const token = CancellationToken.is(last) ? last : CancellationToken.None;
      const params = args.length > 1 || !CancellationToken.is(args[0]) ? args[0] : undefined;
      try {
        return await untilCancelled(dispatch(core, wire, params), token, (e) =>
          log(
            `agentkeep: ${wire} ended after its request was cancelled: ${e instanceof Error ? e.message : String(e)}`,
          ),
        );
      } catch (e) {
        if (e instanceof ResponseError) throw e; // cancelled (untilCancelled)
        const err = toResponseError(e);
        if (err.data?.code === 'internal')
          log(`agentkeep: ${wire} failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
        throw err;
      }
    });
  }

  documents.listen(connection);
  connection.listen();
}
