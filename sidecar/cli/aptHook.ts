/**
 * The apt hook in the CLI (issue 15 item 6), as the apt branch of the `hook` commands
 * (sidecar/cli/hooks.ts):
 *
 *     agentkeep hook install apt [--agent NAME | --target T --store S…] [--apt-conf-dir DIR] [--timeout S] [--json]
 *     agentkeep hook remove apt [--apt-conf-dir DIR] [--json]
 *     agentkeep hook status [apt] [--apt-conf-dir DIR] [--json]
 *     agentkeep hook run apt --dpkg pre-invoke|pre-install|post-invoke [--agent NAME | --target T --store S…]
 *
 * (the last one is what the installed hook runs; see sidecar/hooks/aptConf.ts and aptRun.ts).
 */
import { existsSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { Option, type Command } from 'commander';
import { resolveAgent } from '../core/agents';
import type { CoreApi, CoreOptions } from '../core/service';
import { resolveStateDir } from '../core/state';
import {
  aptPaths,
  DEFAULT_APT_BUDGET_MS,
  DEFAULT_APT_CONF_DIR,
  installApt,
  removeApt,
  statusApt,
  type AptHookChange,
  type AptHookStatus,
} from '../hooks/aptConf';
import { APT_STEPS, runAptHook, type AptStep } from '../hooks/aptRun';
import { cliTargetArgs } from './actions';
import type { CliIO } from './index';
import { UsageError } from './usage';

/** What the apt hook commands need from the CLI's program. */
export interface AptHookCliDeps {
  io: CliIO;
  makeCore: (o: CoreOptions) => CoreApi;
  coreOpts: (cmd: Command) => CoreOptions;
  json: (cmd: Command) => boolean;
  print: (v: unknown) => void;
}

/** out/sidecar.js of this build (the bundle's own file; from source: the repository's out/). */
export function sidecarProgram(): string {
  const own = path.join(__dirname, 'sidecar.js');
  return existsSync(own) ? own : path.resolve(__dirname, '..', '..', 'out', 'sidecar.js');
}

/** Root runs these: say so when someone else could change them. */
function writableByOthers(files: string[]): string[] {
  const out: string[] = [];
  for (const f of files) {
    try {
      const st = statSync(f);
      if (st.uid !== 0 || (st.mode & 0o022) !== 0) out.push(f);
    } catch {
      /* missing: status says so */
    }
  }
  return out;
}

function changeText(c: AptHookChange): string {
  return [c.message, ...c.notes.map((n) => `Note: ${n}`)].join('\n');
}

function statusText(s: AptHookStatus): string {
  if (!s.installed) return `apt: no AgentKeep hook in ${path.dirname(s.conf)}.`;
  const st = s.settings!;
  const to = st.agent ? `agent ${st.agent}` : `${st.target}${st.stores?.length ? ` with ${st.stores.join(', ')}` : ''}`;
  const lines = [
    `apt: installed (${s.conf}, entry ${s.script}); restore points of ${to}, state dir ${st.stateDir}, ` +
      `time box ${st.budgetMs / 1000} s per step.`,
  ];
  for (const p of s.problems) lines.push(`Problem: ${p}.`);
  return lines.join('\n');
}

/** The apt-only options of `hook install|remove|status|run` (sidecar/cli/hooks.ts adds them). */
export function aptOptions(): { confDir: Option; timeout: Option; dpkg: Option; budget: Option } {
  return {
    confDir: new Option(
      '--apt-conf-dir <dir>',
      `apt: APT's configuration parts directory (default ${DEFAULT_APT_CONF_DIR})`,
    ),
    timeout: new Option(
      '--timeout <seconds>',
      `apt: time box of each hook step (default ${DEFAULT_APT_BUDGET_MS / 1000}); ` +
        'apt goes on without a restore point after it',
    ),
    dpkg: new Option('--dpkg <step>', 'apt: which DPkg hook calls it').choices([...APT_STEPS]),
    budget: new Option('--budget-ms <ms>', 'apt: time box of this step').hideHelp(),
  };
}

/** `hook install apt`: resolve the agent (or target) now, write the two files. */
export async function aptInstall(
  d: AptHookCliDeps,
  cmd: Command,
  o: { agent?: string; target?: string; store: string[]; aptConfDir?: string; timeout?: string },
): Promise<void> {
  const asJson = d.json(cmd);
  const stateDir = resolveStateDir(d.coreOpts(cmd).stateDir);
  const secs = o.timeout === undefined ? DEFAULT_APT_BUDGET_MS / 1000 : Number(o.timeout);
  if (!Number.isFinite(secs) || secs < 1 || secs > 120) {
    throw new UsageError(
      'InvalidParams',
      `--timeout must be 1 to 120 seconds, got "${o.timeout}".`,
      'Give e.g. --timeout 4.',
    );
  }
  const r = await resolveAgent(stateDir, { agent: o.agent, target: o.target, stores: o.store });
  if (!r) {
    throw new UsageError(
      'InvalidParams',
      'hook install apt needs --agent NAME or --target T, and no agents are set up.',
      'Name the agent once: agentkeep agent add NAME --target T [--store S].',
    );
  }
  const sidecar = sidecarProgram();
  const change = await installApt(
    {
      node: process.execPath,
      sidecar,
      stateDir,
      ...(r.via === 'target' ? { target: r.target, ...(r.stores ? { stores: r.stores } : {}) } : { agent: r.name }),
      budgetMs: Math.round(secs * 1000),
    },
    o.aptConfDir,
  );
  const loose = writableByOthers([process.execPath, sidecar, stateDir]);
  if (loose.length) {
    change.notes.push(
      `apt runs the hook as root, and these are not root-only: ${loose.join(', ')}. ` +
        'Whoever can write them can run code as root during apt; install AgentKeep root-owned for the apt hook.',
    );
  }
  if (asJson) d.print(change);
  else d.io.out(changeText(change));
}

/** `hook remove apt`. */
export async function aptRemove(d: AptHookCliDeps, cmd: Command, o: { aptConfDir?: string }): Promise<void> {
  const asJson = d.json(cmd);
  const change = await removeApt(o.aptConfDir);
  if (asJson) d.print(change);
  else d.io.out(changeText(change));
}

/** What `hook status` says about apt (text), and its JSON. */
export async function aptStatus(o: { aptConfDir?: string }): Promise<{ text: string; status: AptHookStatus }> {
  const status = await statusApt(o.aptConfDir);
  return { text: statusText(status), status };
}

/** Whether `hook status` without a kind reports apt too: a conf dir was given, or it is installed in the default one. */
export function aptStatusWanted(o: { aptConfDir?: string }): boolean {
  return o.aptConfDir !== undefined || existsSync(aptPaths().conf);
}

/** `hook run apt --dpkg STEP`: what the installed entry runs; never fails. */
export async function aptRun(
  d: AptHookCliDeps,
  cmd: Command,
  o: { dpkg?: AptStep; agent?: string; target?: string; store: string[]; budgetMs?: string },
): Promise<void> {
  if (!o.dpkg)
    throw new UsageError('InvalidParams', 'hook run apt needs --dpkg STEP.', `Give one of ${APT_STEPS.join(', ')}.`);
  const stateDir = resolveStateDir(d.coreOpts(cmd).stateDir);
  const budgetMs = Number(o.budgetMs) > 0 ? Number(o.budgetMs) : DEFAULT_APT_BUDGET_MS;
  await runAptHook(
    {
      step: o.dpkg,
      stateDir,
      ...(o.agent ? { agent: o.agent } : {}),
      ...(o.target ? { target: o.target } : {}),
      stores: o.store,
      budgetMs,
    },
    {
      makeCore: d.makeCore,
      readStdin: readAllStdin,
      err: (l) => d.io.err(l),
      targetArgs: (t) => cliTargetArgs(t, stateDir),
    },
  );
}

/** All of stdin (the package list APT writes; it closes the pipe when done). */
function readAllStdin(): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    process.stdin.on('data', (c: Buffer) => chunks.push(c));
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    process.stdin.on('error', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}
