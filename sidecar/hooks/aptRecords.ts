/**
 * The apt hook's book-keeping (./aptRun.ts has the restore points): the steps, APT's package list, the
 * apt process a hook runs for, and the record of each apt command in <stateDir>/hooks/apt/<key>.json.
 * No core code and no zod here: the `agentkeep` launcher (sidecar/bin.ts, out/sidecar.js) runs the
 * steps that take no restore point (pre-invoke; post-invoke without a pre) with this module alone, so
 * they cost about a Node start; ./aptRun.ts runs the same functions for the other steps.
 */
import { promises as fs, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { asAgentKeepError } from '../core/errors';
import { readJsonIfExists, writeJsonAtomic } from '../core/fsutil';

/** The three steps. */
export const APT_STEPS = ['pre-invoke', 'pre-install', 'post-invoke'] as const;
export type AptStep = (typeof APT_STEPS)[number];

/** What the hook was called with. */
export interface AptRunArgs {
  step: AptStep;
  stateDir: string;
  agent?: string;
  target?: string;
  stores: string[];
  /** Time box of this step, in ms. */
  budgetMs: number;
}

/** One package change from APT's list. */
export interface AptChange {
  action: 'install' | 'upgrade' | 'downgrade' | 'reinstall' | 'remove' | 'configure';
  name: string;
  /** The version it had ('' when none). */
  from: string;
  /** The version it gets ('' for a removal). */
  to: string;
}

/** The package list of DPkg::Pre-Install-Pkgs (version 2 or 3), parsed. */
export interface AptPackageList {
  version: number;
  /** apt's command line (CommandLine::AsString in the config dump), when given. */
  command?: string;
  changes: AptChange[];
}

/**
 * Parse what DPkg::Pre-Install-Pkgs gets on stdin with `Version "3"` (or 2): `VERSION N`, the
 * configuration as `key=value` lines, a blank line, then one line per package action:
 * v3 `name oldver oldarch oldmulti cmp newver newarch newmulti action`, v2 `name oldver cmp newver
 * action`; versions `-` when none; action a .deb path, `**CONFIGURE**` or `**REMOVE**` (apt.conf(5)).
 * Version 1 (only .deb paths) gives no changes.
 */
export function parseAptPackageList(text: string): AptPackageList {
  const lines = text.split('\n');
  const m = /^VERSION (\d+)$/.exec(lines[0]?.trim() ?? '');
  if (!m) return { version: 1, changes: [] };
  const version = Number(m[1]);
  let i = 1;
  let command: string | undefined;
  for (; i < lines.length && lines[i].trim() !== ''; i++) {
    const l = lines[i];
    if (l.startsWith('CommandLine::AsString=')) {
      const raw = l.slice('CommandLine::AsString='.length);
      try {
        command = decodeURIComponent(raw);
      } catch {
        command = raw;
      }
    }
  }
  const changes: AptChange[] = [];
  const installed = new Set<string>();
  for (const l of lines.slice(i + 1)) {
    const f = l.trim().split(/\s+/);
    if (f.length < 5) continue;
    const [name, oldVer, cmp, newVer, action] =
      version >= 3 && f.length >= 9 ? [f[0], f[1], f[4], f[5], f[8]] : [f[0], f[1], f[2], f[3], f[4]];
    const from = oldVer === '-' ? '' : oldVer;
    const to = newVer === '-' ? '' : newVer;
    if (action === '**REMOVE**') changes.push({ action: 'remove', name, from, to: '' });
    else if (action === '**CONFIGURE**') {
      if (!installed.has(name)) changes.push({ action: 'configure', name, from, to });
    } else {
      installed.add(name);
      const verb = !from ? 'install' : cmp === '<' ? 'upgrade' : cmp === '>' ? 'downgrade' : 'reinstall';
      changes.push({ action: verb, name, from, to });
    }
  }
  return { version, ...(command ? { command } : {}), changes };
}

/** The reason text of a package list: "apt: install hello 2.10-3; upgrade curl 7.88 -> 8.1; remove foo". */
export function aptSummary(changes: readonly AptChange[], max = 200): string {
  if (!changes.length) return 'apt: no package changes listed';
  const order: AptChange['action'][] = ['install', 'upgrade', 'downgrade', 'reinstall', 'remove', 'configure'];
  const parts: string[] = [];
  for (const a of order) {
    const of = changes.filter((c) => c.action === a);
    if (!of.length) continue;
    const item = (c: AptChange): string =>
      a === 'upgrade' || a === 'downgrade'
        ? `${c.name} ${c.from} -> ${c.to}`
        : a === 'remove'
          ? c.name
          : `${c.name} ${c.to}`.trim();
    parts.push(`${a} ${of.map(item).join(', ')}`);
  }
  const s = `apt: ${parts.join('; ')}`;
  return s.length > max ? `${s.slice(0, max - 20).replace(/[ ,;]+\S*$/, '')} … (${changes.length} packages)` : s;
}

/** A process as /proc/<pid>/stat tells it. */
interface Proc {
  pid: number;
  ppid: number;
  comm: string;
  /** Start time in clock ticks since boot (identifies the process together with the pid). */
  start: string;
}

function readProc(pid: number): Proc | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    const rest = stat.slice(close + 2).split(' ');
    return { pid, ppid: Number(rest[1]), comm, start: rest[19] };
  } catch {
    return undefined;
  }
}

