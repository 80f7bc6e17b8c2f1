/**
 * The CLI's rendering of next actions (NextAction in sidecar/protocol): the one place that maps a
 * protocol method and its params to the equivalent `agentkeep …` command line and flags, and the
 * one-line text of an error or warning that carries actions ("<message> <hint> <Title> with: <command>
 * — or <title> with: <command>", no punctuation touching a command).
 */
import * as path from 'node:path';
import { Methods, methodKey, type MethodName, type NextAction, type ParamsOf } from '../protocol';
import { resolveStateDir } from '../core/state';
import { shellQuote as q } from './format';

/** How command lines are rendered. */
export interface RenderOptions {
  /** The state dir the CLI uses (absolute); `--state-dir` is added when it is not the default one. */
  stateDir: string;
  /**
   * Add `--yes` to restore and delete (default true): a printed next action must work as printed,
   * also where no terminal can confirm (a script, an editor's terminal task).
   */
  yes?: boolean;
}

/**
 * The `--target` (and, when the state dir is not the default one, `--state-dir`) arguments that a
 * printed command needs to reach the same journal, e.g. `--target dir:/x --state-dir /s`.
 */
export function cliTargetArgs(targetSpec: string, stateDir: string, env: NodeJS.ProcessEnv = process.env): string {
  const { AGENTKEEP_STATE_DIR: _ignored, ...rest } = env;
  const def = resolveStateDir(undefined, rest);
  return `--target ${q(targetSpec)}` + (path.resolve(stateDir) === def ? '' : ` --state-dir ${q(stateDir)}`);
}

