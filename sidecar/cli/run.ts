/**
 * `agentkeep run [--agent NAME | --target T --store S…] [--label L] [--rollback-on-failure]
 * [--scope S] [--json] -- CMD ARGS…` (issue 15 item 1): a pre restore point, CMD with the user's
 * terminal, a post restore point paired with the pre, what changed, then the choice.
 *
 * - CMD inherits stdin, stdout and stderr; everything AgentKeep says goes to stderr, so CMD's stdout
 *   stays its own (with --json one JSON line is printed on stdout after CMD's output).
 * - The exit status is CMD's (128 + the signal number when a signal ended it; 127 when it cannot be
 *   found, 126 when it cannot be run).
 * - SIGINT, SIGTERM and SIGHUP that reach the wrapper while CMD runs are forwarded to CMD and do not
 *   stop the wrapper (it still takes the post). On a terminal, Ctrl+C already reaches CMD from the
 *   terminal (same process group), so SIGINT is not sent a second time there.
 * - No pre restore point, no run: if the pre cannot be taken, CMD is not started.
 * - Afterwards: --rollback-on-failure restores the pre (scope machine unless --scope) when CMD
 *   failed; else on a terminal: keep (the default) / roll back / show the diff; off a terminal the
 *   restore command is printed.
 * The pre/post orchestration is the core's (sidecar/core/run.ts); this module runs the process and
 * renders.
 */
import { spawn } from 'node:child_process';
import * as os from 'node:os';
import { createInterface } from 'node:readline';
import { Option, type Command } from 'commander';
import { AgentKeepError, asAgentKeepError } from '../core/errors';
import { call } from '../core/dispatch';
import type { RunEnd, RunExit, RunSpec } from '../core/run';
import { commandLine, exitText } from '../core/run';
import type { CoreApi, CoreOptions } from '../core/service';
import { resolveStateDir } from '../core/state';
import { cliTargetArgs, describeProblem } from './actions';
import type { ChangeSummary, ResultOf, RestorePoint, Scope } from '../protocol';
import { displayPath, firstLine } from '../protocol/format';
import { memoryDiffText } from './format';
import type { CliIO } from './index';
import { guardSignals } from './signals';
import { UsageError } from './usage';

/** What `run` needs from the CLI's program. */
export interface RunCliDeps {
  io: CliIO;
  /** A core with the command's options plus `extra` (a signal for a create or restore). */
  core: (cmd: Command, extra?: Partial<CoreOptions>) => CoreApi;
  coreOpts: (cmd: Command) => CoreOptions;
  json: (cmd: Command) => boolean;
  /** The exit code the CLI returns (CMD's). */
  setExitCode: (code: number) => void;
}

/** The signals forwarded to CMD. */
export const FORWARDED_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * Run argv with the wrapper's stdio; forward FORWARDED_SIGNALS to it (SIGINT not when `ttyGroup`:
 * the terminal sent it to the child already). Resolves when it ends; never rejects.
 * @param onSpawnError one line saying why it could not be started
 */
export function runChild(
  argv: readonly string[],
  ttyGroup: boolean,
  onSpawnError: (line: string) => void,
  onSignal?: (sig: NodeJS.Signals) => void,
): Promise<RunExit> {
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: 'inherit' });
    const handlers = new Map<NodeJS.Signals, () => void>();
    const done = (e: RunExit): void => {
      for (const [s, h] of handlers) process.off(s, h);
      resolve(e);
    };
    for (const sig of FORWARDED_SIGNALS) {
      const h = (): void => {
        onSignal?.(sig);
        if (sig === 'SIGINT' && ttyGroup) return;
        try {
          child.kill(sig);
        } catch {
          /* already gone */
        }
      };
      handlers.set(sig, h);
      process.on(sig, h);
    }
    child.on('error', (e: NodeJS.ErrnoException) => {
      const notFound = e.code === 'ENOENT';
      onSpawnError(`cannot run ${argv[0]}: ${notFound ? 'command not found' : e.message}`);
      done({ code: notFound ? 127 : 126 });
    });
    child.on('exit', (code, signal) => {
      if (signal) done({ code: 128 + (os.constants.signals[signal] ?? 0), signal });
      else done({ code: code ?? 1 });
    });
  });
}

function pathList(title: string, paths: readonly string[], max: number): string[] {
  if (!paths.length) return [];
  const shown = paths.slice(0, max).map((p) => `    ${displayPath(p)}`);
  if (paths.length > max) shown.push(`    … and ${paths.length - max} more (show the diff to see all)`);
  return [`  ${title} (${paths.length}):`, ...shown];
}

