/**
 * The CodeLens contract between the sidecar's LSP server (sidecar/server/session.ts makes the lenses)
 * and the VS Code extension (extension/ runs their commands and reads the settings): the lens
 * command ids, the one argument of the lens commands, and the lens settings (names, shape, parsing).
 * Both sides import these; neither defines its own.
 */
import { z } from 'zod';
import { RISK_CLASSES, RISK_CLASS_DESCRIPTIONS, type RiskClass } from './risk';

/** A risk class as a schema (the classes of sidecar/protocol/risk.ts). */
export const RiskClassSchema = z
  .enum(RISK_CLASSES)
  .describe(RISK_CLASSES.map((c) => `${c}: ${RISK_CLASS_DESCRIPTIONS[c]}`).join('; '));

/**
 * Command ids the lenses and prompts name (contributed by the extension's package.json):
 *   snapshotAndRun          "Snapshot & run" lens: agentkeep.snapshotAndRun(LensArgument, options?)
 *   run                     "Run" lens: agentkeep.run(LensArgument)
 *   restorePointBeforeEdit  "Restore point before editing" lens of config files: ({file}, {fresh?})
 */
export const LensCommands = {
  snapshotAndRun: 'agentkeep.snapshotAndRun',
  run: 'agentkeep.run',
  restorePointBeforeEdit: 'agentkeep.restorePointBeforeEdit',
} as const;

/**
 * Commands the sidecar runs itself, through LSP workspace/executeCommand, for editors other than VS
 * Code (Neovim, Helix, Zed, Emacs…): it advertises them in `executeCommandProvider.commands` and its
 * lenses name them. The VS Code extension runs its own commands (LensCommands) and is never sent these.
 *   takeRestorePoint        "Take restore point" lens of risky commands: (LensArgument) -> ServerCommandResult
 *   restorePointBeforeEdit  "Restore point before editing" lens of config files: ({file}) -> ServerCommandResult
 * Neither needs a terminal; the command itself is the user's to run (the message says so).
 */
export const ServerCommands = {
  takeRestorePoint: 'agentkeep.takeRestorePoint',
  restorePointBeforeEdit: LensCommands.restorePointBeforeEdit,
} as const;
export const SERVER_COMMANDS: readonly string[] = Object.values(ServerCommands);

/** The argument of ServerCommands.restorePointBeforeEdit (and of the extension's command of that id). */
export const BeforeEditArgument = z
  .object({ file: z.string().min(1).describe('File system path of the config file about to be edited') })
  .describe('The argument of agentkeep.restorePointBeforeEdit');
export type BeforeEditArgument = z.infer<typeof BeforeEditArgument>;

/**
 * What a ServerCommands command answers (workspace/executeCommand result). The sidecar also shows
 * `message` with window/showMessage (type Info when ok, Error when not), so a client that ignores the
 * result still tells the user; a failure is this result with `ok: false`, not a JSON-RPC error
 * (only an unknown command or an argument that does not fit is one).
 */
export const ServerCommandResult = z
  .object({
    ok: z.boolean(),
    message: z.string().describe('What happened and what to do next, one line (the text of window/showMessage)'),
    restorePoint: z
      .object({ id: z.string(), label: z.string(), createdAt: z.string(), target: z.string() })
      .optional()
      .describe('The restore point taken or reused (ok only)'),
    reused: z
      .boolean()
      .optional()
      .describe('true: one of the last minute was reused, nothing changed since (REUSE_WINDOW_MS)'),
    error: z
      .object({ code: z.string(), message: z.string(), hint: z.string().optional() })
      .optional()
      .describe('Why it failed (not ok): the ErrorData code, the message and the hint'),
  })
  .describe('The result of a server-side command');
export type ServerCommandResult = z.infer<typeof ServerCommandResult>;

/**
 * The one argument of the lens commands agentkeep.snapshotAndRun and agentkeep.run. The sidecar's
 * lenses carry every field; a caller (a test, another extension) needs only command, file and line.
 */
export const LensArgument = z
  .object({
    command: z
      .string()
      .refine((s) => s.trim().length > 0, 'the command is empty')
      .describe(
        'What the terminal runs: the logical command as written (continuations joined); for a block of risky ' +
          'commands on consecutive lines, their commands joined by "\\n" (run as a && b)',
      ),
    file: z.string().min(1).describe('File system path of the document (from a file: URI; the URI path otherwise)'),
    uri: z.string().optional().describe('The document URI as the client sent it'),
    line: z.number().int().positive().describe('1-based first line (of the block)'),
    endLine: z.number().int().positive().optional().describe('1-based last line (of the block)'),
    class: z
      .string()
      .optional()
      .describe(`Highest risk class of the command (block): ${RISK_CLASSES.join(' | ')}`),
    reason: z
      .string()
      .optional()
      .describe(
        "Why, one line, of the block's highest command (`destructive: git reset --hard discards …`): " +
          'the lens tooltip',
      ),
  })
  .describe('The argument of the lens commands');