/** A duration in ms as --min-age takes it (2d, 1h, 30m, 90s, 250ms, 0). */
function duration(ms: number): string {
  if (ms === 0) return '0';
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/** `--store S` for each store. */
function storeArgs(stores: readonly string[] | undefined): string[] {
  return (stores ?? []).map((s) => `--store ${q(s)}`);
}

/** The argv (after `agentkeep`) of one method call, or undefined when the CLI has no command for it. */
function argv<K extends MethodName>(
  key: K,
  params: ParamsOf<K>,
  o: Required<RenderOptions>,
): Array<string | false | undefined> | undefined {
  const t = (target: string): string => cliTargetArgs(target, o.stateDir);
  // commands without a target still need the state dir when it is not the default one
  const sd = (): string | undefined => /--state-dir .*$/.exec(cliTargetArgs('x', o.stateDir))?.[0];
  const yes = o.yes && '--yes';
  // one case per method the CLI has a command for (keep, compare, readFile, status, risk.scan have none)
  switch (key) {
    case 'restorePointRestore': {
      const p = params as ParamsOf<'restorePointRestore'>;
      return [
        'restore-point restore',
        q(p.id),
        t(p.target),
        `--scope ${p.scope}`,
        ...storeArgs(p.stores),
        p.start && '--start',
        p.noUndoPoint && '--no-undo-point',
        // (a restore without an undo point always says --yes: the action is the confirmation asked for)
        p.noUndoPoint && p.confirmed ? '--yes' : yes,
      ];
    }
    case 'restorePointList':
      return ['restore-point list', t((params as ParamsOf<'restorePointList'>).target)];
    case 'restorePointDelete': {
      const p = params as ParamsOf<'restorePointDelete'>;
      return ['restore-point delete', q(p.id), t(p.target), yes];
    }
    case 'restorePointPrune': {
      const p = params as ParamsOf<'restorePointPrune'>;
      return [
        'restore-point prune',
        t(p.target),
        p.keep !== undefined && `--keep ${p.keep}`,
        p.keepImportant !== undefined && `--keep-important ${p.keepImportant}`,
        p.minAgeMs !== undefined && `--min-age ${duration(p.minAgeMs)}`,
        p.dryRun && '--dry-run',
      ];
    }
    case 'restorePointCreate': {
      const p = params as ParamsOf<'restorePointCreate'>;
      return [
        'restore-point create',
        t(p.target),
        p.label !== undefined && `--label ${q(p.label)}`,
        p.kind && p.kind !== 'manual' && `--kind ${p.kind}`,
        ...storeArgs(p.stores),
        p.important && '--important',
        p.vmstate && '--vmstate',
      ];
    }
    case 'restorePointDiff': {
      const p = params as ParamsOf<'restorePointDiff'>;
      return ['restore-point diff', q(p.id), t(p.target), ...storeArgs(p.stores)];
    }
    case 'restorePointLabel': {
      const p = params as ParamsOf<'restorePointLabel'>;
      const important = p.important === true ? '--important' : p.important === false && '--not-important';
      return ['restore-point label', q(p.id), t(p.target), p.label !== undefined && `--label ${q(p.label)}`, important];
    }
    case 'restorePointUsage':
      return ['restore-point usage', t((params as ParamsOf<'restorePointUsage'>).target)];
    case 'memoryList':
      return ['memory list', ...storeArgs((params as ParamsOf<'memoryList'>).stores)];
    case 'memoryShow': {
      const p = params as ParamsOf<'memoryShow'>;
      return ['memory show', ...storeArgs(p.stores), `--entry ${q(p.entry)}`];
    }
    case 'memoryEdit': {
      const p = params as ParamsOf<'memoryEdit'>;
      return [
        'memory edit',
        ...storeArgs([p.store]),
        `--entry ${q(p.entry)}`,
        `--text ${q(p.text)}`,
        p.expectedHash && `--expected-hash ${p.expectedHash}`,
      ];
    }
    case 'memoryRemove': {
      const p = params as ParamsOf<'memoryRemove'>;
      return [
        'memory remove',
        ...storeArgs([p.store]),
        `--entry ${q(p.entry)}`,
        p.expectedHash && `--expected-hash ${p.expectedHash}`,
      ];
    }
    case 'memoryAdd': {
      const p = params as ParamsOf<'memoryAdd'>;
      const file = p.file && `--file ${q(p.file)}`;
      return [
        'memory add',
        ...storeArgs([p.store]),
        file,
        `--text ${q(p.text)}`,
        p.expectedHash && `--expected-hash ${p.expectedHash}`,
      ];
    }
    case 'memoryLint': {
      const p = params as ParamsOf<'memoryLint'>;
      return [
        'memory lint',
        ...storeArgs(p.stores),
        p.target && t(p.target),
        p.embeddings && `--embeddings-url ${q(p.embeddings.url)} --embeddings-model ${q(p.embeddings.model)}`,
      ];
    }
    case 'memoryDiff': {
      const p = params as ParamsOf<'memoryDiff'>;
      return ['memory diff', `--from ${q(p.from)}`, p.to && `--to ${q(p.to)}`, t(p.target), ...storeArgs(p.stores)];
    }
    case 'agentList':
      return ['agent list', sd()];
    case 'agentAdd': {
      const p = params as ParamsOf<'agentAdd'>;
      return [
        'agent add',
        q(p.name),
        `--target ${q(p.target)}`,
        ...storeArgs(p.stores),
        p.failClosed && '--fail-closed',
        p.replace && '--replace',
        sd(),
      ];
    }
    case 'agentRemove':
      return ['agent remove', q((params as ParamsOf<'agentRemove'>).name), sd()];
    case 'agentSetDefault':
      return ['agent default', q((params as ParamsOf<'agentSetDefault'>).name), sd()];
    case 'agentDiscover': {
      const p = params as ParamsOf<'agentDiscover'>;
      return ['agent discover', `--target ${q(p.target)}`, p.tag !== undefined && `--tag ${q(p.tag)}`];
    }
    default:
      return undefined;
  }
}

/**
 * The `agentkeep …` command line that does what `a` does, e.g. `agentkeep restore-point restore
 * ak_… --target dir:/x --scope both --yes`; undefined for a front-end command (openSettings,
 * showLog), a method the CLI has no command for, or params that do not fit the method.
 */
export function commandLine(a: NextAction, opts: RenderOptions): string | undefined {
  const key = a.method ? methodKey(a.method) : undefined;
  if (!key) return undefined;
  const parsed = Methods[key].params.safeParse(a.params ?? {});
  if (!parsed.success) return undefined;
  const args = argv(key, parsed.data as ParamsOf<typeof key>, { yes: true, ...opts });
  return args ? ['agentkeep', ...args.filter((x): x is string => !!x)].join(' ') : undefined;
}

/**
 * The actions as one line: "Undo with: <command> — or finish the restore with: <command>".
 * Actions without a command line are left out; empty when none has one.
 */
export function actionsText(actions: readonly NextAction[] | undefined, opts: RenderOptions): string {
  const parts: string[] = [];
  for (const a of actions ?? []) {
    const cmd = commandLine(a, opts);
    if (!cmd) continue;
    const title = parts.length ? a.title.charAt(0).toLowerCase() + a.title.slice(1) : a.title;
    parts.push(`${title} with: ${cmd}`);
  }
  // No punctuation touches a command line (a pasted `--yes.` or `--state-dir /s.` would be another
  // argument): actions are separated by a spaced dash and the last command ends the text.
  return parts.join(' — or ');
}

/**
 * An error or warning on one line: its message, its hint, then its actions as command lines (last,
 * so that the last command ends the line and pastes as printed).
 */
export function describeProblem(
  p: { message: string; hint?: string; actions?: readonly NextAction[] },
  opts: RenderOptions,
): string {
  return [p.message, p.hint, actionsText(p.actions, opts)].filter(Boolean).join(' ');
}
