/**
 * The `agentkeep` program (bin): the CLI and the servers on the same core.
 * See sidecar/cli/index.ts for the commands.
 */
import { runCli } from './cli';
import { Core } from './core/core';

runCli(process.argv.slice(2), (opts) => new Core(opts)).then(
  (code) => {
    if (code !== null) process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`agentkeep: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exitCode = 1;
  },
);
