/**
 * Run a command in a VS Code terminal and learn its exit code through shell integration
 * (VS Code >= 1.93: `terminal.shellIntegration.executeCommand` + `onDidEndTerminalShellExecution`).
 * The types are declared here because the extension's engine floor (1.91) predates that API; it is
 * feature-detected at run time. Without shell integration the command is sent as text and the user
 * is asked whether it finished.
 */
import * as vscode from 'vscode';
import { commandLine } from './format';

interface ShellExecution {
  readonly commandLine?: { value: string };
}
interface ShellIntegration {
  executeCommand(commandLine: string): ShellExecution;
}
interface ShellExecutionEndEvent {
  readonly terminal: vscode.Terminal;
  readonly execution: ShellExecution;
  readonly exitCode: number | undefined;
}
interface ShellIntegrationChangeEvent {
  readonly terminal: vscode.Terminal;
  readonly shellIntegration: ShellIntegration;
}
type WindowWithShellIntegration = typeof vscode.window & {
  onDidChangeTerminalShellIntegration?: vscode.Event<ShellIntegrationChangeEvent>;
  onDidEndTerminalShellExecution?: vscode.Event<ShellExecutionEndEvent>;
};
type TerminalWithShellIntegration = vscode.Terminal & { readonly shellIntegration?: ShellIntegration };

/** How a terminal run ended. */
export interface RunOutcome {
  /** Exit code; undefined when unknown (no shell integration, or the shell did not report it). */
  exitCode: number | undefined;
  /** True when the exit code came from shell integration. */
  viaShellIntegration: boolean;
  /** False when the user said the command did not finish (fallback path only). */
  finished: boolean;
  terminal: vscode.Terminal;
}

/** Options of runInTerminal. */
export interface RunOptions {
  /** Working directory of the new terminal. */
  cwd: string;
  /** Terminal name. */
  name?: string;
  /** How long to wait for shell integration to arrive (ms, default 5000). */
  shellIntegrationTimeoutMs?: number;
  /** How long to wait for the command to end (ms, default: no limit). */
  timeoutMs?: number;
  /** Fallback only: resolve without asking (tests); the outcome has exitCode undefined. */
  assumeFinished?: boolean;
}

/**
 * Create a terminal in `cwd`, run `command`, resolve when it ends. Rejects on timeoutMs.
 * Source of the exit code: shell integration when available; otherwise a modal "Did the command
 * finish?" (exit code unknown).
 */
export async function runInTerminal(commandText: string, opts: RunOptions): Promise<RunOutcome> {
  const command = commandLine(commandText);
  const w = vscode.window as WindowWithShellIntegration;
  const terminal = vscode.window.createTerminal({
    name: opts.name ?? 'AgentKeep',
    cwd: opts.cwd,
  }) as TerminalWithShellIntegration;
  terminal.show(true);
  const si = await waitForShellIntegration(terminal, w, opts.shellIntegrationTimeoutMs ?? 5000);
  if (si && w.onDidEndTerminalShellExecution) {
    const onEnd = w.onDidEndTerminalShellExecution;
    return new Promise<RunOutcome>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      let execution: ShellExecution | undefined;
      const sub = onEnd((e) => {
        if (e.terminal !== terminal || (execution && e.execution !== execution)) return;
        sub.dispose();
        if (timer) clearTimeout(timer);
        resolve({ exitCode: e.exitCode, viaShellIntegration: true, finished: true, terminal });
      });
      if (opts.timeoutMs) {
        timer = setTimeout(() => {
          sub.dispose();
          reject(
            new Error(
              `"${command}" did not finish within ${Math.round(opts.timeoutMs! / 1000)} s. It may still be running in the terminal "${terminal.name}".`,
            ),
          );
        }, opts.timeoutMs);
      }
      execution = si.executeCommand(command);
    });
  }
  terminal.sendText(command, true);
  if (opts.assumeFinished) return { exitCode: undefined, viaShellIntegration: false, finished: true, terminal };
  const finished = await vscode.window.showInformationMessage(
    `Did "${command}" finish?`,
    {
      modal: true,
      detail: 'The terminal does not report exit codes (no shell integration). Answer when the command has ended.',
    },
    'It finished',
  );
  return { exitCode: undefined, viaShellIntegration: false, finished: finished === 'It finished', terminal };
}

async function waitForShellIntegration(
  terminal: TerminalWithShellIntegration,
  w: WindowWithShellIntegration,
  timeoutMs: number,
): Promise<ShellIntegration | undefined> {
  if (terminal.shellIntegration) return terminal.shellIntegration;
  if (!w.onDidChangeTerminalShellIntegration) return undefined;
  const onChange = w.onDidChangeTerminalShellIntegration;
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      sub.dispose();
      resolve(terminal.shellIntegration);
    }, timeoutMs);
    const sub = onChange((e) => {
      if (e.terminal !== terminal) return;
      clearTimeout(timer);
      sub.dispose();
      resolve(e.shellIntegration);
    });
  });
}
