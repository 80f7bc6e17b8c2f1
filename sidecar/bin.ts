/**
 * The `agentkeep` program as installed (package.json bin, out/sidecar.js): a small launcher. The
 * command lines of ./cli/fast.ts (`--version`, the agent hooks' `hook run …` for calls that need no
 * restore point) are answered here, with only what they use loaded; every other command line runs the
 * full CLI and the servers (./main.ts, bundled as out/cli.js), loaded through ./codeCache.ts so V8
 * compiles the 5 MB bundle once per version and user instead of on every start (issue 14). A one-shot
 * `restore-point create` of a `dir:` target (the command lines of ./cli/slimCreate.ts) runs the slim
 * create instead (./createMain.ts, bundled as out/create.js, also with the code cache): the same
 * steps with a fraction of the code loaded, for a smaller peak memory; it hands back to the full CLI
 * when a named agent resolves to what it does not serve.
 *
 * esbuild.mjs builds this file to out/sidecar.js and ./main.ts to out/cli.js; the extension starts
 * out/sidecar.js (`serve --stdio`), so nothing else changes for it. From source (`tsx sidecar/bin.ts`)
 * the full CLI is ./main.ts.
 */
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { loadWithCodeCache } from './codeCache';
import { fastPath, runFastPath } from './cli/fast';
import { slimCreateArgs, type SlimCreateArgs } from './cli/slimCreate';
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

/** The slim create's module: out/create.js next to this bundle, else ./createMain.ts from source; undefined when neither is there. */
function slimCreateModule(): typeof import('./createMain') | undefined {
  const bundled = path.join(__dirname, 'create.js');
  if (existsSync(bundled)) return loadWithCodeCache(bundled, module) as typeof import('./createMain');
  // from source; a require esbuild does not follow (the slim create is its own bundle)
  if (__filename.endsWith('.ts'))
    return module.require(path.join(__dirname, 'createMain')) as typeof import('./createMain');
  return undefined;
}

/** Run the slim create of `args`; the full CLI when it is missing or hands the command line back. */
function slimCreate(args: SlimCreateArgs): void {
  if (wantsSmallYoungGen(process.argv.slice(2))) keepYoungGenSmall();
  const m = slimCreateModule();
  if (!m) {
    for (const stream of [process.stdout, process.stderr]) stream.off('error', onError);
    return fullCli();
  }
  exitOrFullCli(m.runSlimCreate(args).then((code) => (code === 'full' ? null : code)));
}

/**
 * Wait for a path answered here (the fast path, the slim create): its exit code, or (null) the full
 * CLI for a command line it hands back, which installs its own stream error handlers.
 */
function exitOrFullCli(run: Promise<number | null>): void {
  run.then(
    (code) => {
      if (code !== null) process.exitCode = code;
      else {
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

// as ./main.ts: a reader that goes away is not an error
function onError(e: NodeJS.ErrnoException): void {
  if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw e;
}

const argv = process.argv.slice(2);
const fast = fastPath(argv);
const slim = fast ? undefined : slimCreateArgs(argv);
if (slim) {
  for (const stream of [process.stdout, process.stderr]) stream.on('error', onError);
  slimCreate(slim);
} else if (!fast) fullCli();
else {
  for (const stream of [process.stdout, process.stderr]) stream.on('error', onError);
  exitOrFullCli(runFastPath(fast));
}
