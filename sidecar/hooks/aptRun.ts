/**
 * `agentkeep hook run apt --dpkg pre-invoke|pre-install|post-invoke`: what the apt hook entry
 * (./aptConf.ts) runs at each of APT's DPkg hooks. One pre/post pair per apt command:
 *
 *   pre-invoke   (DPkg::Pre-Invoke, before each dpkg run) opens the record of this apt command, keyed
 *                on the apt process (the first ancestor that is not a shell, `timeout` or node, and not
 *                a fork of the same program; pid + start time, so a reused pid is another command),
 *                and drops the records of apt commands that have ended.
 *   pre-install  (DPkg::Pre-Install-Pkgs, right after, still before dpkg; the package list in
 *                APT's version 3 format on stdin) takes the pre restore point, with the packages and
 *                actions as the reason ("apt: install hello 2.10-3"). A later dpkg run of the same
 *                apt command takes none.
 *   post-invoke  (DPkg::Post-Invoke, after each dpkg run) takes the post restore point, paired with
 *                the pre. After a later dpkg run of the same apt command the new post replaces the
 *                earlier one, so each apt command leaves one pair.
 *
 * It never makes apt fail or hang: every step is time-boxed (the create is aborted at the budget and
 * leaves nothing half-made), any problem is one line on stderr, and it always returns normally.
 * Records: <stateDir>/hooks/apt/<key>.json.
 */
import { promises as fs, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { resolveAgent } from '../core/agents';
import { call } from '../core/dispatch';
import { asAgentKeepError } from '../core/errors';
import { readJsonIfExists, writeJsonAtomic } from '../core/fsutil';
import type { CoreApi, CoreOptions } from '../core/service';

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

/** What the hook needs around it (replaceable in tests). */
export interface AptRunDeps {
  makeCore: (o: CoreOptions) => CoreApi;
  /** All of stdin (the package list of pre-install). */
  readStdin: () => Promise<string>;
  /** One line on stderr. */
  err: (line: string) => void;
  /** The `--target … [--state-dir …]` of a printed restore command. */
  targetArgs: (target: string) => string;
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
interface AptRecord {
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

function recordsDir(stateDir: string): string {
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

function clip(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/**
 * Run one step of the apt hook. Never throws: problems are one line through `deps.err`.
 * @returns a promise that settles within about the budget (a create still running then is aborted)
 */
export async function runAptHook(args: AptRunArgs, deps: AptRunDeps): Promise<void> {
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
  const work = step(args, deps, ctl.signal).then(
    () => 'done' as const,
    (e: unknown) => {
      const why = ctl.signal.aborted ? `it took longer than ${args.budgetMs / 1000} s` : asAgentKeepError(e).oneLine();
      deps.err(`agentkeep: apt hook (${args.step}): no restore point: ${why}; apt continues without it.`);
      return 'failed' as const;
    },
  );
  const r = await Promise.race([work, budget]);
  clearTimeout(timer);
  if (r === 'late')
    deps.err(
      `agentkeep: apt hook (${args.step}): still busy after ${args.budgetMs / 1000} s; apt continues without it.`,
    );
}

async function step(args: AptRunArgs, deps: AptRunDeps, signal: AbortSignal): Promise<void> {
  const list = args.step === 'pre-install' ? parseAptPackageList(await deps.readStdin()) : undefined;
  const apt = aptProcess();
  const key = apt ? `${apt.pid}-${apt.start}` : `ppid-${process.ppid}`;
  const file = path.join(recordsDir(args.stateDir), `${key}.json`);
  const unusable = (e: unknown): Error =>
    new Error(`the state dir ${args.stateDir} is not usable (${(e as Error).message})`);
  let rec: AptRecord | undefined;
  try {
    if (args.step === 'pre-invoke') await sweep(args.stateDir);
    rec = await readJsonIfExists<AptRecord>(file);
  } catch (e) {
    // pre-invoke only keeps books, and post-invoke has no pre to pair with: pre-install says what is wrong
    if (args.step !== 'pre-install') return;
    throw unusable(e);
  }
  if (args.step === 'post-invoke' && !rec) return;
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
      if (args.step === 'pre-invoke') return;
      throw unusable(e);
    }
  }
  if (args.step === 'pre-invoke') return;
  const core = deps.makeCore({ stateDir: args.stateDir, signal, lockTimeoutMs: Math.max(500, args.budgetMs - 1500) });

  if (args.step === 'pre-install') {
    if (rec.pre) return; // a later dpkg run of the same apt command: its pre exists
    const r = await resolveAgent(args.stateDir, { agent: args.agent, target: args.target, stores: args.stores });
    if (!r) throw new Error('no agent is set up and the hook names no target (agentkeep agent add NAME --target T)');
    const summary = aptSummary(list?.changes ?? []);
    const command = list?.command ?? rec.command;
    const pre = await call(core, 'restorePointCreate', {
      target: r.target,
      ...(r.stores ? { stores: r.stores } : {}),
      kind: 'pre',
      label: clip(summary, 120),
      reason: { command, text: summary, origin: 'apt', ...(r.name ? { agent: r.name } : {}) },
    });
    const stores = pre.agent.map((a) => a.store);
    rec = { ...rec, command, target: r.target, stores, pre: pre.id, summary, ...(r.name ? { agent: r.name } : {}) };
    await writeJsonAtomic(file, rec, { durable: false });
    deps.err(`agentkeep: restore point ${pre.id} before ${summary}`);
    return;
  }

  // post-invoke
  const { pre: preId, target } = rec;
  if (!preId || !target) return; // no pre (it failed, and said so): nothing to pair with
  const old = rec.post;
  const post = await call(core, 'restorePointCreate', {
    target,
    stores: rec.stores ?? [],
    kind: 'post',
    pairOf: preId,
    label: clip(`After ${rec.summary ?? 'apt'}`, 120),
    reason: {
      command: rec.command,
      text: rec.summary ?? 'apt',
      origin: 'apt',
      ...(rec.agent ? { agent: rec.agent } : {}),
    },
  });
  rec = { ...rec, post: post.id };
  await writeJsonAtomic(file, rec, { durable: false });
  // a later dpkg run of the same apt command: the new post replaces the earlier one (one pair per command)
  if (old)
    await call(deps.makeCore({ stateDir: args.stateDir }), 'restorePointDelete', { target, id: old }).catch(
      () => undefined,
    );
  deps.err(
    `agentkeep: restore point ${post.id} after apt (pair of ${preId}); roll back with: ` +
      `agentkeep restore-point restore ${preId} ${deps.targetArgs(target)} --scope machine --yes`,
  );
}