/** What changed between the pre and the post, for stderr. `max` paths per list (Infinity: all). */
export function runChangesText(end: RunEnd, max = 10): string {
  const lines: string[] = [];
  const c: ChangeSummary | undefined = end.changes;
  if (c) {
    lines.push(
      ...pathList('files added', c.added, max),
      ...pathList('files changed', c.changed, max),
      ...pathList('files removed', c.removed, max),
    );
    lines.push(...pathList('agent-state files changed', c.agentChanged, max));
    if (!c.added.length && !c.changed.length && !c.removed.length && !c.agentChanged.length)
      lines.push('  No file changed.');
  } else if (end.changesNote) lines.push(`  ${end.changesNote}`);
  const m = end.memory;
  if (m) {
    const n = m.added.length + m.removed.length + m.changed.length;
    if (n) {
      lines.push(`  memory entries: ${m.added.length} added, ${m.changed.length} changed, ${m.removed.length} removed`);
      const first = (t?: string): string => firstLine(t ?? '', 90);
      for (const x of m.added.slice(0, max)) lines.push(`    + ${first(x.after?.text)}`);
      for (const x of m.changed.slice(0, max)) lines.push(`    ~ ${first(x.after?.text)}`);
      for (const x of m.removed.slice(0, max)) lines.push(`    - ${first(x.before?.text)}`);
    } else lines.push('  No memory entry changed.');
  } else if (end.memoryNote) lines.push(`  ${end.memoryNote}`);
  return lines.join('\n');
}

/** One line of answer from the terminal ('' at end of input). */
function askLine(question: string): Promise<string> {
  return new Promise((resolve) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    let answered = false;
    rl.on('close', () => {
      if (!answered) resolve('');
    });
    rl.question(question, (a) => {
      answered = true;
      rl.close();
      resolve(a.trim().toLowerCase());
    });
  });
}

