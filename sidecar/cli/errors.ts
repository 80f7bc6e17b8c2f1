/**
 * How the CLI reports an error that is not commander's (a usage error of the parser): one line on
 * stderr naming the problem, the next actions as command lines and the fix; with --json also
 * `{"error":{code,message,hint,actions}}` on stdout. Shared by the full CLI (./index.ts runCli) and
 * the launcher's slim create (../createMain.ts), so both report alike.
 */
import { AgentKeepError, asAgentKeepError } from '../core/errors';
import { InvalidParamsError } from '../core/params';
import { describeProblem, type RenderOptions } from './actions';
import type { CliIO } from './index';
import { UsageError } from './usage';

/** Option names of params whose flag is not the kebab-case of the field. */
const PARAM_FLAGS: Record<string, string> = {
  stores: '--store',
  id: 'the restore point id',
  ids: 'the restore point ids',
};

/**
 * The CLI's wording of params that failed the schema: each field as its option (`target` ->
 * `--target`, `stores.0` -> `--store`), no protocol schema hint (the user typed options, not JSON).
 */
export function cliParamsError(e: InvalidParamsError): AgentKeepError {
  const parts = e.fields.map((f) => {
    const top = f.path[0];
    const flag =
      top === undefined
        ? 'arguments'
        : (PARAM_FLAGS[top] ?? `--${top.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`);
    return `${flag}: ${f.message}`;
  });
  return new UsageError('InvalidParams', `Invalid ${parts.join('; ')}.`);
}

/**
 * Report error `e` of a command (see the module doc).
 * @param json whether the command runs in --json mode
 * @returns the exit code: 2 for a usage error, else 1
 */
export function reportCliError(e: unknown, io: CliIO, json: boolean, render: () => RenderOptions): number {
  // params the CLI passed on from its options and that failed the schema: name the option, not
  // the protocol field (`--target ""` is "Invalid --target: the target is empty…")
  const err = e instanceof InvalidParamsError ? cliParamsError(e) : asAgentKeepError(e);
  // the core's next actions as the equivalent command lines (with --json also as data)
  io.err(`agentkeep: ${describeProblem(err, render())}`);
  const more = { ...(err.hint ? { hint: err.hint } : {}), ...(err.actions?.length ? { actions: err.actions } : {}) };
  if (json) io.out(JSON.stringify({ error: { code: err.code, message: err.message, ...more } }));
  if (err.kind === 'Internal' && process.env.AGENTKEEP_DEBUG && e instanceof Error && e.stack) io.err(e.stack);
  return err instanceof UsageError ? 2 : 1;
}
