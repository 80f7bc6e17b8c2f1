/**
 * The slim `restore-point create` (issue 14, peak memory): out/create.js, which the launcher
 * (./bin.ts) loads instead of the full CLI (out/cli.js) for the command lines of
 * ./cli/slimCreate.ts, a one-shot create of a `dir:` target with stores on this machine. It runs the
 * same steps as the full CLI's `restore-point create` action (./cli/index.ts) with the same
 * functions, minus what that command line cannot use: no commander, no dispatch table, no servers,
 * no memory lint, no risk classifier, and in the bundle no Proxmox, QEMU or btrfs backend and no
 * ssh / guest-agent transport (esbuild.mjs leaves them out: ./slimStub.ts stands in for them).
 *
 *  1. The target and stores: --target and --store as given, else the named agent's (--agent, else
 *     the default agent: core/agents.ts resolveAgent, as the full CLI's --agent hook, cli/agents.ts).
 *     When the agent's target or a store is not one this bundle serves (not dir:, a remote store), it
 *     returns 'full' before doing anything and the launcher runs the full CLI.
 *  2. The params validated with the method's schema (core/params.ts, as `call`), the create through
 *     the core's create (core/create.ts), under the CLI's signal guard (cli/signals.ts).
 *  3. Output and errors through the functions the full CLI uses (cli/createOutput.ts, cli/errors.ts).
 *
 * The dir backend's lstat runs on the main thread here (machine/dir/statpool.ts preferMainThreadStat;
 * AGENTKEEP_STAT_WORKERS=1 turns the worker back on, and a value that is not on/off-like keeps the
 * full CLI's default, the workers on, with the full CLI's warning).
 */
import { resolveAgent, type ResolvedAgent } from './core/agents';
import { CoreContext } from './core/context';
import { createRestorePoint } from './core/create';
import { AgentKeepError } from './core/errors';
import { isSwitchValue } from './core/envWarn';
import { parseParams } from './core/params';
import { resolveStateDir } from './core/state';
import { describeTarget } from './core/target';
import type { RenderOptions } from './cli/actions';
import { cliTargetArgs } from './cli/actions';
import { printCreated } from './cli/createOutput';
import { reportCliError } from './cli/errors';
import type { CliIO } from './cli/index';
import { processIO } from './cli/io';
import { guardSignals } from './cli/signals';
import { isSlimStore, isSlimTarget, type SlimCreateArgs } from './cli/slimCreate';
import { UsageError } from './cli/usage';
import { preferMainThreadStat } from './machine/dir/statpool';

/**
 * Run the create of `a` (see the module doc).
 * @returns the exit code (0 ok, 1 failure, 2 usage error), or 'full' when the full CLI must run the
 *   command line instead (nothing was done)
 */
export async function runSlimCreate(a: SlimCreateArgs, io: CliIO = processIO()): Promise<number | 'full'> {
  // as the full CLI's root preAction: the state dir printed commands name
  const given = a.stateDir ?? (process.env.AGENTKEEP_STATE_DIR || undefined);
  const render = (): RenderOptions => {
    try {
      return { stateDir: resolveStateDir(given) };
    } catch {
      return { stateDir: given ?? resolveStateDir() };
    }
  };
  try {
    // as cli/agents.ts useNamedAgents for `restore-point create`
    let r: ResolvedAgent | undefined;
    try {
      r = await resolveAgent(resolveStateDir(a.stateDir), { agent: a.agent, target: a.target, stores: a.stores });
    } catch (e) {
      if (e instanceof AgentKeepError && (e.kind === 'InvalidParams' || e.kind === 'AgentNotFound'))
        throw new UsageError(e.kind, e.message, e.hint, e.actions);
      throw e;
    }
    if (!r) {
      throw new UsageError(
        'InvalidParams',
        'restore-point create needs --target T or --agent NAME, and no agents are set up.',
        'Add --target dir:/abs/path, or name the agent once: agentkeep agent add NAME --target T [--store S].',
      );
    }
    const stores = r.stores ?? [];
    if (!isSlimTarget(r.target) || !stores.every(isSlimStore)) return 'full';
    // one process, one create: lstat without the worker isolate (machine/dir/statpool.ts); a value of
    // AGENTKEEP_STAT_WORKERS that is not on/off-like keeps the full CLI's default (workers on), so its
    // warning says what the full CLI's says ("using the default: the stat workers on")
    if (isSwitchValue(process.env.AGENTKEEP_STAT_WORKERS)) preferMainThreadStat();
    const guard = guardSignals('create', io, cliTargetArgs(r.target, render().stateDir));
    let rpnt;
    try {
      const p = parseParams('restorePointCreate', {
        target: r.target,
        label: a.label,
        stores: stores.length ? stores : undefined,
        kind: a.kind,
        ...(a.important ? { important: true } : {}),
        ...(a.reuse ? { reuse: true } : {}),
      });
      // (one call, then the process exits: the dir create streams its walk, CoreOptions.oneShot)
      const ctx = new CoreContext({ stateDir: a.stateDir, signal: guard.signal, oneShot: true });
      rpnt = await createRestorePoint(ctx, p);
    } finally {
      guard.dispose();
    }
    const target = rpnt.target;
    await printCreated(io, rpnt, a.label, a.json, render, async () => {
      try {
        return describeTarget(parseParams('targetDescribe', { target }).target).snapshotNoun;
      } catch {
        return undefined;
      }
    });
    return 0;
  } catch (e) {
    return reportCliError(e, io, a.json, render);
  }
}
