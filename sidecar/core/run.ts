/**
 * A command wrapped in a pre/post pair of restore points (issue 15 item 1: `agentkeep run`, and
 * later the editor's Snapshot & run): a pre restore point (kind `pre`, reason.command = the command
 * line), the command, a post restore point (kind `post`, `pairOf` = the pre's id), and what changed
 * between the two: the machine's files (restorePoint.compare, where the backend can compare two
 * snapshots) and the memory entries (memory.diff from the pre to the post).
 *
 * The core does not run the command: the caller does (the CLI with the user's terminal, the editor
 * in a terminal of its own) and reports how it ended. `beginRun` and `endRun` are the two halves for
 * callers that take the restore points in separate steps or processes; `runWrapped` is both around
 * one callback. A pre without its post (the command or its wrapper died) stays in the journal as
 * it is, so `list` can show it as such.
 */
import type { ChangeSummary, Notice, ResultOf, RestorePoint } from '../protocol';
import type { CoreContext } from './context';
import { createRestorePoint } from './create';
import { asAgentKeepError } from './errors';
import { compareRestorePoints } from './inspect';
import { diffMemory } from './memory';
import { describeTarget } from './target';

/** What to run and where. */
export interface RunSpec {
  /** The target (already resolved from a named agent). */
  target: string;
  /** Stores to capture; undefined = the Hermes homes found in the target (as restorePoint.create). */
  stores?: string[];
  /** The command and its arguments, as run (argv, not a shell string). */
  command: readonly string[];
  /** Label of the pre restore point (default `Before: <command line>`). */
  label?: string;
  /** The named agent it runs for, if any (said in the reason). */
  agent?: string;
  /** Who wraps the command, for the reason text (default `agentkeep run`). */
  origin?: string;
}

/** How the command ended. */
export interface RunExit {
  /** Exit status as a shell reports it: the exit code, or 128 + the signal number when killed. */
  code: number;
  /** The signal that ended it, if one did. */
  signal?: string;
}

/** What changed between the pre and the post. */
export interface RunSummary {
  /** Files added, removed and changed (machine) and agent-state files; absent when the backend cannot compare. */
  changes?: ChangeSummary;
  /** Why there is no file list (the backend's snapshots are whole-disk or whole-VM), or what failed. */
  changesNote?: string;
  /** Memory entries added, removed and changed from the pre to the post (absent when no store was captured). */
  memory?: ResultOf<'memoryDiff'>;
  /** Why there is no memory summary, when it failed. */
  memoryNote?: string;
}

/** The post half of a run. */
export interface RunEnd extends RunSummary {
  /** The post restore point; absent when it could not be taken (see postError). */
  post?: RestorePoint;
  /** Why the post restore point was not taken (the pre stays, without its post). */
  postError?: string;
  /** What the post's create warned about (size cap, config), with next actions. */
  notices: Notice[];
}

/** Everything a wrapped run produced. */
export interface RunResult extends RunEnd {
  pre: RestorePoint;
  exit: RunExit;
}

/** The longest command line kept in a label (the reason keeps it whole). */
const LABEL_MAX = 100;

