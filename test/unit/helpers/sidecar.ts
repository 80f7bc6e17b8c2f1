/**
 * Test helpers: build the real sidecar bundle once (out/sidecar.js, same options as esbuild.mjs) and
 * run it as a real process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { build, type BuildOptions } from 'esbuild';
import { REPO } from './paths';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { asciiOnly } = require('../../../scripts/lib/ascii-bundle.cjs') as { asciiOnly: (file: string) => void };
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { slimStubs } = require('../../../scripts/lib/slim-stubs.cjs') as { slimStubs: import('esbuild').Plugin };

export const SIDECAR = path.join(REPO, 'out', 'sidecar.js');

let built: Promise<void> | undefined;

const COMMON: BuildOptions = {
  absWorkingDir: REPO,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  mainFields: ['module', 'main'], // as esbuild.mjs: jsonc-parser's UMD main does not bundle
  sourcemap: true,
  sourcesContent: false,
  logLevel: 'error',
  // as esbuild.mjs: ssh2's optional native parts are never bundled, and the memory lint's sentence encoder is
  // required from node_modules when a lint runs (its WASM files and weights sit next to its code)
  external: ['cpu-features', '*.node', '@energetic-ai/*'],
};

/**
 * Bundle the `agentkeep` program as esbuild.mjs does (once per test run): out/sidecar.js (the launcher,
 * sidecar/bin.ts), out/cli.js (the full CLI, sidecar/main.ts), out/create.js (the slim create, sidecar/createMain.ts) and out/hook-full.js (the hook's full
 * part, which the launcher's hook fast path loads for a call that needs a restore point). Only these,
 * so a broken extension build does not block these tests.
 */
export function buildSidecar(): Promise<void> {
  built ??= Promise.all([
    build({
      ...COMMON,
      entryPoints: ['sidecar/bin.ts'],
      outfile: SIDECAR,
      minify: true,
      banner: { js: '#!/usr/bin/env node' },
    }),
    build({ ...COMMON, entryPoints: ['sidecar/main.ts'], outfile: path.join(REPO, 'out', 'cli.js') }),
    build({
      ...COMMON,
      entryPoints: ['sidecar/createMain.ts'],
      outfile: path.join(REPO, 'out', 'create.js'),
      plugins: [slimStubs],
    }),
    build({ ...COMMON, entryPoints: ['sidecar/hooks/run.ts'], outfile: path.join(REPO, 'out', 'hook-full.js') }),
  ]).then(() => {
    // as esbuild.mjs: the bundles a CLI process loads whole are ASCII (scripts/lib/ascii-bundle.cjs)
    for (const f of ['cli.js', 'create.js', 'hook-full.js']) asciiOnly(path.join(REPO, 'out', f));
    chmodSync(SIDECAR, 0o755);
    // node-sqlite3-wasm loads its .wasm next to the bundle (as esbuild.mjs copies it)
    copyFileSync(
      path.join(REPO, 'node_modules', 'node-sqlite3-wasm', 'dist', 'node-sqlite3-wasm.wasm'),
      path.join(REPO, 'out', 'node-sqlite3-wasm.wasm'),
    );
  });
  return built;
}

export const HOOK = path.join(REPO, 'out', 'hook.js');
let hookBuilt: Promise<void> | undefined;

/**
 * Bundle the agent hook as esbuild.mjs does: out/hook.js (sidecar/hooks/entry.ts, minified), plus
 * out/sidecar.js, out/cli.js and out/hook-full.js (sidecar/hooks/run.ts; buildSidecar).
 */
export function buildHook(): Promise<void> {
  hookBuilt ??= Promise.all([
    buildSidecar(),
    build({
      ...COMMON,
      entryPoints: ['sidecar/hooks/entry.ts'],
      outfile: HOOK,
      minify: true,
      banner: { js: '#!/usr/bin/env node' },
    }),
  ]).then(() => chmodSync(HOOK, 0o755));
  return hookBuilt;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Run `node out/sidecar.js ...args` to completion (stdin is /dev/null, i.e. not a TTY). `prefix`: a
 * command that runs node, e.g. `['setpriv', '--reuid=65534', ...]` to run as another user.
 */
export function runSidecar(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  input?: string,
  prefix: string[] = [],
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const [cmd, ...pre] = [...prefix, process.execPath];
    const child = spawn(cmd, [...pre, SIDECAR, ...args], {
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

/** Start a long-running sidecar process (server); the caller kills it. */
export function startSidecar(args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  return spawn(process.execPath, [SIDECAR, ...args], {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/** Wait for a line on the child's stderr matching `re`; rejects on exit or timeout. */
export function waitForStderr(child: ChildProcess, re: RegExp, timeoutMs = 15000): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => done(new Error(`timed out waiting for ${re} on stderr; got: ${buf}`)), timeoutMs);
    const onData = (d: Buffer): void => {
      buf += d.toString();
      const m = buf.match(re);
      if (m) done(undefined, m);
    };
    const onExit = (code: number | null): void =>
      done(new Error(`sidecar exited (${code}) before ${re}; stderr: ${buf}`));
    const done = (err?: Error, m?: RegExpMatchArray): void => {
      clearTimeout(timer);
      child.stderr!.off('data', onData);
      child.off('exit', onExit);
      if (err) reject(err);
      else resolve(m!);
    };
    child.stderr!.on('data', onData);
    child.on('exit', onExit);
  });
}

/**
 * The exit code a successful `agentkeep … --json` run must have given what it printed: 1 for
 * `memory lint` with an error finding and `memory list` with a broken file (the CLI's contract,
 * docs/cli.md), else 0.
 */
export function expectedExit(args: string[], out: any): number {
  if (args[0] !== 'memory') return 0;
  if (args[1] === 'lint') return out?.findings?.some((f: any) => f.severity === 'error') ? 1 : 0;
  if (args[1] === 'list') return out?.stores?.some((s: any) => s.broken) ? 1 : 0;
  return 0;
}

/**
 * `ak(...args)` runs the real CLI with `--state-dir <stateDir()>`; `json(...args)` adds --json,
 * parses stdout and asserts the exit code (0, or what expectedExit says). `stateDir` is read per call (tests make a new one per test).
 */
export function cliRunner(stateDir: () => string): {
  ak: (...args: string[]) => Promise<RunResult>;
  json: (...args: string[]) => Promise<any>;
} {
  const ak = (...args: string[]): Promise<RunResult> => runSidecar(['--state-dir', stateDir(), ...args]);
  const json = async (...args: string[]): Promise<any> => {
    const r = await ak(...args, '--json');
    let parsed: any;
    try {
      parsed = JSON.parse(r.stdout);
    } catch {
      throw new Error(`agentkeep ${args.join(' ')} failed (${r.code}): ${r.stderr}${r.stdout}`);
    }
    const want = expectedExit(args, parsed);
    if (r.code !== want)
      throw new Error(`agentkeep ${args.join(' ')} exited ${r.code}, expected ${want}: ${r.stderr}${r.stdout}`);
    return parsed;
  };
  return { ak, json };
}

/** Make a restore point look `ageH` hours old by editing its journal entry (the state dir's only target). */
export async function ageRestorePoint(stateDir: string, id: string, ageH: number): Promise<void> {
  const root = path.join(stateDir, 'journal');
  const [key] = await readdir(root);
  const file = path.join(root, key, `${id}.json`);
  const rec = JSON.parse(await readFile(file, 'utf8')) as { createdAt: string };
  rec.createdAt = new Date(Date.now() - ageH * 3_600_000).toISOString();
  await writeFile(file, JSON.stringify(rec));
}
