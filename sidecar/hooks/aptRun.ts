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
 * Records: <stateDir>/hooks/apt/<key>.json (./aptRecords.ts keeps them, with no core code, so the
 * steps that take no restore point run from the launcher alone: sidecar/cli/fast.ts).
 */
import type { CoreApi, CoreOptions } from '../core/service';
import { resolveAgent } from '../core/agents';
import { call } from '../core/dispatch';
import { writeJsonAtomic } from '../core/fsutil';
import {
  aptSummary,
  clip,
  openAptRecord,
  parseAptPackageList,
  timeBoxed,
  type AptRecord,
  type AptRunArgs,
} from './aptRecords';

export {
  APT_STEPS,
  aptProcess,
  aptSummary,
  parseAptPackageList,
  type AptChange,
  type AptPackageList,
  type AptRunArgs,
  type AptStep,
} from './aptRecords';

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

/**
 * Run one step of the apt hook. Never throws: problems are one line through `deps.err`.
 * @returns a promise that settles within about the budget (a create still running then is aborted)
 */
export function runAptHook(args: AptRunArgs, deps: AptRunDeps): Promise<void> {
  return timeBoxed(args, deps.err, (signal) => step(args, deps, signal));
}

async function step(args: AptRunArgs, deps: AptRunDeps, signal: AbortSignal): Promise<void> {
  const list = args.step === 'pre-install' ? parseAptPackageList(await deps.readStdin()) : undefined;
  const opened = await openAptRecord(args, list);
  if (!opened) return;
  const { file } = opened;
  let rec: AptRecord = opened.rec;
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
