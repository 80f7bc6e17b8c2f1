/**
 * The launcher's fast paths (sidecar/bin.ts, out/sidecar.js): command lines that are answered without
 * loading the full CLI (commander, zod, the core, the backends and stores), so they cost about a bare
 * Node start (issue 14; BENCHMARKS.md "Start-up"):
 *
 *     agentkeep --version
 *     agentkeep [--state-dir D] hook run hermes|agent-zero [--agent N] [--target T] [--store S]…   (a call that needs nothing)
 *     agentkeep [--state-dir D] hook run apt --dpkg pre-invoke|post-invoke … (the steps that take no restore point)
 *
 * Anything else, or anything unusual in these (an unknown or repeated-looking option, a value that
 * starts with `-`, `--help`, `--`, a relative state dir, AGENTKEEP_PLUGINS set), is left to the full
 * CLI, which then behaves exactly as before: the fast paths run the same functions the full CLI's
 * actions run (sidecar/cli/hooks.ts, sidecar/cli/aptHook.ts) with the same arguments.
 */
import { resolveStateDir } from '../core/state';
import { DEFAULT_APT_BUDGET_MS } from '../hooks/aptConf';
import { APT_STEPS, runAptStepWithoutCore, type AptRunArgs, type AptStep } from '../hooks/aptRecords';
import { hookMain, loadBundledFull, processStdin, type HookIO } from '../hooks/entry';
import { writeLine } from './terminal';
import { VERSION } from './version';

/** What the launcher does with a command line. */
export type FastPath =
  | { kind: 'version' }
  /** `hook run hermes|agent-zero`: hookMain's argv (as the full CLI's action builds it). */
  | { kind: 'agent-hook'; argv: string[] }
  /** `hook run apt`: the step's arguments (as the full CLI's aptRun builds them). */
  | { kind: 'apt-hook'; args: AptRunArgs };

/** The options `hook run` takes (sidecar/cli/hooks.ts), by kind; `--state-dir` is the root's. */
const AGENT_OPTIONS = new Set(['--agent', '--target', '--store', '--state-dir']);
const APT_OPTIONS = new Set([...AGENT_OPTIONS, '--dpkg', '--budget-ms']);

/**
 * The fast path for a command line, or undefined for the full CLI.
 * @param argv the arguments after `node sidecar.js`
 */
export function fastPath(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): FastPath | undefined {
  // plugins register store kinds and backends before any command runs, and may fail to load: full CLI
  if (env.AGENTKEEP_PLUGINS) return undefined;
  if (argv.length === 1 && argv[0] === '--version') return { kind: 'version' };

  // [--state-dir D]… hook run KIND [options]
  const opts = new Map<string, string[]>();
  let i = 0;
  const option = (allowed: ReadonlySet<string>): boolean => {
    const a = argv[i];
    const eq = a.indexOf('=');
    const [flag, inline] = a.startsWith('--') && eq > 0 ? [a.slice(0, eq), a.slice(eq + 1)] : [a, undefined];
    if (!allowed.has(flag)) return false;
    const value = inline ?? argv[i + 1];
    // a missing value, or one commander might read otherwise: the full CLI says what is wrong
    if (value === undefined || (inline === undefined && value.startsWith('-'))) return false;
    opts.set(flag, [...(opts.get(flag) ?? []), value]);
    i += inline === undefined ? 2 : 1;
    return true;
  };
  const ROOT = new Set(['--state-dir']);
  while (i < argv.length && argv[i].startsWith('-')) if (!option(ROOT)) return undefined;
  if (argv[i] !== 'hook' || argv[i + 1] !== 'run') return undefined;
  const kind = argv[i + 2];
  if (kind !== 'hermes' && kind !== 'agent-zero' && kind !== 'apt') return undefined;
  i += 3;
  const allowed = kind === 'apt' ? APT_OPTIONS : AGENT_OPTIONS;
  while (i < argv.length) if (!option(allowed)) return undefined;

  // single-valued options: the last one counts, as in commander; --store collects
  const last = (flag: string): string | undefined => opts.get(flag)?.at(-1);
  const agent = last('--agent');
  const target = last('--target');
  const stores = opts.get('--store') ?? [];
  if (last('--state-dir') === '') return undefined; // the full CLI's usage error
  let stateDir: string;
  try {
    // the CLI's coreOpts + resolveStateDir (a relative one is the full CLI's error)
    stateDir = resolveStateDir(last('--state-dir') ?? env.AGENTKEEP_STATE_DIR ?? undefined, env);
  } catch {
    return undefined;
  }
  if (kind !== 'apt') {
    return {
      kind: 'agent-hook',
      argv: [
        'hook',
        'run',
        kind,
        ...(agent ? ['--agent', agent] : []),
        ...(target ? ['--target', target] : []),
        ...stores.flatMap((s) => ['--store', s]),
        '--state-dir',
        stateDir,
      ],
    };
  }
  const step = last('--dpkg');
  if (!step || !(APT_STEPS as readonly string[]).includes(step)) return undefined;
  const budget = Number(last('--budget-ms'));
  return {
    kind: 'apt-hook',
    args: {
      step: step as AptStep,
      stateDir,
      ...(agent ? { agent } : {}),
      ...(target ? { target } : {}),
      stores,
      budgetMs: budget > 0 ? budget : DEFAULT_APT_BUDGET_MS,
    },
  };
}

/**
 * Run a fast path.
 * @returns the exit code, or null when the command needs the full CLI after all (an apt step that
 *   takes a restore point; nothing was read or written that the full CLI would do differently)
 */
export async function runFastPath(p: FastPath): Promise<number | null> {
  const out = (s: string): void => writeLine(process.stdout, s);
  const err = (s: string): void => writeLine(process.stderr, s);
  if (p.kind === 'version') {
    out(VERSION);
    return 0;
  }
  if (p.kind === 'agent-hook') {
    const io: HookIO = { readStdin: processStdin, out, err };
    return hookMain(p.argv, io, loadBundledFull);
  }
  return (await runAptStepWithoutCore(p.args, err)) ? 0 : null;
}
