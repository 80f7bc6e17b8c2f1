/**
 * `agentkeep hook run hermes|agent-zero [--agent NAME] [--target T] [--store S…] [--state-dir DIR]`:
 * the command an agent runs around each matching tool call, with the call as JSON on stdin (see
 * ./call.ts). Bundled on its own as out/hook.js (esbuild.mjs), the command `hook install` writes,
 * so a call that needs nothing costs a Node start plus reading stdin and classifying the command
 * (./verdict.ts); only a call that needs a restore point or a memory record loads the rest of the
 * sidecar (out/hook-full.js, ./run.ts). The full CLI's `hook run` runs the same code.
 *
 * It never breaks the agent: exit code 0 always; stdout is empty or one JSON object (Hermes' block
 * answer `{"decision": "block", "reason": …}`, only for a fail-closed agent whose restore point could
 * not be taken); problems are one line on stderr each. Bad stdin lets the call through.
 */
import { existsSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseHookPayload, PayloadError, type HookAgentKind, type HookCall } from './call';
import { handOff, handoffOffByEnv } from './handoff';
import { decide, type Verdict } from './verdict';
import { keepYoungGenSmall } from '../youngGen';

/** The hook's arguments. */
export interface HookArgs {
  kind: HookAgentKind;
  agent?: string;
  target?: string;
  stores: string[];
  stateDir?: string;
}

/** How long a hook may take before it answers, in ms (below the 30 s timeout `hook install` sets; Hermes' default is 60 s). */
export const DEFAULT_BUDGET_MS = 20_000;

/** The budget in use: AGENTKEEP_HOOK_BUDGET_MS (tests), else DEFAULT_BUDGET_MS. */
export function hookBudgetMs(env: NodeJS.ProcessEnv = process.env): number {
  const v = Number(env.AGENTKEEP_HOOK_BUDGET_MS);
  return Number.isFinite(v) && v > 0 ? v : DEFAULT_BUDGET_MS;
}

/** What the hook writes to; replaceable in tests. */
export interface HookIO {
  readStdin(timeoutMs: number): Promise<string>;
  out(s: string): void;
  err(s: string): void;
}

/** The part of the sidecar that takes restore points and records memory writes (./run.ts). */
export interface HookFull {
  runHook(
    call: HookCall,
    verdict: Exclude<Verdict, { action: 'none' }>,
    args: HookArgs,
    io: HookIO,
    budgetMs: number,
    env?: NodeJS.ProcessEnv,
    coreOptions?: object,
    opts?: { afterHandoff?: boolean },
  ): Promise<void>;
}

/** Whether the hook's --target (dir:) or a --store names a relative path (resolved against the hook's cwd only). */
function relativePaths(args: HookArgs): boolean {
  const t = args.target && /^dir:(?!\/\/)(.*)$/is.exec(args.target.trim());
  return (!!t && !path.isAbsolute(t[1])) || args.stores.some((s) => !path.isAbsolute(storePath(s)));
}

/**
 * Parse the hook's argv (`hook run KIND …`, `run KIND …` or `KIND …`).
 * @throws Error naming the bad argument
 */
export function parseHookArgs(argv: string[]): HookArgs {
  const a = [...argv];
  if (a[0] === 'hook') a.shift();
  if (a[0] === 'run') a.shift();
  const kind = a.shift();
  if (kind !== 'hermes' && kind !== 'agent-zero')
    throw new Error(`unknown agent kind "${kind ?? ''}" (use hermes or agent-zero)`);
  const out: HookArgs = { kind, stores: [] };
  for (let i = 0; i < a.length; i++) {
    const [flag, inline] =
      a[i].startsWith('--') && a[i].includes('=')
        ? [a[i].slice(0, a[i].indexOf('=')), a[i].slice(a[i].indexOf('=') + 1)]
        : [a[i], undefined];
    const value = (): string => {
      const v = inline ?? a[++i];
      if (v === undefined) throw new Error(`${flag} needs a value`);
      return v;
    };
    if (flag === '--agent') out.agent = value();
    else if (flag === '--target') out.target = value();
    else if (flag === '--store') out.stores.push(value());
    else if (flag === '--state-dir') out.stateDir = value();
    else throw new Error(`unknown option ${a[i]}`);
  }
  return out;
}

/** The state dir as sidecar/core/state.ts resolves it (kept here so the fast path loads no core code). */
export function hookStateDir(args: HookArgs, env: NodeJS.ProcessEnv = process.env): string {
  if (args.stateDir) return args.stateDir;
  if (env.AGENTKEEP_STATE_DIR) return env.AGENTKEEP_STATE_DIR;
  return path.join(env.XDG_STATE_HOME || path.join(os.homedir(), '.local', 'state'), 'agentkeep');
}

/** Path part of a `kind:/path` store spec. */
function storePath(spec: string): string {
  return spec.replace(/^[A-Za-z][A-Za-z0-9_-]*:/, '');
}

/** The agent's home folders: its stores (command line, else the named agent's in config.json) and HERMES_HOME. */
export function agentHomes(args: HookArgs, env: NodeJS.ProcessEnv = process.env): string[] {
  let stores = args.stores;
  if (!stores.length && args.agent) {
    try {
      const f = JSON.parse(readFileSync(path.join(hookStateDir(args, env), 'config.json'), 'utf8')) as {
        agents?: Record<string, { stores?: string[] }>;
      };
      stores = f.agents?.[args.agent]?.stores ?? [];
    } catch {
      /* no settings yet */
    }
  }
  const homes = stores.map(storePath);
  if (env.HERMES_HOME) homes.push(env.HERMES_HOME);
  return homes;
}

