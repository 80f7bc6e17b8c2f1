/**
 * The `agentkeep` command line (commander). Same core as the servers, no RPC.
 *
 *     agentkeep --version
 *     agentkeep restore-point create --target T [--label TEXT] [--kind manual|config-edit|update|hook] [--store S ...]
 *         [--important] [--vmstate] [--reuse] [--json]
 *     agentkeep restore-point list --target T [--json]
 *     agentkeep restore-point restore ID --target T --scope machine|agent|both [--store S ...] [--start] [--yes] [--json]
 *     agentkeep restore-point diff ID --target T [--store S ...] [--json]
 *     agentkeep restore-point delete ID --target T [--yes] [--json]
 *     agentkeep restore-point label ID --target T [--label TEXT] [--important | --not-important] [--json]
 *     agentkeep restore-point prune --target T [--dry-run] [--keep N] [--keep-important N] [--min-age DURATION] [--json]
 *     agentkeep restore-point usage --target T [--json]
 *     agentkeep target describe --target T [--json]
 *     agentkeep memory list --store S [--store S ...] [--json]
 *     agentkeep guest read|write --target proxmox://HOST/NODE/qemu/VMID --file PATH [--out F | --from F | --text T] [--yes]
 *     agentkeep agent status --target T [--store S ...] [--json]
 *     agentkeep agent discover --target proxmox://HOST[:PORT] [--tag agent] [--json]
 *     agentkeep agent add NAME --target T [--store S ...] [--fail-closed] [--replace] [--json]
 *     agentkeep agent list|remove NAME|default NAME [--json]
 *     agentkeep memory show --store S [--store S ...] --entry ID [--json]
 *     agentkeep memory edit --store S --entry ID --text TEXT [--expected-hash H] [--json]
 *     agentkeep memory remove --store S --entry ID [--expected-hash H] [--json]
 *     agentkeep memory add --store S --text TEXT [--file memory|user] [--json]
 *     agentkeep memory lint --store S [--store S ...] [--target T] [--embeddings-url URL --embeddings-model NAME] [--json]
 *     agentkeep memory diff --from ID [--to ID|now] [--target T] [--store S ...] [--json]
 *     agentkeep run [--agent NAME | --target T --store S ...] [--label L] [--rollback-on-failure] [--scope S] [--json] -- CMD ARGS...
 *     agentkeep hook install apt [--agent NAME | --target T --store S ...] [--apt-conf-dir DIR] [--timeout S] [--json]
 *     agentkeep hook remove apt | hook status [apt] [--apt-conf-dir DIR] [--json]
 *     agentkeep risk scan FILE... [--json]
 *     agentkeep risk eval DIR LABELS.json [--json]
 *     agentkeep serve --stdio | --ws HOST:PORT --token-file FILE [--tls-cert FILE --tls-key FILE] [--allow-origin O ...]
 *     agentkeep hook install|remove|status|settings|run …, agentkeep mcp, agentkeep request list|approve|deny (sidecar/cli/hooks.ts)
 *     global: --state-dir DIR (also AGENTKEEP_STATE_DIR)
 *     every command with --target / --store also takes --agent NAME; with neither --agent nor --target
 *     the default agent is used (sidecar/cli/agents.ts)
 *
 * Output: human tables, or with --json ONE JSON document on stdout. Errors: one line on stderr
 * naming the problem, the next actions as `agentkeep …` command lines (cli/actions.ts) and the fix;
 * with --json also `{"error":{code,message,hint,actions}}` on stdout (actions: NextAction data).
 * Exit codes: 0 ok, 1 failure, 2 usage error (unknown command/option, missing or bad argument).
 */
import { formatFindings } from '../memory/lint/format';
import { embeddingsRequestUrl } from '../memory/lint/embeddings';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { Command, CommanderError, Help, Option } from 'commander';
import { nextAction, type ResultOf, type RiskFinding } from '../protocol';
import { AgentKeepError } from '../core/errors';
import { call } from '../core/dispatch';
import { tempNameFor } from '../core/fsutil';
import type { CoreApi, CoreOptions } from '../core/service';
import { evaluate, fileKind, formatEval, parseJsonc, scanText, type EvalLabel } from '../risk';
import type { CoreFactory } from '../server/session';
import {
  agentStatusText,
  changeSummary,
  findingsTable,
  memoryDiffText,
  memoryShowText,
  memoryTable,
  previewText,
  pruneReport,
  restorePointTable,
  shellQuote,
  usageReport,
} from './format';
import { hookWarningsPath } from '../core/hookWarnings';
import { addHookCommands } from './hooks';
import { guardSignals } from './signals';
import { checkGuestWriteSize } from '../core/guest';
import { resolveStateDir } from '../core/state';
import { defaultTargetFor, targetForms } from '../core/target';
import { targetSummary } from '../protocol/targets';
import { cliTargetArgs, commandLine, describeProblem, type RenderOptions } from './actions';
import { agentCommands, useNamedAgents } from './agents';
import { runCommand } from './run';
import { printCreated } from './createOutput';
import { reportCliError } from './errors';
import { UsageError } from './usage';
import { parseDuration } from '../core/retention';
import { describeStore, storeFactories, storeFormsHelp } from '../memory';
import { VERSION } from './version';
import { editSetText, memoryHistoryText, memoryWriteLine } from './timeline';
import { processIO } from './io';

export { terminalSafe } from './terminal';
export { processIO } from './io';

/** Where the CLI writes; replaceable for tests. */
export interface CliIO {
  out: (s: string) => void;
  err: (s: string) => void;
  /** Whether stdin is an interactive terminal (confirmation prompts). */
  isTTY: boolean;
  /** Ask a yes/no question on the terminal; resolves true for y/yes. */
  confirm: (question: string) => Promise<boolean>;
}

function collect(v: string, prev: string[]): string[] {
  return [...prev, v];
}

/** Option parser for a duration (1h, 30m, 90s, 2d, 0) in ms. @throws UsageError (exit 2) naming the option. */
function duration(opt: string): (v: string) => number {
  return (v: string) => {
    try {
      return parseDuration(v);
    } catch (e) {
      throw new UsageError('InvalidParams', `${opt}: ${(e as Error).message}.`, `Give e.g. ${opt} 1h.`);
    }
  };
}

/** Option parser for a whole number >= 0. @throws UsageError (exit 2) naming the option. */
function wholeNumber(opt: string): (v: string) => number {
  return (v: string) => {
    if (!/^\d+$/.test(v.trim()))
      throw new UsageError('InvalidParams', `${opt} must be a whole number >= 0, got "${v}".`, `Give e.g. ${opt} 20.`);
    return Number(v.trim());
  };
}

interface Ctx {
  io: CliIO;
  makeCore: CoreFactory;
  /** Set once the command is known to run in --json mode (so errors are JSON too). */
  json: boolean;
  /** `serve` keeps the process alive: do not report an exit code. */
  serving: boolean;
  /** The exit code a command chose (`run`: its command's); default 0. */
  exitCode?: number;
  /** The --state-dir given (else AGENTKEEP_STATE_DIR), once a command ran: printed commands name it. */
  stateDir?: string;
}

/** Options of `restore-point create`. */
interface CreateOpts {
  target: string;
  label?: string;
  kind: 'manual' | 'config-edit' | 'update' | 'hook';
  store: string[];
  important?: boolean;
  vmstate?: boolean;
  reuse?: boolean;
}

/**
 * The core options of a command: its --state-dir as given (AGENTKEEP_STATE_DIR is read by the core's
 * resolveStateDir, so an error names where the value came from).
 * @throws UsageError (exit 2) for an empty --state-dir
 */
function coreOpts(cmd: Command): CoreOptions {
  const g = cmd.optsWithGlobals<{ stateDir?: string }>();
  if (g.stateDir === '')
    throw new UsageError(
      'InvalidParams',
      'Invalid --state-dir: it is empty.',
      'Give an absolute path, e.g. --state-dir /home/me/.local/state/agentkeep, or leave the option out for the default.',
    );
  return { stateDir: g.stateDir };
}

/**
 * How this run prints next actions: with the state dir in use (`--state-dir` only when it is not
 * the default). A relative state dir (refused by the core) is named as given.
 */
function renderOpts(ctx: Ctx): RenderOptions {
  try {
    return { stateDir: resolveStateDir(ctx.stateDir) };
  } catch {
    return { stateDir: ctx.stateDir ?? resolveStateDir() };
  }
}

