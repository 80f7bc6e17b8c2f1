/**
 * The command lines the launcher (sidecar/bin.ts) runs through the slim create bundle (out/create.js,
 * sidecar/createMain.ts) instead of the full CLI, so a one-shot `restore-point create` of a `dir:`
 * target loads only what it needs (issue 14, peak memory; BENCHMARKS.md "Slim create"):
 *
 *     agentkeep [--state-dir D] restore-point create [--target dir:/abs/path | --agent NAME] [--label L]
 *         [--kind manual|config-edit|update|hook] [--store KIND:/abs/path]… [--important] [--reuse] [--json]
 *
 * Options in any order, each once (--store repeatable), values as `--opt V` or `--opt=V`; without
 * --target and --agent the default agent's (as the full CLI). Anything
 * else (another command, --vmstate, --help, `--`, an unknown or repeated option, a missing
 * or empty value, a value that starts with `-`, a target that is not `dir:`, a store that is not on
 * this machine, AGENTKEEP_PLUGINS set) is left to the full CLI, which then says what is wrong or runs
 * it as before. The slim create itself hands over to the full CLI before doing anything when the
 * target or stores a named agent resolves to are not of that kind (createMain.ts).
 * `AGENTKEEP_SLIM_CREATE=0` (false, off, no) sends every command line to the full CLI; a value not
 * on/off-like warns once (core/envWarn.ts) and the slim create stays on. Only core/envWarn.ts is
 * imported (the launcher loads it anyway), so the launcher's other paths pay nothing for this module.
 */
import { envSwitch } from '../core/envWarn';

/** The options of a slim create, as the full CLI's `restore-point create` action gets them. */
export interface SlimCreateArgs {
  /** --state-dir as given (absent: AGENTKEEP_STATE_DIR, else the default). */
  stateDir?: string;
  /** --target (absent: the agent's). */
  target?: string;
  /** --agent (absent with no --target: the default agent). */
  agent?: string;
  label?: string;
  kind: 'manual' | 'config-edit' | 'update' | 'hook';
  /** --store values in order ([] when none). */
  stores: string[];
  important: boolean;
  reuse: boolean;
  json: boolean;
}

const KINDS = new Set(['manual', 'config-edit', 'update', 'hook']);
const VALUE_OPTIONS = new Set(['--target', '--agent', '--label', '--kind', '--store']);
const FLAGS = new Set(['--important', '--reuse', '--json']);

/** Whether `target` is a `dir:` target the slim create serves (the dir backend's form: an absolute path). */
export function isSlimTarget(target: string): boolean {
  return /^dir:\//i.test(target.trim());
}

/** Whether store string `store` names a store on this machine (`<kind>:/abs/path`, no ssh://, qga:, pve-agent://). */
export function isSlimStore(store: string): boolean {
  return /^[A-Za-z][A-Za-z0-9_-]*:\//.test(store) && !/^[^:]*:\/\//.test(store);
}

/**
 * The slim create's options for a command line, or undefined for the full CLI (see the module doc).
 * @param argv the arguments after `node sidecar.js`
 */
export function slimCreateArgs(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): SlimCreateArgs | undefined {
  if (env.AGENTKEEP_PLUGINS || !envSwitch(env, 'AGENTKEEP_SLIM_CREATE', true, 'the slim create')) return undefined;
  let i = 0;
  const seen = new Map<string, string[]>();
  /** Read `--opt V` / `--opt=V` at i (one of `allowed`); false when it is not one or looks odd. */
  const valueOption = (allowed: ReadonlySet<string>): boolean => {
    const a = argv[i];
    const eq = a.indexOf('=');
    const [flag, inline] = eq > 0 ? [a.slice(0, eq), a.slice(eq + 1)] : [a, undefined];
    if (!allowed.has(flag)) return false;
    const value = inline ?? argv[i + 1];
    if (value === undefined || value.trim() === '' || (inline === undefined && value.startsWith('-'))) return false;
    if (flag !== '--store' && seen.has(flag)) return false;
    seen.set(flag, [...(seen.get(flag) ?? []), value]);
    i += inline === undefined ? 2 : 1;
    return true;
  };
  while (i < argv.length && argv[i].startsWith('-')) if (!valueOption(new Set(['--state-dir']))) return undefined;
  if (argv[i] !== 'restore-point' || argv[i + 1] !== 'create') return undefined;
  i += 2;
  while (i < argv.length) {
    const a = argv[i];
    if (FLAGS.has(a)) {
      if (seen.has(a)) return undefined;
      seen.set(a, []);
      i++;
    } else if (!valueOption(VALUE_OPTIONS)) return undefined;
  }
  const one = (flag: string): string | undefined => seen.get(flag)?.[0];
  const target = one('--target');
  const kind = one('--kind') ?? 'manual';
  const stores = seen.get('--store') ?? [];
  if ((target !== undefined && !isSlimTarget(target)) || !KINDS.has(kind) || !stores.every(isSlimStore))
    return undefined;
  return {
    ...(seen.has('--state-dir') ? { stateDir: one('--state-dir') } : {}),
    ...(target !== undefined ? { target } : {}),
    ...(seen.has('--agent') ? { agent: one('--agent') } : {}),
    ...(seen.has('--label') ? { label: one('--label') } : {}),
    kind: kind as SlimCreateArgs['kind'],
    stores,
    important: seen.has('--important'),
    reuse: seen.has('--reuse'),
    json: seen.has('--json'),
  };
}