/** Add the `run` command to the program. */
export function runCommand(root: Command, d: RunCliDeps): void {
  root
    .command('run')
    .description(
      'run a command between a pre and a post restore point, say what it changed, then keep or roll back ' +
        '(put -- before the command when it has options)',
    )
    .argument('<command...>', "the command and its arguments, e.g. -- sh -c 'pip install requests'")
    .option('--target <target>', 'the target, e.g. dir:/home/me/.hermes')
    .option(
      '--store <store>',
      'memory store to capture (repeatable; default: the stores found in the target)',
      (v: string, p: string[]) => [...p, v],
      [],
    )
    .option('--label <text>', 'label of the pre restore point (default: "Before: <command>")')
    .option(
      '--rollback-on-failure',
      'when the command fails, roll back to the pre restore point (scope machine unless --scope)',
    )
    .addOption(
      new Option(
        '--scope <scope>',
        'what a roll back puts back (default machine: files, keeping the current agent memory)',
      ).choices(['machine', 'agent', 'both']),
    )
    .option(
      '--json',
      'print one JSON line on stdout at the end: {pre, post, exit, changes, memory, rolledBack, restoreCommand}',
    )
    .action(
      async (
        argv: string[],
        o: {
          target: string;
          store: string[];
          label?: string;
          rollbackOnFailure?: boolean;
          scope?: Scope;
          agent?: string;
          resolvedAgent?: string;
        },
        cmd: Command,
      ) => {
        const asJson = d.json(cmd);
        if (!argv.length)
          throw new UsageError('InvalidParams', 'run needs a command.', 'Give it after --: run -- CMD ARGS…');
        const io = d.io;
        const stateDir = resolveStateDir(d.coreOpts(cmd).stateDir);
        const targetArgs = cliTargetArgs(o.target, stateDir);
        const line = commandLine(argv);
        const spec: RunSpec = {
          target: o.target,
          ...(o.store.length ? { stores: o.store } : {}),
          command: argv,
          ...(o.label ? { label: o.label } : {}),
          ...((o.agent ?? o.resolvedAgent) ? { agent: o.agent ?? o.resolvedAgent } : {}),
        };
        const scope: Scope = o.scope ?? 'machine';
        let hungUp = false;
        const say = (s: string): void => {
          if (!hungUp) io.err(s);
        };

        // 1. the pre restore point; without it the command is not run
        let pre: ResultOf<'restorePointCreate'>;
        const g1 = guardSignals('create', io, targetArgs);
        try {
          pre = await d.core(cmd, { signal: g1.signal }).beginRun(spec);
        } catch (e) {
          const err = asAgentKeepError(e);
          throw new AgentKeepError(
            err.kind,
            `No pre restore point could be taken, so the command was not run: ${err.message}`,
            err.hint,
            err.actions,
          );
        } finally {
          g1.dispose();
        }
        const notices = pre.notices ?? (pre.warnings ?? []).map((message) => ({ message }));
        for (const n of notices) say(`agentkeep: warning: ${describeProblem(n, { stateDir })}`);
        say(`agentkeep: pre restore point ${pre.id} taken; running: ${line}`);

        // 2. the command, with the user's terminal
        const exit = await runChild(
          argv,
          Boolean(process.stdin.isTTY),
          (l) => say(`agentkeep: ${l}`),
          (sig) => {
            // the terminal went away: writing to it now would fail (EIO), the post matters more
            if (sig === 'SIGHUP' && process.stderr.isTTY) hungUp = true;
          },
        );

        // 3. the post restore point and what changed
        const g2 = guardSignals('create', io, targetArgs);
        let end: RunEnd;
        try {
          end = await d.core(cmd, { signal: g2.signal }).endRun(spec, pre, exit);
        } finally {
          g2.dispose();
        }
        const restoreCmd = `agentkeep restore-point restore ${pre.id} ${targetArgs} --scope ${scope} --yes`;
        say(`agentkeep: ${line} ended (${exitText(exit)}).`);
        for (const n of end.notices) say(`agentkeep: warning: ${describeProblem(n, { stateDir })}`);
        if (end.post) say(`Changed between pre ${pre.id} and post ${end.post.id}:\n${runChangesText(end)}`);
        else
          say(
            `agentkeep: warning: no post restore point: ${end.postError}. ` +
              `The pre ${pre.id} stays (listed as a pre without post).`,
          );

        // 4. roll back, ask, or print how to roll back
        let rolledBack: ResultOf<'restorePointRestore'> | undefined;
        let kept = false;
        const rollBack = async (why: string): Promise<void> => {
          const g3 = guardSignals('restore', io, targetArgs);
          try {
            rolledBack = await call(
              d.core(cmd, { signal: g3.signal, onRestoreWriting: (u) => g3.writing(u?.id) }),
              'restorePointRestore',
              {
                target: o.target,
                id: pre.id,
                scope,
                ...(spec.stores ? { stores: spec.stores } : {}),
              },
            );
          } finally {
            g3.dispose();
          }
          const ch = rolledBack.changes;
          const n = (a: readonly string[]): number => a.length;
          const what =
            scope === 'agent'
              ? `${n(ch.agentChanged)} agent-state file(s) put back`
              : `${n(ch.added)} file(s) removed, ${n(ch.removed)} brought back, ${n(ch.changed)} reverted` +
                (scope === 'both' ? `, ${n(ch.agentChanged)} agent-state file(s) put back` : '');
          const undo = rolledBack.undo
            ? `Undo: agentkeep restore-point restore ${rolledBack.undo.id} ${targetArgs} --scope ${scope} --yes`
            : 'It took no undo point.';
          say(`agentkeep: ${why}: rolled back to pre ${pre.id} (scope ${scope}): ${what}. ${undo}`);
        };
        if (o.rollbackOnFailure && exit.code !== 0) {
          await rollBack(`the command failed (${exitText(exit)})`);
        } else if (io.isTTY && !asJson && !hungUp) {
          for (;;) {
            const a = await askLine(`Keep the change? [K]eep / [r]oll back to ${pre.id} (scope ${scope}) / [d]iff: `);
            if (a === 'd' || a === 'diff') {
              say(end.post ? runChangesText(end, Infinity) : 'No post restore point, so there is nothing to compare.');
              if (end.memory && end.post) say(memoryDiffText(end.memory, pre.id, end.post.id));
              continue;
            }
            if (a === 'r' || a === 'roll back' || a === 'rollback') {
              await rollBack('as asked');
              break;
            }
            if (a === '' || a === 'k' || a === 'keep') {
              await call(d.core(cmd), 'restorePointKeep', { target: o.target, id: pre.id }).catch(() => undefined);
              kept = true;
              say(`agentkeep: kept. To roll back later: ${restoreCmd}`);
              break;
            }
            say('Answer k (keep), r (roll back) or d (diff).');
          }
        } else {
          say(`agentkeep: to roll back: ${restoreCmd}`);
        }
        if (asJson) {
          const doc = {
            pre: pre as RestorePoint,
            ...(end.post ? { post: end.post } : { postError: end.postError }),
            exit,
            ...(end.changes ? { changes: end.changes } : {}),
            ...(end.memory ? { memory: end.memory } : {}),
            ...(rolledBack ? { rolledBack: { scope, undo: rolledBack.undo?.id, changes: rolledBack.changes } } : {}),
            ...(kept ? { kept: true } : {}),
            restoreCommand: restoreCmd,
          };
          io.out(JSON.stringify(doc));
        }
        d.setExitCode(exit.code);
      },
    );
}