/** What a VM rollback does, shown before and after it. */
/** Help of a --target option: what it is and the forms of the registered backends ("dir:/abs/path, btrfs:/abs/path, ..."). */
function targetHelp(what = 'the target'): string {
  return `${what}: ${targetForms().join(', ')}`;
}

/** Said before and after every restore: snapshots roll back the machine, not the world. */
const OUTSIDE_NOTE =
  'A restore does not undo what the agent did outside the machine (messages sent, remote pushes, API calls, payments).';
const VM_RESTORE_NOTE =
  'A running VM is hard-stopped by the rollback (unsaved work in it is lost); without RAM state it stays stopped unless --start.\nA snapshot does not undo what the agent did outside the machine (messages sent, remote pushes, API calls).';

/**
 * What a restore with scope machine on a VM did with the agent state it kept through the rollback
 * (restorePoint.restore `writeBack`): written back, or pending with the command that writes it back.
 */
function writeBackLines(wb: ResultOf<'restorePointRestore'>['writeBack'], opts: RenderOptions): string[] {
  if (!wb) return [];
  const secs = Math.round(wb.waitedMs / 1000);
  if (wb.status === 'done')
    return [
      `Kept the agent's current memory: written back into ${wb.stores.join(', ')} after the rollback (${secs} s).`,
    ];
  const p = wb.pending!;
  const apply = p.actions?.[0] ? commandLine(p.actions[0], opts) : `restore ${p.undo} with scope agent`;
  return [
    `Not written back yet: the agent's memory from before the rollback is kept in ${p.undo} (${p.message}).`,
    `Write it back once the guest is reachable: ${apply}`,
  ];
}

function printJson(ctx: Ctx, v: unknown): void {
  ctx.io.out(JSON.stringify(v, null, 2));
}

/**
 * Read a regular file as UTF-8 for `risk scan` / `risk eval`. It is stat'ed first, so a FIFO or a
 * device fails at once instead of blocking.
 * @param what how the message names the file ("file", "labels", "corpus file")
 * @param hint the fix the message names
 * @throws AgentKeepError FileError: no such file, a directory, not a regular file, or unreadable
 */
