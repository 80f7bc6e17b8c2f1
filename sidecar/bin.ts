/**
 * The `agentkeep` program as installed (package.json bin, out/sidecar.js): a small launcher. The
 * command lines of ./cli/fast.ts (`--version`, the agent hooks' `hook run …` for calls that need no
 * restore point) are answered here, with only what they use loaded; every other command line runs the
 * full CLI and the servers (./main.ts, bundled as out/cli.js), loaded through ./codeCache.ts so V8
 * compiles the 5 MB bundle once per version and user instead of on every start (issue 14).
 *
 * esbuild.mjs builds this file to out/sidecar.js and ./main.ts to out/cli.js; the extension starts
 * out/sidecar.js (`serve --stdio`), so nothing else changes for it. From source (`tsx sidecar/bin.ts`)
 * the full CLI is ./main.ts.
 */
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { loadWithCodeCache } from './codeCache';
import { fastPath, runFastPath } from './cli/fast';
import { keepYoungGenSmall, wantsSmallYoungGen } from './youngGen';

/** Run the full CLI: out/cli.js next to this bundle, else ./main.ts (running from source). */
function fullCli(): void {
  if (wantsSmallYoungGen(process.argv.slice(2))) keepYoungGenSmall();
  const bundled = path.join(__dirname, 'cli.js');
  if (existsSync(bundled)) loadWithCodeCache(bundled, module);
  // from source (tsx sidecar/bin.ts); a require esbuild does not follow (the full CLI is its own bundle)
  else if (__filename.endsWith('.ts')) module.require(path.join(__dirname, 'main'));
  else {
    process.stderr.write(
      `agentkeep: ${bundled} is missing: the program is out/sidecar.js together with out/cli.js. ` +
        'Rebuild it (npm run build) or reinstall AgentKeep.\n',
    );
    process.exitCode = 1;
  }
}

const fast = fastPath(process.argv.slice(2));
if (!fast) fullCli();
else {
  // as ./main.ts: a reader that goes away is not an error
  const onError = (e: NodeJS.ErrnoException): void => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  };
  for (const stream of [process.stdout, process.stderr]) stream.on('error', onError);
  runFastPath(fast).then(
    (code) => {
      if (code !== null) process.exitCode = code;
      else {
        // the full CLI installs its own
        for (const stream of [process.stdout, process.stderr]) stream.off('error', onError);
        fullCli();
      }
    },
    (e: unknown) => {
      process.stderr.write(`agentkeep: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exitCode = 1;
    },
  );
}