/** A POSIX shell rendering of argv (single quotes where needed), e.g. `sh -c 'echo x > f'`. */
export function commandLine(argv: readonly string[]): string {
  return argv.map((a) => (/^[A-Za-z0-9_./:=@%+,-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

function clip(s: string, max = LABEL_MAX): string {
  const one = s.replace(/\s+/g, ' ');
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

/** How an exit reads in a label: "exit 3", "killed by SIGTERM". */
export function exitText(e: RunExit): string {
  return e.signal ? `killed by ${e.signal}` : `exit ${e.code}`;
}

/**
 * Take the pre restore point of a run (kind `pre`, reason.command = the command line).
 * @throws what restorePoint.create throws (BadTarget, TargetNotFound, TargetBusy, BadStore, ...):
 *   the caller must then not run the command as if it were protected
 */
export async function beginRun(ctx: CoreContext, spec: RunSpec): Promise<ResultOf<'restorePointCreate'>> {
  const line = commandLine(spec.command);
  const origin = spec.origin ?? 'agentkeep run';
  return createRestorePoint(ctx, {
    target: spec.target,
    ...(spec.stores ? { stores: spec.stores } : {}),
    kind: 'pre',
    label: spec.label ?? `Before: ${clip(line)}`,
    reason: {
      command: line,
      text: `${origin}${spec.agent ? ` for agent ${spec.agent}` : ''}: ${clip(line)}`,
      origin: 'run',
      ...(spec.agent ? { agent: spec.agent } : {}),
    },
  });
}

/**
 * What changed from `pre` to `post` of one target: files (where the backend compares snapshots)
 * and memory entries (of the stores both captured). Never throws: what cannot be told is said in
 * the notes.
 */
export async function pairSummary(
  ctx: CoreContext,
  target: string,
  pre: RestorePoint,
  post: RestorePoint,
): Promise<RunSummary> {
  const out: RunSummary = {};
  let canCompare = false;
  try {
    canCompare = describeTarget(target).capabilities.compare;
  } catch (e) {
    out.changesNote = asAgentKeepError(e).message;
  }
  if (canCompare) {
    try {
      out.changes = await compareRestorePoints(ctx, { target, from: pre.id, to: post.id });
    } catch (e) {
      out.changesNote = `The file changes could not be listed: ${asAgentKeepError(e).oneLine()}`;
    }
  } else if (!out.changesNote) {
    out.changesNote = "This backend's snapshots are whole-disk or whole-VM: no file list (restore the pre to go back).";
  }
  if (pre.agent.length) {
    try {
      out.memory = await diffMemory(ctx, { target, from: pre.id, to: post.id });
    } catch (e) {
      out.memoryNote = `The memory changes could not be listed: ${asAgentKeepError(e).oneLine()}`;
    }
  }
  return out;
}

/**
 * Take the post restore point of a run (kind `post`, pairOf = the pre), with the same stores the pre
 * captured, and summarise what changed. A post that cannot be taken is reported in `postError`, not
 * thrown: the command already ran, and its pre stays (shown as a pre without its post).
 */
export async function endRun(ctx: CoreContext, spec: RunSpec, pre: RestorePoint, exit: RunExit): Promise<RunEnd> {
  const line = commandLine(spec.command);
  const who = `${spec.origin ?? 'agentkeep run'}${spec.agent ? ` for agent ${spec.agent}` : ''}`;
  let post: ResultOf<'restorePointCreate'>;
  try {
    post = await createRestorePoint(ctx, {
      target: spec.target,
      stores: pre.agent.map((a) => a.store),
      kind: 'post',
      pairOf: pre.id,
      label: `After: ${clip(line, LABEL_MAX - 12)} (${exitText(exit)})`,
      reason: {
        command: line,
        text: `${who} (${exitText(exit)}): ${clip(line)}`,
        origin: 'run',
        ...(spec.agent ? { agent: spec.agent } : {}),
      },
    });
  } catch (e) {
    return { postError: asAgentKeepError(e).oneLine(), notices: [] };
  }
  const notices = post.notices ?? (post.warnings ?? []).map((message) => ({ message }));
  return { post, ...(await pairSummary(ctx, spec.target, pre, post)), notices };
}

/**
 * Run a command between a pre and a post restore point.
 * @param exec runs the command once the pre exists and says how it ended
 * @throws what beginRun throws (then `exec` is not called)
 */
export async function runWrapped(
  ctx: CoreContext,
  spec: RunSpec,
  exec: (pre: RestorePoint) => Promise<RunExit>,
): Promise<RunResult> {
  const pre = await beginRun(ctx, spec);
  const exit = await exec(pre);
  const end = await endRun(ctx, spec, pre, exit);
  return { pre, exit, ...end, notices: [...(pre.notices ?? []), ...end.notices] };
}
