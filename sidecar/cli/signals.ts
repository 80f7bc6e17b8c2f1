/**
 * Ctrl+C (SIGINT) and SIGTERM during `restore-point create` and `restore-point restore`.
 *
 * create: the first signal aborts it cleanly: the core stops, removes its temp objects, writes no
 *   journal entry and releases the target's lock; nothing in the target was changed.
 * restore: before the target is touched (while the pre-restore point is captured) the first signal
 *   aborts it the same way. Once files are being written, the first signal only prints one line and
 *   lets the restore finish (so the tree is not left half-written); a second signal aborts it: the
 *   core stops between files, removes its temp files and its error names the undo command.
 * Either mode: one more signal after the abort exits at once (code 130 / 143); what is left (lock,
 *   temp objects) belongs to a dead pid and is cleaned by the next operation.
 */
import type { CliIO } from './index';

/** The signals handled. */
export const HANDLED_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM'];

/** What the CLI passes to the core and calls while a guarded operation runs. */
export interface SignalGuard {
  /** Aborted when the operation must stop now (CoreOptions.signal). */
  readonly signal: AbortSignal;
  /**
   * The restore has captured its pre-restore point `undoId` (undefined: a restore without an undo
   * point) and starts writing (CoreOptions.onRestoreWriting).
   */
  writing(undoId: string | undefined): void;
  /** Remove the signal handlers (always call it, in a finally). */
  dispose(): void;
}

/**
 * Install SIGINT/SIGTERM handlers for one create or restore.
 * @param mode which operation runs (see the module comment for what each does)
 * @param io where the one-line notices go (stderr)
 * @param targetArgs the `--target … [--state-dir …]` arguments of the undo command (state.ts cliTargetArgs)
 * @param proc the process to listen on (default: this process; replaceable for tests)
 */
export function guardSignals(
  mode: 'create' | 'restore',
  io: Pick<CliIO, 'err'>,
  targetArgs: string,
  proc: NodeJS.Process = process,
): SignalGuard {
  const ctl = new AbortController();
  let undoId: string | undefined;
  let writing = false;
  let count = 0;
  const onSignal = (sig: NodeJS.Signals): void => {
    count++;
    if (ctl.signal.aborted) {
      // Asked again after the abort: stop at once.
      io.err(`agentkeep: stopped at once (${sig}).`);
      proc.exit(sig === 'SIGTERM' ? 143 : 130);
      return;
    }
    if (mode === 'restore' && writing && count === 1) {
      io.err(
        `agentkeep: finishing the restore so the tree is not left half-written; Ctrl+C again to stop now. ${undoId ? `Undo with: agentkeep restore-point restore ${undoId} ${targetArgs} --scope both --yes` : 'It has no undo point.'}`,
      );
      return;
    }
    io.err(
      mode === 'create' || !writing
        ? `agentkeep: ${sig}: stopping; nothing in the target is changed.`
        : `agentkeep: ${sig} again: stopping the restore now.`,
    );
    ctl.abort(new Error(sig));
  };
  for (const s of HANDLED_SIGNALS) proc.on(s, onSignal);
  return {
    signal: ctl.signal,
    writing: (id) => {
      undoId = id;
      writing = true;
    },
    dispose: () => {
      for (const s of HANDLED_SIGNALS) proc.off(s, onSignal);
    },
  };
}