/** Programs between the apt process and this hook: the sh of apt's system(), the entry script, timeout, node. */
const BETWEEN = new Set(['sh', 'dash', 'bash', 'timeout', 'node', 'env', 'agentkeep-apt-h']);

/** The apt process this hook runs for, with its command line; undefined without /proc. */
export function aptProcess(from = process.ppid): { pid: number; start: string; command: string } | undefined {
  let p = readProc(from);
  while (p && BETWEEN.has(p.comm) && p.ppid > 1) p = readProc(p.ppid);
  if (!p) return undefined;
  // apt runs Pre-Invoke commands from a fork of itself: go up to the apt process proper
  for (let up = readProc(p.ppid); up && up.comm === p.comm && up.pid > 1; up = readProc(up.ppid)) p = up;
  let command = p.comm;
  try {
    command = readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ') || p.comm;
  } catch {
    /* gone already */
  }
  return { pid: p.pid, start: p.start, command };
}

/** The record of one apt command. */
export interface AptRecord {
  key: string;
  aptPid: number;
  aptStart: string;
  /** apt's command line. */
  command: string;
  startedAt: string;
  target?: string;
  /** The stores the pre captured (the post captures the same). */
  stores?: string[];
  pre?: string;
  post?: string;
  /** The reason text of the pre. */
  summary?: string;
  /** The named agent the restore points are of, if any. */
  agent?: string;
}

export function recordsDir(stateDir: string): string {
  return path.join(stateDir, 'hooks', 'apt');
}

/** Records of apt commands that ended (their process is gone or is another one now) are dropped. */
async function sweep(stateDir: string): Promise<void> {
  const dir = recordsDir(stateDir);
  const names = await fs.readdir(dir).catch(() => [] as string[]);
  for (const n of names.filter((x) => x.endsWith('.json'))) {
    const r = await readJsonIfExists<AptRecord>(path.join(dir, n)).catch(() => undefined);
    const alive = r && readProc(r.aptPid)?.start === r.aptStart;
    if (!alive) await fs.rm(path.join(dir, n), { force: true });
  }
}