async function readTextFile(f: string, what: string, hint: string): Promise<string> {
  let why: string;
  try {
    const st = await fs.stat(f);
    if (st.isDirectory()) why = 'it is a directory';
    else if (!st.isFile()) why = 'it is not a regular file (a FIFO, socket or device)';
    else return await fs.readFile(f, 'utf8');
  } catch (e) {
    why = (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message;
  }
  throw new AgentKeepError('FileError', `Cannot read ${what} ${f}: ${why}.`, hint);
}

function program(ctx: Ctx): Command {
  const core = (cmd: Command): CoreApi => ctx.makeCore(coreOpts(cmd));
  const json = (cmd: Command): boolean => {
    ctx.json = Boolean(cmd.opts<{ json?: boolean }>().json);
    return ctx.json;
  };

  const root = new Command('agentkeep')
    .description('Restore points for persistent AI agents: machine state + agent memory.')
    .version(VERSION, '--version', 'print the version')
    .option(
      '--state-dir <dir>',
      'where the journal and snapshots live (default: $AGENTKEEP_STATE_DIR, else $XDG_STATE_HOME/agentkeep)',
    )
    .showSuggestionAfterError(true)
    .allowExcessArguments(false)
    // Repeatable options start from []: do not print "(default: [])" after their own default text.
    .configureHelp({
      optionDescription: (o) => {
        const d = new Help().optionDescription(o);
        return Array.isArray(o.defaultValue) && o.defaultValue.length === 0 ? d.replace(/ \(default: \[\]\)$/, '') : d;
      },
    });

  // the state dir of the command about to run, for the commands printed in its output and errors
  root.hook('preAction', (_root, action) => {
    ctx.stateDir = coreOpts(action).stateDir ?? (process.env.AGENTKEEP_STATE_DIR || undefined);
  });

  const rp = root.command('restore-point').description('create, list, restore and delete restore points');

  rp.command('create')
    .description('take a restore point of a target (and capture the agent state of each --store)')
    .requiredOption('--target <target>', targetHelp())
    .option('--label <text>', 'a label for the restore point')
    .option(
      '--store <store>',
      'memory store whose agent state is captured, e.g. hermes:/home/me/.hermes (repeatable; default: the ' +
        `stores found in the target: ${storeFactories()
          .filter((f) => f.detect)
          .map((f) => f.kindName)
          .join(', ')})`,
      collect,
      [],
    )
    .addOption(
      new Option(
        '--kind <kind>',
        'why it is taken: manual, config-edit (before editing a config file), update (before updating the agent), hook (from a script or git hook); retention treats them alike',
      )
        .choices(['manual', 'config-edit', 'update', 'hook'])
        .default('manual'),
    )
    .option('--important', 'mark it important (retention keeps the newest 10 important restore points)')
    .option('--vmstate', 'VM targets: include the RAM state (a rollback resumes the VM where it was)')
    .option(
      '--reuse',
      'return the newest restore point instead when it is younger than 60 s and nothing changed since ' +
        '(targets that can diff; --json says "reused": true)',
    )
    .option('--json', 'print the restore point as JSON')
    .action(async (o: CreateOpts, cmd: Command) => {
      const asJson = json(cmd);
      const guard = guardSignals('create', ctx.io, cliTargetArgs(o.target, renderOpts(ctx).stateDir));
      let rpnt;
      try {
        // a target that does not parse fails in the create below, with the backend's own message
        const described = o.vmstate
          ? await call(core(cmd), 'targetDescribe', { target: o.target }).catch(() => undefined)
          : undefined;
        const caps = described?.capabilities;
        if (caps && !caps.ramState) {
          ctx.io.err(
            `agentkeep: note: --vmstate applies to VM targets whose snapshots can hold RAM state (see: agentkeep target describe); ${o.target} has no RAM state to save, so it is ignored.`,
          );
        }
        rpnt = await call(ctx.makeCore({ ...coreOpts(cmd), signal: guard.signal }), 'restorePointCreate', {
          target: o.target,
          label: o.label,
          stores: o.store.length ? o.store : undefined,
          kind: o.kind,
          ...(o.important ? { important: true } : {}),
          ...(o.vmstate ? { vmstate: true } : {}),
          ...(o.reuse ? { reuse: true } : {}),
        });
      } finally {
        guard.dispose();
      }
      await printCreated(
        ctx.io,
        rpnt,
        o.label,
        asJson,
        () => renderOpts(ctx),
        async () =>
          (await call(core(cmd), 'targetDescribe', { target: rpnt.target }).catch(() => undefined))?.snapshotNoun,
      );
    });

  rp.command('diff')
    .description('what differs between a restore point and now, i.e. what a restore would undo (files and agent state)')
    .argument('<id>', 'restore point id')
    .requiredOption('--target <target>', targetHelp())
    .option(
      '--store <store>',
      'memory store to compare (repeatable; default: the stores the restore point captured)',
      collect,
      [],
    )
    .option('--json', 'print {added, removed, changed, agentChanged} as JSON')
    .action(async (id: string, o: { target: string; store: string[] }, cmd: Command) => {
      const asJson = json(cmd);
      const d = await call(core(cmd), 'restorePointDiff', {
        target: o.target,
        id,
        ...(o.store.length ? { stores: o.store } : {}),
      });
      if (asJson) printJson(ctx, d);
      else ctx.io.out(`Since restore point ${id} on ${o.target}:\n${changeSummary(d, true, 'both')}`);
    });

  rp.command('list')
    .description('list the restore points of a target, newest first')
    .requiredOption('--target <target>', targetHelp())
    .option('--json', 'print a JSON array')
    .action(async (o: { target: string }, cmd: Command) => {
      const asJson = json(cmd);
      const c = core(cmd);
      const points = await call(c, 'restorePointList', { target: o.target });
      // A restore whose process died while writing (kill -9, power loss): say so on stderr, even with --json.
      const st = await call(c, 'agentStatus', { target: o.target }).catch(() => undefined);
      const broken = st?.interruptedRestore;
      if (broken) {
        // the core's next actions: finish (restore broken.id again), go back (restore broken.undo)
        const cmdOf = (id: string): string | undefined => {
          const a = broken.actions?.find((x) => x.params?.id === id);
          return a && commandLine(a, renderOpts(ctx));
        };
        const [finish, back] = [cmdOf(broken.id), broken.undo && cmdOf(broken.undo)];
        ctx.io.err(
          `agentkeep: warning: a restore of ${broken.id} (scope ${broken.scope}) started ${broken.startedAt} never finished: ${o.target} may be half-restored. ` +
            `Finish it: ${finish ?? `restore ${broken.id} again`}` +
            (broken.undo ? `, or go back: ${back ?? `restore ${broken.undo}`}` : ' (it had no undo point)'),
        );
      }
      // damaged journal entries are not listed (they cannot be shown or restored) but never vanish silently
      for (const d of st?.damagedRestorePoints ?? [])
        ctx.io.err(
          `agentkeep: warning: ${describeProblem({ message: `${d.message}`, actions: d.actions }, renderOpts(ctx))}`,
        );
      const hw = st?.hookWarnings ?? [];
      for (const w of hw.slice(0, 3))
        ctx.io.err(
          `agentkeep: warning: ${w.time.slice(0, 19).replace('T', ' ')} UTC, agent hook${w.agent ? ` of ${w.agent}` : ''}: ${w.message} (${w.blocked ? 'the call was blocked' : 'the call went ahead'}).`,
        );
      if (hw.length > 3)
        ctx.io.err(
          `agentkeep: warning: ${hw.length - 3} more hook warning(s) in the last 7 days: they are in ${hookWarningsPath(resolveStateDir(coreOpts(cmd).stateDir))}.`,
        );
      const wbp = st?.pendingWriteBack;
      if (wbp) {
        const apply = wbp.actions?.[0] && commandLine(wbp.actions[0], renderOpts(ctx));
        ctx.io.err(
          `agentkeep: warning: the agent state captured before the rollback to ${wbp.id} (in ${wbp.undo}) was not written back into ${wbp.stores.join(', ')}: ${wbp.message}. ` +
            `Write it back: ${apply ?? `restore ${wbp.undo} with scope agent`}`,
        );
      }
      if (st?.pendingRequests)
        ctx.io.err(
          `agentkeep: note: ${st.pendingRequests} restore request(s) of the agent wait for approval: agentkeep request list`,
        );
      if (asJson) printJson(ctx, points);
      else ctx.io.out(restorePointTable(points, o.target));
    });

  rp.command('restore')
    .description('make the target identical to a restore point again (the current state is captured first)')
    .argument('<id>', 'restore point id (see: restore-point list)')
    .requiredOption('--target <target>', targetHelp())
    .addOption(new Option('--scope <scope>', 'what to put back').choices(['machine', 'agent', 'both']))
    .option(
      '--store <store>',
      'memory store (repeatable); default: the stores captured in the restore point',
      collect,
      [],
    )
    .option(
      '--start',
      'VM targets: start the guest after rolling back to a snapshot without RAM state (Proxmox: needs VM.PowerMgmt)',
    )
    .option(
      '--no-undo-point',
      'do not capture the current state first (no undo): for a state dir too full to hold it; needs --yes or a confirmation',
    )
    .option(
      '--write-back-timeout <seconds>',
      "scope machine on a VM: how long to wait after the rollback for the guest's memory stores to be reachable " +
        'again to write the current agent state back (default 120; 0: keep it for a re-apply)',
    )
    .option('--yes', 'do not ask for confirmation')
    .option('--json', 'print the result as JSON')
    .action(
      async (
        id: string,
        o: {
          target: string;
          scope: 'machine' | 'agent' | 'both';
          store: string[];
          start?: boolean;
          undoPoint?: boolean;
          writeBackTimeout?: string;
          yes?: boolean;
        },
        cmd: Command,
      ) => {
        if (!o.scope) {
          throw new UsageError(
            'InvalidParams',
            'restore needs --scope.',
            'Choose --scope both (files and agent memory), machine (files, keeping the current memory) or agent (memory only).',
          );
        }
        const asJson = json(cmd);
        const c = core(cmd);
        const stores = o.store.length ? o.store : undefined;
        const wbSeconds = o.writeBackTimeout === undefined ? undefined : Number(o.writeBackTimeout);
        if (wbSeconds !== undefined && !(Number.isFinite(wbSeconds) && wbSeconds >= 0 && wbSeconds <= 3600)) {
          throw new UsageError(
            'InvalidParams',
            `--write-back-timeout ${o.writeBackTimeout} is not a number of seconds from 0 to 3600.`,
            'Give the seconds to wait, e.g. --write-back-timeout 300.',
          );
        }
        // a target that does not parse fails in the restore below, with the backend's own message
        const caps = (await call(c, 'targetDescribe', { target: o.target }).catch(() => undefined))?.capabilities;
        // a rollback that hard-stops the guest (Proxmox): say what it does to the guest
        const pve = !!caps?.rollbackStopsGuest && o.scope !== 'agent';
        const noUndo = o.undoPoint === false;
        if (noUndo && !o.yes) {
          // Never implied: a restore without an undo point loses the current state for good.
          const action = nextAction(
            'Restore without an undo point',
            'restorePointRestore',
            { target: o.target, id, scope: o.scope, ...(stores ? { stores } : {}), noUndoPoint: true, confirmed: true },
            { destructive: true },
          );
          if (!ctx.io.isTTY) {
            throw new AgentKeepError(
              'ConfirmationRequired',
              `Restoring ${id} without an undo point replaces the current state of ${o.target} for good and needs confirmation.`,
              'Pass --yes with --no-undo-point, or free space and restore with an undo point.',
              [action],
            );
          }
          ctx.io.err(
            `Restoring ${id} (scope ${o.scope}) on ${o.target} WITHOUT an undo point: the current state is not captured first, so this restore cannot be undone.`,
          );
          if (!(await ctx.io.confirm('Restore without an undo point?'))) {
            throw new AgentKeepError(
              'ConfirmationRequired',
              'Restore cancelled; nothing was changed.',
              'Answer y to restore, or free space and restore with an undo point.',
            );
          }
        } else if (!o.yes) {
          if (!ctx.io.isTTY) {
            throw new AgentKeepError(
              'ConfirmationRequired',
              `Restoring ${id} replaces the current state of ${o.target} and needs confirmation.`,
              'Pass --yes (the current state is captured first, so the restore can be undone).',
            );
          }
          // what the restore does, as the core computes it for every front end (restorePoint.preview)
          const preview = await call(c, 'restorePointPreview', { target: o.target, id, scope: o.scope, stores });
          const undoable = 'The current state is captured first, so this can be undone.';
          ctx.io.err(`${previewText(preview, o.target)}\n${OUTSIDE_NOTE}\n${undoable}`);
          if (!(await ctx.io.confirm('Restore?'))) {
            throw new AgentKeepError(
              'ConfirmationRequired',
              'Restore cancelled; nothing was changed.',
              'Answer y to restore, or pass --yes.',
            );
          }
        }
        const guard = guardSignals('restore', ctx.io, cliTargetArgs(o.target, renderOpts(ctx).stateDir));
        let r;
        try {
          const rc = ctx.makeCore({
            ...coreOpts(cmd),
            signal: guard.signal,
            onRestoreWriting: (u) => guard.writing(u?.id),
            // the write-back into a VM's stores after the rollback can wait: say what it waits for
            onProgress: (pr) => {
              if (pr.stage.startsWith('write-back') && !asJson) ctx.io.err(`agentkeep: ${pr.message}`);
            },
          });
          if (o.start && caps && !caps.startAfterRollback) {
            ctx.io.err(
              `agentkeep: note: --start applies to VM targets that can start after a rollback (see: agentkeep target describe); ignored for ${o.target}.`,
            );
          }
          const noUndoParams = noUndo ? { noUndoPoint: true, confirmed: true } : {};
          r = await call(rc, 'restorePointRestore', {
            target: o.target,
            id,
            scope: o.scope,
            stores,
            ...(o.start ? { start: true } : {}),
            ...(wbSeconds !== undefined ? { writeBackTimeoutMs: Math.round(wbSeconds * 1000) } : {}),
            ...noUndoParams,
            progressToken: 'restore',
          });
        } finally {
          guard.dispose();
        }
        // the write-back's own warning is said by writeBackLines, with its command
        const pendingMsg = r.writeBack?.pending?.message;
        const notes = (r.warnings ?? []).filter((w) => !pendingMsg || !w.includes(pendingMsg));
        const undoAction =
          r.undo && nextAction('Undo', 'restorePointRestore', { target: o.target, id: r.undo.id, scope: o.scope });
        const undo = undoAction
          ? commandLine(undoAction, { ...renderOpts(ctx), yes: false })
          : 'none (restored without an undo point)';
        if (asJson) {
          const { id: rid, label, createdAt, status, kind, target } = r.restored;
          printJson(ctx, {
            id: rid,
            label,
            createdAt,
            status,
            kind,
            target,
            scope: o.scope,
            restored: r.restored,
            undo: r.undo,
            changes: r.changes,
            ...(r.machineState ? { machineState: r.machineState } : {}),
            ...(r.warnings ? { warnings: r.warnings } : {}),
            ...(r.writeBack ? { writeBack: r.writeBack } : {}),
          });
        } else if (pve) {
          ctx.io.out(
            [
              `Rolled back ${o.target} to ${r.restored.id} "${r.restored.label}". The guest is ${r.machineState ?? 'in an unknown state'}.`,
              ...notes.map((w) => `Warning: ${w}`),
              VM_RESTORE_NOTE.split('\n')[1],
              ...writeBackLines(r.writeBack, renderOpts(ctx)),
              `Undo: ${undo}`,
            ].join('\n'),
          );
        } else {
          // VM backends: no file list; the whole VM went back, and it is running or paused now.
          const what = r.machineState
            ? `  The VM's disks and RAM are back at the restore point; the VM is ${r.machineState}.`
            : changeSummary(r.changes, false, o.scope);
          const wb = writeBackLines(r.writeBack, renderOpts(ctx));
          ctx.io.out(
            `Restored ${r.restored.id} "${r.restored.label}" (scope ${o.scope}).\n${what}\n${OUTSIDE_NOTE}\n` +
              wb.map((l) => `${l}\n`).join('') +
              `Undo: ${undo}`,
          );
          for (const w of notes) ctx.io.out(`Note: ${w}`);
        }
      },
    );

  rp.command('delete')
    .description('delete a restore point (contents still used by others are kept)')
    .argument('<id>', 'restore point id')
    .requiredOption('--target <target>', targetHelp())
    .option('--yes', 'do not ask for confirmation')
    .option('--json', 'print the result as JSON')
    .action(async (id: string, o: { target: string; yes?: boolean }, cmd: Command) => {
      const asJson = json(cmd);
      if (!o.yes) {
        if (!ctx.io.isTTY) {
          throw new AgentKeepError(
            'ConfirmationRequired',
            `Deleting restore point ${id} cannot be undone and needs confirmation.`,
            'Pass --yes.',
          );
        }
        if (!(await ctx.io.confirm(`Delete restore point ${id} of ${o.target}? This cannot be undone.`))) {
          throw new AgentKeepError(
            'ConfirmationRequired',
            'Delete cancelled; nothing was changed.',
            'Answer y to delete, or pass --yes.',
          );
        }
      }
      const r = await call(core(cmd), 'restorePointDelete', { target: o.target, id });
      if (asJson) printJson(ctx, r);
      else ctx.io.out(`Deleted restore point ${r.deleted}; freed ${r.freedBytes} bytes.`);
    });

  rp.command('label')
    .description('rename a restore point and/or mark it important (Proxmox: the snapshot description too)')
    .argument('<id>', 'restore point id')
    .requiredOption('--target <target>', targetHelp())
    .option('--label <text>', 'the new label')
    .option('--important', 'mark it important (retention keeps the newest 10 important ones longer)')
    .option('--not-important', 'clear the important mark')
    .option('--json', 'print the restore point as JSON')
    .action(
      async (
        id: string,
        o: { target: string; label?: string; important?: boolean; notImportant?: boolean },
        cmd: Command,
      ) => {
        const asJson = json(cmd);
        if (o.important && o.notImportant)
          throw new UsageError(
            'InvalidParams',
            '--important and --not-important contradict each other.',
            'Pass one of them.',
          );
        const important = o.important ? true : o.notImportant ? false : undefined;
        const r = await call(core(cmd), 'restorePointLabel', {
          target: o.target,
          id,
          ...(o.label !== undefined ? { label: o.label } : {}),
          ...(important !== undefined ? { important } : {}),
        });
        if (asJson) printJson(ctx, r);
        else ctx.io.out(`Restore point ${r.id}: "${r.label}"${r.important ? ' (important)' : ''}.`);
      },
    );

  rp.command('prune')
    .description(
      'apply retention: keep the newest N and the newest N important restore points, delete the rest (never one younger than an hour, the newest, or half of a pre/post pair)',
    )
    .requiredOption('--target <target>', targetHelp())
    .option('--dry-run', 'only show what would be deleted')
    .option('--keep <n>', 'newest restore points to keep (default 20)', wholeNumber('--keep'))
    .option(
      '--keep-important <n>',
      'newest important restore points to keep (default 10)',
      wholeNumber('--keep-important'),
    )
    .option(
      '--min-age <duration>',
      'never delete one younger than this, e.g. 1h, 30m, 2d, 0 (default 1h)',
      duration('--min-age'),
    )
    .option('--json', 'print {deleted, kept, freedBytes, estimatedFreeBytes} as JSON')
    .action(
      async (
        o: { target: string; dryRun?: boolean; keep?: number; keepImportant?: number; minAge?: number },
        cmd: Command,
      ) => {
        const asJson = json(cmd);
        const r = await call(core(cmd), 'restorePointPrune', {
          target: o.target,
          dryRun: Boolean(o.dryRun),
          keep: o.keep,
          keepImportant: o.keepImportant,
          minAgeMs: o.minAge,
        });
        if (asJson) printJson(ctx, o.dryRun ? { dryRun: true, ...r } : r);
        else ctx.io.out(pruneReport(r, Boolean(o.dryRun)));
      },
    );

  rp.command('usage')
    .description(
      'disk use of the restore points of a target (each stored object or extent counted once) against the size cap',
    )
    .requiredOption('--target <target>', targetHelp())
    .option('--json', 'print {target, bytes, capBytes, level, points: [{id, bytes, newBytes}]} as JSON')
    .action(async (o: { target: string }, cmd: Command) => {
      const asJson = json(cmd);
      const r = await call(core(cmd), 'restorePointUsage', { target: o.target });
      if (asJson) printJson(ctx, r);
      else ctx.io.out(usageReport(r));
    });

  root
    .command('target')
    .description('what a target is and can do, as its backend describes it')
    .command('describe')
    .description(
      'the backend, name, kind, local root and capabilities of a target (no I/O: works for an unreachable target)',
    )
    .requiredOption('--target <target>', targetHelp())
    .option('--json', 'print the target.describe result as JSON')
    .action(async (o: { target: string }, cmd: Command) => {
      const d = await call(core(cmd), 'targetDescribe', { target: o.target });
      if (json(cmd)) printJson(ctx, d);
      else ctx.io.out(`Target ${d.target}: ${targetSummary(d)}`);
    });

  const mem = root.command('memory').description('inspect, trace, edit and compare agent memory stores');
  mem
    .command('list')
    .description('list the entries of memory stores with their usage (exit 1 when a file is broken)')
    .requiredOption('--store <store>', `memory store (repeatable): ${storeFormsHelp()}`, collect, [])
    .option('--json', 'print {stores: [...]} as JSON')
    .action(async (o: { store: string[] }, cmd: Command) => {
      const asJson = json(cmd);
      if (o.store.length === 0)
        throw new UsageError(
          'InvalidParams',
          'memory list needs a store.',
          'Add --store hermes:/abs/path/to/.hermes (repeatable).',
        );
      const r = await call(core(cmd), 'memoryList', { stores: o.store });
      if (asJson) printJson(ctx, r);
      else ctx.io.out(memoryTable(r.stores, r.descriptions));
      // a broken file is shown as broken, and a script sees it too (exit 1, the listing still printed)
      if (r.stores.some((s) => s.broken)) ctx.exitCode = 1;
    });

  const agent = root
    .command('agent')
    .description(
      'named agents (add, list, remove, default), the status of an agent, and the agents on a hypervisor (discover)',
    );
  agentCommands(agent, { io: ctx.io, core, json, print: (v) => printJson(ctx, v) });
  agent
    .command('status')
    .description(
      'whether the target is reachable, its restore points, and per store whether it is ok, missing or broken ' +
        '(which file, what, the fix)',
    )
    .requiredOption('--target <target>', targetHelp())
    .option('--store <store>', `memory store (repeatable): ${storeFormsHelp()}`, collect, [])
    .option('--json', 'print the agent.status result as JSON')
    .action(async (o: { target: string; store: string[] }, cmd: Command) => {
      const asJson = json(cmd);
      const stores = o.store.length ? { stores: o.store } : {};
      const r = await call(core(cmd), 'agentStatus', { target: o.target, ...stores });
      if (asJson) printJson(ctx, r);
      else ctx.io.out(agentStatusText(r, (a) => commandLine(a, renderOpts(ctx))));
    });
  agent
    .command('discover')
    .description('list the Proxmox guests with a tag (default "agent") that the token can see, as targets')
    .requiredOption(
      '--target <target>',
      'the Proxmox host, e.g. proxmox://pve.lan (credentials from AGENTKEEP_PVE_TOKEN, AGENTKEEP_PVE_FINGERPRINT)',
    )
    .option('--tag <tag>', 'Proxmox tag to look for ("" = every guest)', 'agent')
    .option('--json', 'print a JSON array')
    .action(async (o: { target: string; tag: string }, cmd: Command) => {
      const found = await call(core(cmd), 'agentDiscover', { target: o.target, tag: o.tag });
      if (json(cmd)) printJson(ctx, found);
      else if (!found.length)
        ctx.io.out(
          `No guests tagged "${o.tag}" are visible on ${o.target}. Add the tag in Proxmox (guest > Summary > Tags), or check the token's VM.Audit privilege.`,
        );
      else
        ctx.io.out(
          found
            .map((a) => `${a.target}  ${a.name ?? ''}  ${a.status}${a.lock ? `  locked (${a.lock})` : ''}`)
            .join('\n'),
        );
    });

  const guest = root
    .command('guest')
    .description("files inside a Proxmox VM, through the QEMU guest agent (e.g. an agent's memory files)");
  guest
    .command('read')
    .description('print a file of the VM (agent/file-read, at most 16 MiB)')
    .requiredOption('--target <target>', 'the VM, e.g. proxmox://pve.lan/pve1/qemu/101')
    .requiredOption('--file <path>', 'absolute path inside the VM, e.g. /root/.hermes/memories/MEMORY.md')
    .option('--out <local>', 'write the content to this local file (temp file + rename) instead of stdout')
    .option('--json', 'print {file, bytes, encoding, content} (encoding utf8, or base64 for binary content)')
    .action(async (o: { target: string; file: string; out?: string }, cmd: Command) => {
      const asJson = json(cmd);
      const data = await core(cmd).guestFileRead(o.target, o.file);
      if (asJson && !o.out) {
        const text = data.toString('utf8');
        const utf8 = !text.includes('\uFFFD') && !text.includes('\0');
        printJson(ctx, {
          file: o.file,
          bytes: data.length,
          encoding: utf8 ? 'utf8' : 'base64',
          content: utf8 ? text : data.toString('base64'),
        });
        return;
      }
      if (!o.out) {
        ctx.io.out(data.toString('utf8').replace(/\n$/, ''));
        return;
      }
      const tmp = tempNameFor(path.resolve(o.out)); // (a short name: any --out name up to 255 bytes fits)
      try {
        await fs.writeFile(tmp, data, { mode: 0o600 });
        await fs.rename(tmp, o.out);
      } catch (e) {
        await fs.rm(tmp, { force: true }).catch(() => undefined);
        throw new AgentKeepError(
          'FileError',
          `Cannot write ${o.out}: ${(e as Error).message}.`,
          'Pick a writable local path for --out.',
        );
      }
      ctx.io.err(`Wrote ${data.length} bytes of ${o.file} to ${o.out}.`);
    });
  guest
    .command('write')
    .description(
      'replace a file of the VM (agent/file-write, at most 61440 bytes); the old content is saved first under <state-dir>/guest-backups/',
    )
    .requiredOption('--target <target>', 'the VM, e.g. proxmox://pve.lan/pve1/qemu/101')
    .requiredOption('--file <path>', 'absolute path inside the VM')
    .option('--from <local>', 'local file with the new content')
    .option('--text <text>', 'the new content')
    .option('--yes', 'do not ask for confirmation')
    .option('--json', 'print {file, bytes, backup?} as JSON')
    .action(async (o: { target: string; file: string; from?: string; text?: string; yes?: boolean }, cmd: Command) => {
      const asJson = json(cmd);
      if ((o.from === undefined) === (o.text === undefined))
        throw new UsageError(
          'InvalidParams',
          'guest write needs exactly one of --from LOCAL_FILE or --text TEXT.',
          'Give the new content with --from or --text.',
        );
      let content = o.text;
      if (content === undefined) {
        const raw = await fs.readFile(o.from!).catch((e: NodeJS.ErrnoException) => {
          throw new AgentKeepError(
            'FileError',
            `Cannot read ${o.from}: ${e.code ?? e.message}.`,
            'Pass an existing local text file with --from.',
          );
        });
        try {
          content = new TextDecoder('utf-8', { fatal: true }).decode(raw);
        } catch {
          throw new AgentKeepError(
            'FileError',
            `${o.from} is not UTF-8 text; guest write sends text, so its bytes would change. Nothing was written.`,
            'Write text files (memory files are UTF-8), or copy binary files another way.',
          );
        }
      }
      const c = core(cmd);
      // too large: say so before asking (the core's write checks again)
      checkGuestWriteSize(await call(c, 'targetDescribe', { target: o.target }), Buffer.byteLength(content, 'utf8'));
      if (!o.yes) {
        if (!ctx.io.isTTY)
          throw new AgentKeepError(
            'ConfirmationRequired',
            `Replacing ${o.file} in the VM needs confirmation.`,
            'Pass --yes (take a restore point first if you may want it back).',
          );
        if (!(await ctx.io.confirm(`Replace ${o.file} in ${o.target}?`)))
          throw new AgentKeepError(
            'ConfirmationRequired',
            'Write cancelled; nothing was changed.',
            'Answer y, or pass --yes.',
          );
      }
      // Nothing is lost: the core saves the current content (when the file exists) locally first.
      const { bytes, backup } = await c.guestFileWrite(o.target, o.file, content);
      if (asJson) printJson(ctx, { file: o.file, bytes, ...(backup ? { backup } : {}) });
      else
        ctx.io.out(
          `Wrote ${bytes} bytes to ${o.file} in ${o.target}.${backup ? ` The old content is in ${backup}.` : ''}`,
        );
    });

  const needStore = (o: { store: string[] }, what: string): void => {
    if (o.store.length === 0)
      throw new UsageError(
        'InvalidParams',
        `memory ${what} needs a store.`,
        'Add --store hermes:/abs/path/to/.hermes.',
      );
  };
  const needEntry = (o: { entry?: string }, what: string): string => {
    if (!o.entry)
      throw new UsageError(
        'InvalidParams',
        `memory ${what} needs --entry ID.`,
        'Give the entry id or a unique prefix of at least 4 characters (see memory list).',
      );
    return o.entry;
  };
  const oneStore = (o: { store: string[] }, what: string): string => {
    needStore(o, what);
    if (o.store.length > 1)
      throw new UsageError(
        'InvalidParams',
        `memory ${what} takes one --store.`,
        'Name the store that holds the entry.',
      );
    return o.store[0];
  };
  const storeOpt = (c: Command): Command =>
    c.option('--store <store>', `memory store (repeatable): ${storeFormsHelp()}`, collect, []);

  storeOpt(mem.command('show').description('show one entry with its provenance (which session and tool call wrote it)'))
    .option('--entry <id>', 'entry id or a unique prefix (>= 4 chars)')
    .option('--json', 'print the memory.show result as JSON')
    .action(async (o: { store: string[]; entry?: string }, cmd: Command) => {
      const asJson = json(cmd);
      needStore(o, 'show');
      const r = await call(core(cmd), 'memoryShow', { stores: o.store, entry: needEntry(o, 'show') });
      if (asJson) printJson(ctx, r);
      else ctx.io.out(memoryShowText(r));
    });

  storeOpt(
    mem
      .command('edit')
      .description(
        "replace the text of one entry (under the agent's lock; refused when the file changed or drifted, or over the char limit)",
      ),
  )
    .option('--entry <id>', 'entry id or a unique prefix (>= 4 chars)')
    .option('--text <text>', 'the new text of the entry')
    .option('--expected-hash <sha256>', 'refuse unless the file still has this content hash (from memory show --json)')
    .option('--json', 'print the memory.edit result as JSON')
    .action(async (o: { store: string[]; entry?: string; text?: string; expectedHash?: string }, cmd: Command) => {
      const asJson = json(cmd);
      const store = oneStore(o, 'edit');
      const entry = needEntry(o, 'edit');
      if (o.text === undefined)
        throw new UsageError('InvalidParams', 'memory edit needs --text.', 'Give the new text: --text "…".');
      if (!o.text.trim())
        throw new UsageError(
          'InvalidParams',
          'memory edit --text is empty: an entry cannot be blank.',
          `Give the new text, or delete the entry: agentkeep memory remove --store ${shellQuote(store)} --entry ${entry}`,
        );
      const r = await call(core(cmd), 'memoryEdit', {
        store,
        entry,
        text: o.text,
        ...(o.expectedHash ? { expectedHash: o.expectedHash } : {}),
      });
      if (asJson) printJson(ctx, r);
      else {
        const undo = commandLine(nextAction('Undo', 'memoryEdit', { ...r.undo, store }), renderOpts(ctx));
        ctx.io.out(`Edited ${r.previous.id} -> ${r.entry.id} in ${r.entry.file ?? store}.\nUndo: ${undo}`);
      }
    });

  storeOpt(mem.command('remove').description('delete one entry (same safety as edit)'))
    .option('--entry <id>', 'entry id or a unique prefix (>= 4 chars)')
    .option('--expected-hash <sha256>', 'refuse unless the file still has this content hash')
    .option('--json', 'print the memory.remove result as JSON')
    .action(async (o: { store: string[]; entry?: string; expectedHash?: string }, cmd: Command) => {
      const asJson = json(cmd);
      const store = oneStore(o, 'remove');
      const r = await call(core(cmd), 'memoryRemove', {
        store,
        entry: needEntry(o, 'remove'),
        ...(o.expectedHash ? { expectedHash: o.expectedHash } : {}),
      });
      if (asJson) printJson(ctx, r);
      else {
        const undo = commandLine(nextAction('Undo', 'memoryAdd', { ...r.undo, store }), renderOpts(ctx));
        ctx.io.out(`Removed ${r.removed.id} from ${r.removed.file ?? store}.\nUndo: ${undo}`);
      }
    });

  storeOpt(mem.command('add').description('add an entry (Hermes: to MEMORY.md, or USER.md with --file user)'))
    .option('--text <text>', 'the entry text')
    .option('--file <file>', 'hermes: memory (MEMORY.md, default) or user (USER.md); mem0: user_id=NAME (its owner)')
    .option('--expected-hash <sha256>', 'refuse unless the file still has this content hash')
    .option('--json', 'print the memory.add result as JSON')
    .action(async (o: { store: string[]; text?: string; file?: string; expectedHash?: string }, cmd: Command) => {
      const asJson = json(cmd);
      const store = oneStore(o, 'add');
      if (o.text === undefined)
        throw new UsageError('InvalidParams', 'memory add needs --text.', 'Give the entry text: --text "…".');
      if (!o.text.trim())
        throw new UsageError(
          'InvalidParams',
          'memory add --text is empty: an entry cannot be blank.',
          'Give the entry text: --text "…".',
        );
      const r = await call(core(cmd), 'memoryAdd', {
        store,
        text: o.text,
        ...(o.file ? { file: o.file } : {}),
        ...(o.expectedHash ? { expectedHash: o.expectedHash } : {}),
      });
      if (asJson) printJson(ctx, r);
      else if (r.alreadyPresent)
        ctx.io.out(`Entry ${r.entry.id} is already present in ${r.entry.file ?? store}; nothing written.`);
      else ctx.io.out(`Added ${r.entry.id} to ${r.entry.file ?? store}.`);
    });

  storeOpt(
    mem
      .command('lint')
      .description(
        'findings: duplicates, contradictions, over budget, drift, untraceable and stale entries ' +
          '(exit 1 when a finding is an error)',
      ),
  )
    .option('--target <target>', 'check claims against this machine, e.g. dir:/home/me')
    .option(
      '--embeddings-url <url>',
      'OpenAI-compatible embeddings API for entries without a store vector, e.g. http://127.0.0.1:11434/v1 ' +
        '(default $AGENTKEEP_EMBEDDINGS_URL; key from $AGENTKEEP_EMBEDDINGS_KEY)',
    )
    .option('--embeddings-model <name>', 'its model, e.g. nomic-embed-text (default $AGENTKEEP_EMBEDDINGS_MODEL)')
    .option('--fix', 'propose one edit set from the findings (merge duplicates, drop superseded), shown as a diff')
    .option('--apply', 'with --fix: write it (asked on a terminal), as one undo step')
    .option('--yes', 'with --fix --apply: do not ask')
    .option('--json', 'print {findings: [...]} as JSON')
    .action(
      async (
        o: {
          store: string[];
          target?: string;
          embeddingsUrl?: string;
          embeddingsModel?: string;
          fix?: boolean;
          apply?: boolean;
          yes?: boolean;
        },
        cmd: Command,
      ) => {
        const asJson = json(cmd);
        needStore(o, 'lint');
        // the flags (else the env of the process that lints: this one, or the sidecar's)
        const url = o.embeddingsUrl ?? process.env.AGENTKEEP_EMBEDDINGS_URL;
        const model = o.embeddingsModel ?? process.env.AGENTKEEP_EMBEDDINGS_MODEL;
        if (o.embeddingsModel && !url)
          throw new UsageError(
            'InvalidParams',
            '--embeddings-model needs --embeddings-url (or AGENTKEEP_EMBEDDINGS_URL).',
            'Give both: --embeddings-url http://127.0.0.1:11434/v1 --embeddings-model nomic-embed-text.',
          );
        if (url && !model)
          throw new UsageError(
            'InvalidParams',
            `The embeddings URL ${url} was given without a model.`,
            'Name the model the server serves: --embeddings-model nomic-embed-text (or AGENTKEEP_EMBEDDINGS_MODEL).',
          );
        if (url) {
          // a URL that is refused (does not parse, plain http to another machine …) is a bad argument: exit 2
          try {
            embeddingsRequestUrl(url);
          } catch (e) {
            if (e instanceof AgentKeepError) throw new UsageError(e.kind, e.message, e.hint);
            throw e;
          }
        }
        const embeddings = url && model ? { embeddings: { url, model } } : {};
        if (o.apply && !o.fix)
          throw new UsageError(
            'InvalidParams',
            'memory lint --apply needs --fix.',
            'Run memory lint --fix to see the change first.',
          );
        if (o.fix) {
          const base = { stores: o.store, ...(o.target ? { target: o.target } : {}), ...embeddings };
          await reviewed(cmd, asJson, 'lint --fix', o, (extra) =>
            call(core(cmd), 'memoryLintFix', { ...base, ...extra }),
          );
          return;
        }
        const r = await call(core(cmd), 'memoryLint', {
          stores: o.store,
          ...(o.target ? { target: o.target } : {}),
          ...embeddings,
        });
        if (asJson) printJson(ctx, r);
        else ctx.io.out(formatFindings(r.findings));
        // like a linter: errors (a broken store, an entry over its budget…) exit 1; warnings and info 0
        if (r.findings.some((f) => f.severity === 'error')) ctx.exitCode = 1;
      },
    );

  storeOpt(
    mem
      .command('diff')
      .description(
        "entries added, removed and changed since a restore point, and the agent's outside-world actions since then",
      ),
  )
    .option('--from <id>', 'restore point id')
    .option('--to <id>', 'restore point id, or now (default)')
    .option('--target <target>', targetHelp('the target the restore point belongs to'))
    .option('--json', 'print the memory.diff result as JSON')
    .action(async (o: { store: string[]; from?: string; to?: string; target?: string }, cmd: Command) => {
      const asJson = json(cmd);
      if (!o.from)
        throw new UsageError(
          'InvalidParams',
          'memory diff needs --from RESTORE_POINT_ID.',
          'Pick one from agentkeep restore-point list --target T.',
        );
      let target = o.target;
      if (!target && o.store.length === 1) {
        // one local store: its directory is the target (the store's description says where, not its string)
        const root = describeStore(o.store[0]).localRoot;
        if (root) target = defaultTargetFor(root);
      }
      if (!target)
        throw new UsageError(
          'InvalidParams',
          'memory diff needs --target (the target the restore point belongs to).',
          'Add --target dir:/abs/path (or give one --store inside that directory).',
        );
      const r = await call(core(cmd), 'memoryDiff', {
        target,
        from: o.from,
        ...(o.to ? { to: o.to } : {}),
        ...(o.store.length ? { stores: o.store } : {}),
      });
      if (asJson) printJson(ctx, r);
      else ctx.io.out(memoryDiffText(r, o.from, o.to ?? 'now'));
    });

  // the memory timeline (docs/memory-timeline.md)
  const targetOf = (o: { target?: string; store: string[] }): string | undefined => {
    if (o.target) return o.target;
    if (o.store.length !== 1) return undefined;
    const root = describeStore(o.store[0]).localRoot;
    return root ? defaultTargetFor(root) : undefined;
  };
  storeOpt(
    mem
      .command('history')
      .description(
        "every write to the stores, oldest first: the agent's memory tool calls (state.db), hook records, AgentKeep's writes and what restore points captured",
      ),
  )
    .option('--entry <id>', 'only the writes of this entry (id or prefix; also one that is gone)')
    .option('--file <file>', 'only the writes to this file (path, or MEMORY.md / USER.md)')
    .option('--target <target>', targetHelp('whose restore points to read (default: the store folder)'))
    .option('--json', 'print {writes, warnings} as JSON')
    .action(async (o: { store: string[]; entry?: string; file?: string; target?: string }, cmd: Command) => {
      const asJson = json(cmd);
      needStore(o, 'history');
      const target = targetOf(o);
      const r = await call(core(cmd), 'memoryHistory', {
        stores: o.store,
        ...(o.entry ? { entry: o.entry } : {}),
        ...(o.file ? { file: o.file } : {}),
        ...(target ? { target } : {}),
      });
      if (asJson) printJson(ctx, r);
      else ctx.io.out(memoryHistoryText(r));
    });

  storeOpt(
    mem
      .command('undo-write')
      .description(
        "undo one write of the history (or a group: forget, lint --fix), compare-and-swap under the store's lock; the undo is itself undoable",
      ),
  )
    .option('--write <id>', 'write id or group from memory history')
    .option('--target <target>', targetHelp('for writes seen by restore points'))
    .option('--json', 'print the memory.undoWrite result as JSON')
    .action(async (o: { store: string[]; write?: string; target?: string }, cmd: Command) => {
      const asJson = json(cmd);
      needStore(o, 'undo-write');
      if (!o.write)
        throw new UsageError('InvalidParams', 'memory undo-write needs --write ID.', 'Pick one from memory history.');
      const target = targetOf(o);
      const r = await call(core(cmd), 'memoryUndoWrite', {
        stores: o.store,
        write: o.write,
        ...(target ? { target } : {}),
      });
      if (asJson) printJson(ctx, r);
      else
        ctx.io.out(
          [
            `Undid ${r.undone.map((w) => w.id).join(', ')}.`,
            ...r.writes.map(memoryWriteLine),
            ...(r.skipped ?? []).map((s) => `skipped: ${s}`),
            `Undo the undo: agentkeep memory undo-write --store ${shellQuote(o.store[0])} --write ${r.writes[0]?.group ?? r.writes[0]?.id}`,
          ].join('\n'),
        );
    });

  storeOpt(
    mem.command('restore-entry').description('bring one entry back from a restore point without restoring the store'),
  )
    .option('--from <id>', 'restore point id')
    .option('--entry <id>', 'entry id (or prefix) in that restore point')
    .option('--target <target>', targetHelp('the target the restore point belongs to'))
    .option('--json', 'print the memory.restoreEntry result as JSON')
    .action(async (o: { store: string[]; from?: string; entry?: string; target?: string }, cmd: Command) => {
      const asJson = json(cmd);
      const store = oneStore(o, 'restore-entry');
      if (!o.from)
        throw new UsageError(
          'InvalidParams',
          'memory restore-entry needs --from RESTORE_POINT_ID.',
          'Pick one from restore-point list.',
        );
      const entry = needEntry(o, 'restore-entry');
      const target = targetOf(o);
      if (!target)
        throw new UsageError('InvalidParams', 'memory restore-entry needs --target.', 'Add --target dir:/abs/path.');
      const r = await call(core(cmd), 'memoryRestoreEntry', { target, from: o.from, store, entry });
      if (asJson) printJson(ctx, r);
      else if (r.alreadyPresent)
        ctx.io.out(`Entry ${r.entry.id} is already in ${r.entry.file ?? store}; nothing written.`);
      else
        ctx.io.out(
          `Brought back ${r.entry.id} from ${o.from} into ${r.entry.file ?? store}.\nUndo: agentkeep memory undo-write --store ${shellQuote(store)} --write ${r.write?.id}`,
        );
    });

  storeOpt(
    mem
      .command('forget')
      .description(
        'forget a fact everywhere: the entry and its copies in every file of every store, shown as a diff; --apply writes it as one undo step',
      ),
  )
    .option('--entry <id>', 'the entry (id or prefix): it and its copies')
    .option('--text <text>', 'every entry that contains this text')
    .option('--apply', 'write the change (else: a proposal; asked on a terminal)')
    .option('--yes', 'with --apply: do not ask')
    .option('--json', 'print the edit set as JSON')
    .action(
      async (o: { store: string[]; entry?: string; text?: string; apply?: boolean; yes?: boolean }, cmd: Command) => {
        const asJson = json(cmd);
        needStore(o, 'forget');
        if (!o.entry && !o.text)
          throw new UsageError(
            'InvalidParams',
            'memory forget needs --entry ID or --text TEXT.',
            'Say what to forget.',
          );
        const base = { stores: o.store, ...(o.entry ? { entry: o.entry } : {}), ...(o.text ? { text: o.text } : {}) };
        await reviewed(cmd, asJson, 'forget', o, (extra) => call(core(cmd), 'memoryForget', { ...base, ...extra }));
      },
    );

  /** Propose; with --apply (after a yes on a terminal, or --yes) apply exactly that proposal (its hashes). */
  const reviewed = async (
    cmd: Command,
    asJson: boolean,
    what: string,
    o: { apply?: boolean; yes?: boolean },
    run: (extra: { apply?: boolean; expected?: Record<string, string> }) => Promise<ResultOf<'memoryForget'>>,
  ): Promise<void> => {
    const proposal = await run({});
    if (!o.apply || !proposal.edits.length) {
      if (asJson) printJson(ctx, proposal);
      else {
        ctx.io.out(editSetText(proposal, what));
        if (proposal.edits.length) ctx.io.out('\nNothing written. Apply it with --apply.');
      }
      return;
    }
    if (!asJson) ctx.io.out(editSetText(proposal, what));
    if (!o.yes) {
      if (!ctx.io.isTTY)
        throw new UsageError(
          'InvalidParams',
          `memory ${what} --apply needs --yes here (no terminal to ask on).`,
          'Review the diff, then add --yes.',
        );
      if (!(await ctx.io.confirm(`Apply these ${proposal.edits.length} changes?`))) {
        ctx.io.out('Nothing written.');
        return;
      }
    }
    const expected = Object.fromEntries(proposal.files.map((f) => [f.file, f.contentHash]));
    const r = await run({ apply: true, expected });
    if (asJson) printJson(ctx, r);
    else
      ctx.io.out(
        `Applied as group ${r.group}. Undo it in one step: agentkeep memory undo-write ${o2s(cmd)} --write ${r.group}`,
      );
  };
  const o2s = (cmd: Command): string =>
    ((cmd.opts() as { store?: string[] }).store ?? []).map((s) => `--store ${shellQuote(s)}`).join(' ');

  const risk = root.command('risk').description('find risky commands in files');
  risk
    .command('scan')
    .description(
      'list package installs and other risky commands in shell scripts, Markdown, Dockerfiles, Makefiles, justfiles, compose files, workflows, notebooks, package.json, devcontainer.json and tasks.json',
    )
    .argument('<files...>', 'files to scan')
    .option('--json', 'print a JSON array of {file, line, endLine, command, class, kind, risk}')
    .action(async (files: string[], _o: unknown, cmd: Command) => {
      const asJson = json(cmd);
      const findings: RiskFinding[] = [];
      for (const f of files) {
        const text = await readTextFile(f, 'file', 'Pass existing text files.');
        findings.push(...scanText(f, text));
        const kind = fileKind(f, text);
        if (
          (kind === 'package-json' || kind === 'notebook' || kind === 'devcontainer' || kind === 'vscode-tasks') &&
          text.trim() &&
          !parseJsonc(text)
        ) {
          ctx.io.err(
            `agentkeep: note: ${f} is not valid JSON, so no commands were read from it. Fix the JSON and scan it again.`,
          );
        }
      }
      if (asJson) printJson(ctx, findings);
      else ctx.io.out(findingsTable(findings));
    });

  risk
    .command('eval')
    .description(
      'measure the scanner on a labelled corpus: precision and recall overall, per class and per file kind, with misses and false positives',
    )
    .argument('<dir>', 'corpus directory (files listed in DIR/FILES.txt, else the files named in the labels)')
    .argument('<labels>', 'labels.json: [{file, line, end_line, command, class}], file relative to DIR')
    .option('--json', 'print the evaluation as JSON')
    .action(async (dir: string, labelsFile: string, _o: unknown, cmd: Command) => {
      const asJson = json(cmd);
      const read = (f: string, what: string): Promise<string> =>
        readTextFile(f, what, 'Pass the corpus directory and its labels.json.');
      let labels: EvalLabel[];
      try {
        labels = JSON.parse(await read(labelsFile, 'labels')) as EvalLabel[];
        if (
          !Array.isArray(labels) ||
          labels.some((l) => typeof l?.file !== 'string' || typeof l?.line !== 'number' || typeof l?.class !== 'string')
        )
          throw new Error('shape');
      } catch (e) {
        if (e instanceof AgentKeepError) throw e;
        throw new AgentKeepError(
          'InvalidParams',
          `${labelsFile} is not a labels file: expected a JSON array of {file, line, class}.`,
          'Pass the corpus labels.json (see test/fixtures/risk-corpus/README.md).',
        );
      }
      let names: string[];
      try {
        names = (await fs.readFile(path.join(dir, 'FILES.txt'), 'utf8'))
          .split(/\r?\n/)
          .map((l) => l.trim())
          .filter((l) => l && !l.startsWith('#'));
      } catch {
        names = [...new Set(labels.map((l) => l.file))];
      }
      const files: Array<{ file: string; text: string }> = [];
      for (const file of names) files.push({ file, text: await read(path.join(dir, file), 'corpus file') });
      const r = evaluate(files, labels);
      if (asJson) printJson(ctx, r);
      else ctx.io.out(formatEval(r));
    });

  root
    .command('serve')
    .description('run the language server: over stdio (for an editor) or WebSocket (for a remote client)')
    .option('--stdio', 'LSP + agentkeep/* over stdin/stdout')
    .option(
      '--ws <host:port>',
      'LSP + agentkeep/* over WebSocket (bind 127.0.0.1 unless a host is given; port 0 = any free port)',
    )
    .option('--token-file <file>', 'file holding the bearer token clients must send (mode 600)')
    .option('--tls-cert <file>', 'PEM certificate: serve wss:// (needed for a non-loopback address)')
    .option('--tls-key <file>', 'PEM private key of --tls-cert')
    .option(
      '--allow-origin <origin...>',
      'browser origins allowed to connect (default none: a request with an Origin header gets 403)',
    )
    // vscode-languageclient appends --clientProcessId=<pid> when it starts a `module` server;
    // vscode-languageserver reads it from argv itself and exits when that process dies.
    .addOption(new Option('--clientProcessId <pid>', 'exit when this process ends (set by LSP clients)').hideHelp())
    .action(
      async (
        o: {
          stdio?: boolean;
          ws?: string;
          tokenFile?: string;
          tlsCert?: string;
          tlsKey?: string;
          allowOrigin?: string[];
        },
        cmd: Command,
      ) => {
        if (Boolean(o.stdio) === Boolean(o.ws)) {
          throw new UsageError(
            'InvalidParams',
            'serve needs exactly one transport.',
            'Use serve --stdio, or serve --ws HOST:PORT --token-file FILE.',
          );
        }
        if (o.ws && !o.tokenFile)
          throw new UsageError(
            'InvalidParams',
            'serve --ws needs --token-file.',
            'Add --token-file FILE (a file with a random secret, mode 600).',
          );
        const wsOnly = (['tokenFile', 'tlsCert', 'tlsKey', 'allowOrigin'] as const).find((k) => o[k] !== undefined);
        if (wsOnly && !o.ws) {
          const flag = `--${wsOnly.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
          throw new UsageError(
            'InvalidParams',
            `${flag} is only for serve --ws.`,
            `Drop ${flag}, or use --ws HOST:PORT.`,
          );
        }
        if (Boolean(o.tlsCert) !== Boolean(o.tlsKey))
          throw new UsageError(
            'InvalidParams',
            o.tlsCert ? '--tls-cert needs --tls-key.' : '--tls-key needs --tls-cert.',
            'Pass both: --tls-cert cert.pem --tls-key key.pem.',
          );
        // a server lives long enough for the dir backend's change journal (AGENTKEEP_DIR_JOURNAL=0: off)
        // the agent's shell hooks hand their restore points to it too (sidecar/hooks/handoffServer.ts),
        // their Cores continuing this server's scans (lastSnapshots)
        const lastSnapshots = new Map<string, string>();
        const base: CoreOptions = { ...coreOpts(cmd), changeJournal: true, lastSnapshots };
        const listenHandoff = (): void => {
          // eslint-disable-next-line @typescript-eslint/no-require-imports
          const { listenHookHandoff } = require('../hooks/handoffServer') as typeof import('../hooks/handoffServer');
          void listenHookHandoff(resolveStateDir(base.stateDir), lastSnapshots, (m) => ctx.io.err(m)).then((h) => {
            if (process.env.AGENTKEEP_DEBUG) ctx.io.err(h ? `hook hand-off on ${h.path}` : 'no hook hand-off');
          });
        };
        // the servers (vscode-languageserver, ws) are loaded for `serve` only, not on every CLI start
        if (o.stdio) {
          // eslint-disable-next-line @typescript-eslint/no-require-imports
          const { serveStdio } = require('../server/stdio') as typeof import('../server/stdio');
          ctx.serving = true;
          serveStdio(ctx.makeCore, base);
          listenHandoff();
          return;
        }
        const { parseHostPort, readTlsFiles, readTokenFile, serveWs } =
          // eslint-disable-next-line @typescript-eslint/no-require-imports
          require('../server/ws') as typeof import('../server/ws');
        const listen = parseHostPort(o.ws!);
        const token = await readTokenFile(o.tokenFile!);
        const tls = o.tlsCert ? await readTlsFiles(o.tlsCert, o.tlsKey!) : undefined;
        await serveWs(ctx.makeCore, base, { listen, token, tls, allowOrigins: o.allowOrigin }, (m) => ctx.io.err(m));
        listenHandoff();
        ctx.serving = true;
      },
    );

  addHookCommands(root, {
    io: ctx.io,
    core,
    coreOpts,
    json,
    printJson: (v) => printJson(ctx, v),
    usage: (m, h) => new UsageError('InvalidParams', m, h),
    serving: () => {
      ctx.serving = true;
    },
    setExitCode: (code) => (ctx.exitCode = code),
    makeCore: ctx.makeCore,
  });

  runCommand(root, {
    io: ctx.io,
    core: (cmd, extra) => ctx.makeCore({ ...coreOpts(cmd), ...extra }),
    coreOpts,
    json,
    setExitCode: (code) => (ctx.exitCode = code),
  });

  // --agent NAME (or the default agent) on every command that takes --target / --store
  useNamedAgents(root, coreOpts);
  return root;
}

function applyExit(cmd: Command, ctx: Ctx): void {
  cmd.exitOverride();
  cmd.configureOutput({
    writeOut: (s) => ctx.io.out(s.replace(/\n$/, '')),
    writeErr: (s) => ctx.io.err(s.replace(/\n$/, '')),
    outputError: (s, write) =>
      write(
        `agentkeep: ${s
          .replace(/^error: /, '')
          .trim()
          .replace(/\s*\n\s*/g, ' ')
          .replace(/\.+$/, '')}. Run agentkeep --help for usage.`,
      ),
  });
  for (const sub of cmd.commands) applyExit(sub, ctx);
}

/**
 * Run the CLI.
 * @param argv arguments after `node script` (process.argv.slice(2))
 * @param makeCore creates the core with the given options
 * @param io where output goes (default: the process's stdio)
 * @returns the exit code (0 ok, 1 failure, 2 usage error), or null when a server keeps running
 */
export async function runCli(argv: string[], makeCore: CoreFactory, io: CliIO = processIO()): Promise<number | null> {
  // `--json` after `--` belongs to the command that `agentkeep run` runs, not to agentkeep
  const own = argv.includes('--') ? argv.slice(0, argv.indexOf('--')) : argv;
  const ctx: Ctx = { io, makeCore, json: own.includes('--json'), serving: false };
  const root = program(ctx);
  applyExit(root, ctx);
  try {
    await root.parseAsync(argv, { from: 'user' });
    return ctx.serving ? null : (ctx.exitCode ?? 0);
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === 'commander.version' || e.code === 'commander.helpDisplayed') return 0;
      if (ctx.json)
        io.out(
          JSON.stringify({
            error: {
              code: 'usage',
              message: e.message.replace(/^error: /, ''),
              hint: 'Run agentkeep --help for usage.',
            },
          }),
        );
      // a bare command group (`agentkeep memory`) prints its help and exits 1 in commander: usage error
      return 2;
    }
    return reportCliError(e, io, ctx.json, () => renderOpts(ctx));
  }
}
