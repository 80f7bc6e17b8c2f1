/**
 * The `agentkeep` program (bin): the CLI and the servers on the same core.
 * See sidecar/cli/index.ts for the commands.
 */
import { runCli } from './cli';
import { Core } from './core/core';
import { asAgentKeepError } from './core/errors';
import { loadPlugins } from './plugins';

// A reader that goes away (`agentkeep memory list | head -1`) is not an error: stop quietly, as
// other command-line tools do, instead of an unhandled EPIPE stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
}

// AGENTKEEP_PLUGINS (test/dev hook, sidecar/plugins.ts): store kinds and backends from modules
// outside the bundle, registered before any command runs.
try {
  loadPlugins();
} catch (e) {
  process.stderr.write(`agentkeep: ${asAgentKeepError(e).oneLine()}\n`);
  process.exit(1);
}

// (one call per process, except the servers: CoreOptions.oneShot)
runCli(
  process.argv.slice(2),
  (opts) => new Core({ ...opts, oneShot: opts.oneShot ?? opts.changeJournal !== true }),
).then(
  (code) => {
    if (code !== null) process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`agentkeep: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exitCode = 1;
  },
);