export function clip(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** The record file of the apt command this hook runs for, with its key and the apt process. */
export function aptRecordFile(stateDir: string): {
  key: string;
  file: string;
  apt: ReturnType<typeof aptProcess>;
} {
  const apt = aptProcess();
  const key = apt ? `${apt.pid}-${apt.start}` : `ppid-${process.ppid}`;
  return { key, file: path.join(recordsDir(stateDir), `${key}.json`), apt };
}

/**
 * The book-keeping every step starts with: pre-invoke drops the records of ended apt commands; the
 * record of this apt command is read, and made when missing (not by post-invoke).
 * @param list pre-install's package list
 * @returns the record and its file when the step goes on to a restore point (pre-install, post-invoke),
 *   undefined when the step is done (pre-invoke; post-invoke without a record; an unusable state dir
 *   outside pre-install)
 * @throws Error naming the unusable state dir (pre-install only)
 */
export async function openAptRecord(
  args: AptRunArgs,
  list: AptPackageList | undefined,
): Promise<{ rec: AptRecord; file: string } | undefined> {
  const { key, file, apt } = aptRecordFile(args.stateDir);
  const unusable = (e: unknown): Error =>
    new Error(`the state dir ${args.stateDir} is not usable (${(e as Error).message})`);
  let rec: AptRecord | undefined;
  try {
    if (args.step === 'pre-invoke') await sweep(args.stateDir);
    rec = await readJsonIfExists<AptRecord>(file);
  } catch (e) {
    // pre-invoke only keeps books, and post-invoke has no pre to pair with: pre-install says what is wrong
    if (args.step !== 'pre-install') return undefined;
    throw unusable(e);
  }
  if (args.step === 'post-invoke' && !rec) return undefined;
  if (!rec) {
    rec = {
      key,
      aptPid: apt?.pid ?? process.ppid,
      aptStart: apt?.start ?? '',
      command: list?.command ?? apt?.command ?? 'apt',
      startedAt: new Date().toISOString(),
    };
    try {
      await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
      await writeJsonAtomic(file, rec, { durable: false });
    } catch (e) {
      if (args.step === 'pre-invoke') return undefined;
      throw unusable(e);
    }
  }
  if (args.step === 'pre-invoke') return undefined;
  return { rec, file };
}

/**
 * Run one step's work within its time box. Never throws: a failure or the time box is one line
 * through `err`.
 * @returns a promise that settles within about the budget (work still running then is aborted through its signal)
 */
export async function timeBoxed(
  args: AptRunArgs,
  err: (line: string) => void,
  work: (signal: AbortSignal) => Promise<void>,
): Promise<void> {
  const ctl = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const budget = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => {
      ctl.abort(new Error('time box'));
      // give the aborted create a moment to clean up, then stop waiting for it
      setTimeout(() => resolve('late'), 1000).unref();
    }, args.budgetMs);
    timer.unref();
  });
  const done = work(ctl.signal).then(
    () => 'done' as const,
    (e: unknown) => {
      const why = ctl.signal.aborted ? `it took longer than ${args.budgetMs / 1000} s` : asAgentKeepError(e).oneLine();
      err(`agentkeep: apt hook (${args.step}): no restore point: ${why}; apt continues without it.`);
      return 'failed' as const;
    },
  );
  const r = await Promise.race([done, budget]);
  clearTimeout(timer);
  if (r === 'late')
    err(`agentkeep: apt hook (${args.step}): still busy after ${args.budgetMs / 1000} s; apt continues without it.`);
}

/**
 * The steps that take no restore point, run without the core (the launcher's fast path): pre-invoke,
 * and post-invoke when this apt command's record has no pre to pair with. Same code and messages as
 * ./aptRun.ts runAptHook for them.
 * @returns true when the step is done; false when it needs runAptHook (pre-install; post-invoke with a pre)
 */
export async function runAptStepWithoutCore(args: AptRunArgs, err: (line: string) => void): Promise<boolean> {
  if (args.step === 'pre-install') return false;
  if (args.step === 'post-invoke') {
    const rec = await readJsonIfExists<AptRecord>(aptRecordFile(args.stateDir).file).catch(() => undefined);
    // with a pre (and its target) the post restore point is due; else runAptHook would return at once
    if (rec?.pre && rec.target) return false;
    return true;
  }
  await timeBoxed(args, err, async () => {
    await openAptRecord(args, undefined);
  });
  return true;
}