/** stdin of this process, read to the end (or until `timeoutMs`: then what arrived). */
export function processStdin(timeoutMs: number): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const done = (): void => {
      clearTimeout(timer);
      process.stdin.destroy();
      resolve(Buffer.concat(chunks).toString('utf8'));
    };
    const timer = setTimeout(done, timeoutMs);
    process.stdin.on('data', (d: Buffer) => chunks.push(d));
    process.stdin.on('end', done);
    process.stdin.on('error', done);
  });
}

/**
 * Run the hook once: read the call, decide, and (only when needed) act: hand the call to a running
 * sidecar of the state dir (./handoff.ts: `agentkeep mcp` or `serve`, which keep the change journal),
 * else load the full part and act here.
 * @param loadFull loads ./run.ts (the bundle's out/hook-full.js); called only for calls that need it
 * @param opts.handoff try the hand-off first (default true; a server running a handed-off call passes
 *   false; AGENTKEEP_HOOK_HANDOFF=0 turns it off)
 * @returns the exit code: always 0 (a hook must not fail the agent's call)
 */
export async function hookMain(
  argv: string[],
  io: HookIO,
  loadFull: () => HookFull,
  env: NodeJS.ProcessEnv = process.env,
  opts: { handoff?: boolean } = {},
): Promise<number> {
  let args: HookArgs;
  try {
    args = parseHookArgs(argv);
  } catch (e) {
    io.err(
      `agentkeep hook: ${(e as Error).message}; the tool call goes ahead without a restore point. Reinstall the hook: agentkeep hook install hermes.`,
    );
    return 0;
  }
  const budget = hookBudgetMs(env);
  const text = await io.readStdin(Math.min(budget, 5000));
  let call: HookCall | null;
  try {
    call = parseHookPayload(text);
  } catch (e) {
    if (!(e instanceof PayloadError)) throw e;
    io.err(`agentkeep hook: ${e.message}; the tool call goes ahead without a restore point.`);
    return 0;
  }
  if (!call) return 0;
  const verdict = decide(args.kind, call, call.tool === 'terminal' ? [] : agentHomes(args, env));
  if (verdict.action === 'none') return 0;
  let left = budget;
  let afterHandoff = false;
  if (opts.handoff !== false && !handoffOffByEnv(env) && relativePaths(args)) {
    // a server resolves paths against its own working folder: the hook does it itself
    if (env.AGENTKEEP_DEBUG) io.err('agentkeep hook: hand-off: a relative --target or --store path (not handed off)');
  } else if (opts.handoff !== false && !handoffOffByEnv(env)) {
    const started = Date.now();
    const stateDir = hookStateDir(args, env);
    const h = await handOff(
      stateDir,
      {
        argv: args.stateDir ? argv : [...argv, '--state-dir', stateDir],
        stdin: text,
        env: {
          ...(env.HERMES_HOME ? { HERMES_HOME: env.HERMES_HOME } : {}),
          ...(env.HOME ? { HOME: env.HOME } : {}),
        },
        budgetMs: Math.max(500, budget - 1000),
      },
      Math.max(500, budget - 500),
    );
    if (env.AGENTKEEP_DEBUG)
      io.err(`agentkeep hook: hand-off: ${h.answer ? 'answered by the running sidecar' : h.why.join('; ')}`);
    if (h.answer) {
      for (const l of h.answer.out) io.out(l);
      for (const l of h.answer.err) io.err(l);
      return 0;
    }
    left = Math.max(500, budget - (Date.now() - started));
    afterHandoff = h.accepted === true;
  }
  try {
    await loadFull().runHook(call, verdict, args, io, left, undefined, undefined, { afterHandoff });
  } catch (e) {
    io.err(`agentkeep hook: ${goesAhead(e)}`);
  }
  return 0;
}

/**
 * One clean line for a failure the call goes ahead after: "MESSAGE; the tool call goes ahead without a
 * restore point. HINT" (the message's own closing period dropped; the hint of an AgentKeepError-like error kept).
 */
export function goesAhead(e: unknown): string {
  const msg = (e instanceof Error ? e.message : String(e)).trim().replace(/[.;:]+$/, '');
  const hint = typeof (e as { hint?: unknown })?.hint === 'string' ? ` ${(e as { hint: string }).hint}` : '';
  return `${msg}; the tool call goes ahead without a restore point.${hint}`;
}

/**
 * The full part next to this bundle (out/hook-full.js; out/hook.js and the launcher out/sidecar.js
 * load it), else ./run.ts (running from source with tsx).
 */
export function loadBundledFull(): HookFull {
  // a one-shot process about to take a restore point: the young generation stays small (../youngGen.ts)
  keepYoungGenSmall();
  const bundled = path.join(__dirname, 'hook-full.js');
  // A runtime require esbuild leaves alone: the full part is its own bundle, loaded only when needed.
  return module.require(existsSync(bundled) ? bundled : './run') as HookFull;
}

// Run only as the hook program itself (out/hook.js, or this file under tsx), not when bundled into the CLI.
if (require.main === module && /(^|[\\/])(hook\.js|entry\.ts)$/.test(__filename)) {
  const io: HookIO = {
    readStdin: processStdin,
    out: (s) => process.stdout.write(`${s}\n`),
    err: (s) => process.stderr.write(`${s}\n`),
  };
  hookMain(process.argv.slice(2), io, loadBundledFull).then(
    (code) => {
      process.exitCode = code;
      // an abandoned restore point (over budget) is aborted; never outlive the answer by more than 2 s
      setTimeout(() => process.exit(code), 2000).unref();
    },
    (e: unknown) => {
      process.stderr.write(
        `agentkeep hook: internal error: ${e instanceof Error ? e.message : String(e)}; the tool call goes ahead.\n`,
      );
      process.exitCode = 0;
    },
  );
}