export type LensArgument = z.infer<typeof LensArgument>;

/**
 * The lens settings (VS Code settings contributed by package.json), by full name, with their
 * defaults. `codeLens` is also what the extension sends the sidecar (LensSettings below).
 */
export const LensSettingKeys = {
  /** Where "Snapshot & run" / "Run" show: "all" (default), "off", or a list of risk classes. */
  codeLens: 'agentkeep.codeLens',
  /** "Restore point before editing" on the agent's risky config files (boolean, default true). */
  configFilesCodeLens: 'agentkeep.configFiles.codeLens',
  /** Offer a restore point on the first unsaved change of a risky config file (boolean, default true). */
  configFilesPrompt: 'agentkeep.configFiles.prompt',
} as const;
export const LENS_SETTING_DEFAULTS = { codeLens: 'all', configFilesCodeLens: true, configFilesPrompt: true } as const;

/** Which "Snapshot & run" lenses to show: every class, none, or only the listed classes. */
export const CodeLensFilter = z
  .union([z.enum(['all', 'off']), z.array(RiskClassSchema)])
  .describe('agentkeep.codeLens: "all", "off", or the risk classes to show lenses for');
export type CodeLensFilter = 'all' | 'off' | RiskClass[];

/**
 * Read an agentkeep.codeLens value as it may come from settings or a client: "all" | "off" |
 * [classes]; `false` and the older `{enabled: false}` (agentkeep.codeLens.enabled) mean "off";
 * `{classes: [...]}` means those classes. Unknown class names and non-strings in a list are dropped;
 * anything else reads as "all" (the default). Pure.
 */
export function parseCodeLensFilter(v: unknown): CodeLensFilter {
  if (v === 'off' || v === false) return 'off';
  if (Array.isArray(v)) return v.filter((x): x is RiskClass => (RISK_CLASSES as readonly unknown[]).includes(x));
  if (v && typeof v === 'object') {
    const o = v as { enabled?: unknown; classes?: unknown };
    if (o.enabled === false) return 'off';
    if (o.classes !== undefined) return parseCodeLensFilter(o.classes);
  }
  return 'all';
}

/**
 * What the extension sends the sidecar about lenses: LSP initializationOptions `{codeLens}` when it
 * starts it, and workspace/didChangeConfiguration `{settings: {agentkeep: {codeLens}}}` on a change.
 */
export const LensSettings = z
  .object({
    codeLens: CodeLensFilter.optional().describe('The agentkeep.codeLens filter'),
    clientCommands: z
      .boolean()
      .optional()
      .describe(
        'true (the VS Code extension sends it): the client runs the lens commands itself (LensCommands), so ' +
          'lenses carry VS Code $(icon) titles and the sidecar advertises no executeCommandProvider and ' +
          'serves no config-file lens (the extension has its own). Absent: any other editor (plain titles, ' +
          'ServerCommands run in the sidecar)',
      ),
    configFilesCodeLens: z
      .boolean()
      .optional()
      .describe('Other editors: the "Restore point before editing" lens on risky config files (default true)'),
    configFilesPrompt: z
      .boolean()
      .optional()
      .describe(
        'Other editors: ask once (window/showMessageRequest) on the first unsaved change of a risky config file ' +
          'since the last restore point (default true)',
      ),
    agent: z
      .string()
      .optional()
      .describe(
        'Other editors: the named agent (agentkeep agent list) the commands work on; default: the default agent',
      ),
    target: z.string().optional().describe('Other editors: a target instead of a named agent'),
    stores: z.array(z.string()).optional().describe('Other editors: with target, the stores to capture'),
  })
  .describe('Lens settings sent to the sidecar (initializationOptions; settings.agentkeep of didChangeConfiguration)');
export type LensSettings = z.infer<typeof LensSettings>;

/**
 * The codeLens filter in a workspace/didChangeConfiguration `settings` object: under `agentkeep`
 * (what the extension sends), or at the top (other editors). Undefined when it carries none.
 */
export function codeLensSettingOf(settings: unknown): CodeLensFilter | undefined {
  const s = settings as { agentkeep?: { codeLens?: unknown }; codeLens?: unknown } | undefined;
  const v =
    s?.agentkeep && typeof s.agentkeep === 'object' && 'codeLens' in s.agentkeep ? s.agentkeep.codeLens : s?.codeLens;
  return v === undefined ? undefined : parseCodeLensFilter(v);
}
