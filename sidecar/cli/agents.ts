/**
 * Named agents in the CLI (issue 15 item 2):
 *
 *     agentkeep agent add NAME --target T [--store S ...] [--ssh USER@HOST[:PORT] | --via guest-agent|qga:SOCK] [--fail-closed] [--replace] [--json]
 *     agentkeep agent list [--json]
 *     agentkeep agent remove NAME [--json]
 *     agentkeep agent default NAME [--json]
 *
 * and `--agent NAME` on every command that takes --target or --store (useNamedAgents): a command
 * given neither --agent nor --target uses the default agent (or the only one). The agents live in
 * `<stateDir>/config.json` (sidecar/core/agents.ts decides; this module only renders).
 */
import type { Command } from 'commander';
import type { CliIO } from './index';
import { resolveAgent, type AgentChoice, type ResolvedAgent } from '../core/agents';
import { AgentKeepError } from '../core/errors';
import { call } from '../core/dispatch';
import type { CoreApi, CoreOptions } from '../core/service';
import { resolveStateDir } from '../core/state';
import { detectTargetStores } from '../core/detect';
import { storeFormsHelp } from '../memory';
import { describeParsedTarget, parseTarget, resolveTarget } from '../core/target';
import { AgentName, type NamedAgent } from '../protocol';
import { shellQuote, table } from './format';
import { UsageError } from './usage';

/** What the agent commands need from the CLI's program. */
export interface AgentCliDeps {
  io: CliIO;
  /** The core for a command (its --state-dir). */
  core: (cmd: Command) => CoreApi;
  /** Whether the command runs with --json (and remembers it, so errors are JSON too). */
  json: (cmd: Command) => boolean;
  /** Print one JSON document on stdout. */
  print: (v: unknown) => void;
}

function collect(v: string, prev: string[]): string[] {
  return [...prev, v];
}

/** One line per agent: `* name  target  stores  fail-closed`. */
export function agentTable(agents: NamedAgent[], configFile: string): string {
  if (!agents.length)
    return `No agents are set up (${configFile}). Add one: agentkeep agent add NAME --target T [--store S]`;
  const rows = agents.map((a) => [
    a.default ? '*' : ' ',
    a.name,
    a.target,
    a.stores?.length ? a.stores.join(' ') : '(stores found in the target)',
    a.failClosed ? 'fail-closed' : 'fail-open',
  ]);
  return `${table([[' ', 'NAME', 'TARGET', 'STORES', 'HOOKS'], ...rows])}\n(* = the default agent; ${configFile})`;
}

/**
 * The stores of `agent add --ssh USER@HOST[:PORT]`: the agent's stores are on that machine, so each
 * `<kind>:/abs/path[?options]` becomes `<kind>:ssh://USER@HOST[:PORT]/abs/path[?options]` (a store
 * that already names its place with ssh:// is kept as it is). Pure; the core parses the results.
 * @throws UsageError for a --ssh that is not [user@]host[:port], or --ssh without --store
 */
export function storesOnHost(stores: readonly string[], ssh: string): string[] {
  let u: URL | undefined;
  try {
    u = new URL(`ssh://${ssh}/`);
  } catch {
    u = undefined;
  }
  if (!u || !u.hostname || u.pathname !== '/' || u.password || u.search) {
    const why = `Bad --ssh "${ssh}": expected [user@]host[:port].`;
    throw new UsageError('InvalidParams', why, 'E.g. --ssh root@10.0.0.5:2222.');
  }
  if (!stores.length) {
    throw new UsageError(
      'InvalidParams',
      '--ssh needs the stores on that machine: stores are not found in a target over SSH.',
      'Name them with --store, e.g. --ssh root@10.0.0.5 --store hermes:/root/.hermes.',
    );
  }
  return stores.map((spec) => {
    const m = /^([A-Za-z][A-Za-z0-9_-]*):(\/.*)$/s.exec(spec);
    if (!m || m[2].startsWith('//')) throw namesItsPlace(spec, `--ssh ${ssh}`);
    return `${m[1]}:ssh://${ssh}${m[2]}`;
  });
}

/**
 * `--ssh` / `--via` turn the plain paths of --store into stores on that machine; a store string that
 * already names its place (`hermes:ssh://…`, `hermes:qga:…`, `hermes:pve-agent://…`) or is no
 * `<kind>:/abs/path` would silently keep its own way there, so it is refused.
 */
function namesItsPlace(spec: string, flag: string): UsageError {
  return new UsageError(
    'InvalidParams',
    `${flag} applies to stores given as <kind>:/abs/path, and ${spec} is not one (it names its own place, or no path).`,
    `Give the path alone with ${flag} (e.g. --store hermes:/root/.hermes), or drop ${flag.split(' ')[0]}.`,
  );
}

/**
 * The stores of `agent add --via guest-agent` (a Proxmox VM target: each `<kind>:/abs/path` becomes
 * `<kind>:pve-agent://HOST:PORT/NODE/VMID/abs/path`, reached through Proxmox's agent endpoints) or
 * `--via qga:/abs/qga.sock` (any target: `<kind>:qga:/abs/qga.sock:/abs/path`, the VM's guest agent
 * socket on this machine). A store that already names its place is refused (namesItsPlace). Pure but
 * for parsing the target.
 * @throws UsageError for another --via, guest-agent with a target that is no Proxmox VM, or no --store
 */
export function storesThroughAgent(stores: readonly string[], target: string, via: string): string[] {
  let prefix: string;
  // the store parser ends the socket path at the first ":/" (guestLocation.ts), so it cannot hold one
  if (/^qga:/i.test(via) && !(via.slice(4).startsWith('/') && !via.slice(4).includes(':/'))) {
    const sock = via.slice(4);
    throw new UsageError(
      'InvalidParams',
      `Bad --via "${via}": ${sock.startsWith('/') ? 'the socket path holds ":/", which a qga: store string cannot carry (":/" ends the socket path there)' : sock ? 'the socket path is not absolute' : 'no socket path after qga:'}.`,
      sock.startsWith('/')
        ? 'Give the socket a path without ":/" (a symlink to it will do), e.g. --via qga:/run/agent-vm/qga.sock.'
        : 'Give the absolute path of the guest agent socket on this machine, e.g. --via qga:/run/agent-vm/qga.sock.',
    );
  }
  if (/^qga:/i.test(via)) prefix = `qga:${via.slice(4)}:`;
  else if (via === 'guest-agent') {
    let g;
    try {
      g = describeParsedTarget(parseTarget(target)).guest;
    } catch {
      g = undefined;
    }
    if (!g || g.type !== 'qemu')
      throw new UsageError(
        'InvalidParams',
        `--via guest-agent needs a Proxmox VM target (proxmox://HOST/NODE/qemu/VMID); "${target}" is not one.`,
        'For a plain QEMU VM name its guest agent socket: --via qga:/abs/path/to/qga.sock.',
      );
    const host = g.host.includes(':') ? `[${g.host}]` : g.host;
    prefix = `pve-agent://${host}:${g.port}/${g.node}/${g.vmid}`;
  } else
    throw new UsageError(
      'InvalidParams',
      `Bad --via "${via}": expected guest-agent (a Proxmox VM) or qga:/abs/path/to/qga.sock.`,
      'E.g. --via guest-agent --store hermes:/root/.hermes.',
    );
  if (!stores.length)
    throw new UsageError(
      'InvalidParams',
      `--via ${via} needs the stores in the guest: name them with --store.`,
      'E.g. --via guest-agent --store hermes:/root/.hermes (the Agent view also probes a VM without stores).',
    );
  return stores.map((spec) => {
    const m = /^([A-Za-z][A-Za-z0-9_-]*):(\/.*)$/s.exec(spec);
    if (!m || m[2].startsWith('//')) throw namesItsPlace(spec, `--via ${via}`);
    return `${m[1]}:${prefix}${m[2]}`;
  });
}

/** Add `add`, `list`, `remove` and `default` to the `agent` command group. */
export function agentCommands(agent: Command, d: AgentCliDeps): void {
  agent
    .command('add')
    .description(
      'name an agent (its target and stores) so commands take --agent NAME instead of --target/--store; ' +
        'the first one added is the default',
    )
    .argument('<name>', 'a name: a letter, then letters, digits, _ . - (at most 64)')
    .requiredOption(
      '--target <target>',
      "the agent's target, e.g. dir:/home/me/.hermes or proxmox://pve.lan/pve1/qemu/101",
    )
    .option(
      '--store <store>',
      `memory store of the agent (repeatable; default: the stores found in the target at each create): ${storeFormsHelp()}`,
      collect,
      [],
    )
    .option(
      '--ssh <user@host[:port]>',
      'the stores are on that machine: each --store path is reached over SSH (keys from the SSH agent or ' +
        '?identity=/abs/key on the store; the host key must be in known_hosts)',
    )
    .option(
      '--via <guest-agent|qga:/abs/sock>',
      "the stores are inside the VM, reached through its QEMU guest agent: guest-agent = Proxmox's agent " +
        'endpoints of the --target VM (needs VM.Monitor), qga:/abs/qga.sock = the guest agent socket on this machine',
    )
    .option(
      '--fail-closed',
      'agent hooks block a tool call when no restore point can be taken (default: let it through with a warning)',
    )
    .option('--replace', 'replace an agent of that name')
    .option('--json', 'print the agent as JSON')
    .action(
      async (
        name: string,
        o: { target: string; store: string[]; ssh?: string; via?: string; failClosed?: boolean; replace?: boolean },
        cmd: Command,
      ) => {
        const asJson = d.json(cmd);
        const bad = AgentName.safeParse(name).error?.issues[0]?.message;
        if (bad)
          throw new UsageError('InvalidParams', `Bad agent name "${name}": ${bad}.`, 'Pick a name such as hermes-vm.');
        if (o.ssh !== undefined && o.via !== undefined)
          throw new UsageError('InvalidParams', '--ssh and --via name two ways to the stores.', 'Give one of them.');
        const stores =
          o.ssh !== undefined
            ? storesOnHost(o.store, o.ssh)
            : o.via !== undefined
              ? storesThroughAgent(o.store, o.target, o.via)
              : o.store;
        const a = await call(d.core(cmd), 'agentAdd', {
          name,
          target: o.target,
          ...(stores.length ? { stores } : {}),
          ...(o.failClosed ? { failClosed: true } : {}),
          ...(o.replace ? { replace: true } : {}),
        });
        if (asJson) d.print(a);
        else {
          const stores = a.stores?.length ? `stores ${a.stores.join(', ')}` : 'the stores found in the target';
          d.io.out(
            `Agent ${a.name}: ${a.target}, ${stores}${a.failClosed ? ', fail-closed' : ''}.` +
              (a.default
                ? ` It is the default agent: commands without --agent or --target use it.`
                : ` Use it with --agent ${shellQuote(a.name)}.`),
          );
        }
      },
    );

  agent
    .command('list')
    .description('the named agents and which one is the default')
    .option('--json', 'print {agents, default, configFile} as JSON')
    .action(async (_o: unknown, cmd: Command) => {
      const asJson = d.json(cmd);
      const r = await call(d.core(cmd), 'agentList', {});
      if (asJson) d.print(r);
      else d.io.out(agentTable(r.agents, r.configFile));
    });

  agent
    .command('remove')
    .description('forget a named agent (its restore points stay: they belong to the target)')
    .argument('<name>', 'the agent')
    .option('--json', 'print {removed, default} as JSON')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const asJson = d.json(cmd);
      const r = await call(d.core(cmd), 'agentRemove', { name });
      if (asJson) d.print(r);
      else
        d.io.out(
          `Removed agent ${r.removed}; its restore points are kept.` +
            (r.default ? ` The default agent is ${r.default}.` : ''),
        );
    });

  agent
    .command('default')
    .description('make a named agent the default (used when a command names neither --agent nor --target)')
    .argument('<name>', 'the agent')
    .option('--json', 'print the agent as JSON')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const asJson = d.json(cmd);
      const a = await call(d.core(cmd), 'agentSetDefault', { name });
      if (asJson) d.print(a);
      else d.io.out(`The default agent is ${a.name} (${a.target}).`);
    });
}

/** The command's name below the root, e.g. `restore-point create`. */
function fullName(cmd: Command): string {
  const parts: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) parts.unshift(c.name());
  return parts.join(' ');
}

/** Commands that take --target but define an agent rather than pick one. */
const DEFINES_AGENT = new Set(['agent add']);
/** Store commands that also take a target: from the agent when the agent is used and no --target is given. */
const STORE_AND_TARGET = new Set(['memory lint', 'memory diff']);

/** The store strings found in a target's local root (none for a VM or a target that does not parse). */
async function storesInTarget(target: string): Promise<string[]> {
  const t = await resolveTarget(target).catch(() => undefined);
  return t ? (await detectTargetStores(t).catch(() => [])).map((s) => s.spec) : [];
}

/**
 * Give every command that takes --target or --store an `--agent NAME` option, make --target and
 * --store optional there, and fill them in before the action runs (a commander preAction hook):
 *   - restore-point …, guest …, agent discover and the other target commands: --agent's target
 *     (and its stores unless --store is given), else --target, else the default agent, else the
 *     only agent; none of them is a usage error saying what to give;
 *   - memory …: --store as given; without --store the stores of --agent or of the default agent,
 *     or for an agent without stores set the stores found in its target (what its restore points
 *     capture); memory lint and memory diff also take its target unless --target is given.
 * Commands that define their own --agent option resolve it themselves.
 * @param coreOpts the core options of a command (its --state-dir)
 */
export function useNamedAgents(root: Command, coreOpts: (cmd: Command) => CoreOptions): void {
  const handled = new Set<Command>();
  const walk = (cmd: Command): void => {
    for (const sub of cmd.commands) walk(sub);
    const name = fullName(cmd);
    const opt = (long: string) => cmd.options.find((o) => o.long === long);
    const target = opt('--target');
    const store = opt('--store');
    if ((!target && !store) || opt('--agent') || DEFINES_AGENT.has(name)) return;
    for (const o of [target, store]) if (o) o.mandatory = false;
    if (target) target.description += ' (or --agent NAME; default: the default agent)';
    cmd.option('--agent <name>', 'a named agent (agentkeep agent list): its target and stores');
    handled.add(cmd);
  };
  walk(root);
  // a bad or ambiguous --agent is a usage error (exit 2), with the core's message and code
  const resolve = (stateDir: string, choice: AgentChoice): Promise<ResolvedAgent | undefined> =>
    resolveAgent(stateDir, choice).catch((e: unknown) => {
      if (e instanceof AgentKeepError && (e.kind === 'InvalidParams' || e.kind === 'AgentNotFound'))
        throw new UsageError(e.kind, e.message, e.hint, e.actions);
      throw e;
    });
  root.hook('preAction', async (_root, cmd) => {
    if (!handled.has(cmd)) return;
    const name = fullName(cmd);
    const o = cmd.opts<{ agent?: string; target?: string; store?: string[] }>();
    const stateDir = resolveStateDir(coreOpts(cmd).stateDir);
    const hasStore = cmd.options.some((x) => x.long === '--store');
    const given = o.store ?? [];
    if (name.startsWith('memory ')) {
      if (given.length && o.agent === undefined) return; // explicit stores: no agent involved
      // memory diff --target T without --store: the stores are the ones the restore point captured
      if (name === 'memory diff' && o.target !== undefined && o.agent === undefined) return;
      const r = await resolve(stateDir, {
        agent: o.agent,
        ...(o.agent !== undefined && o.target !== undefined ? { target: o.target } : {}),
      });
      // memory diff needs no store: without one it compares the stores the restore point captured
      const storesOptional = name === 'memory diff';
      if (!r && storesOptional) return;
      if (!r) {
        throw new UsageError(
          'InvalidParams',
          `${name} needs a store (--store S or --agent NAME), and no agents are set up.`,
          'Add --store hermes:/abs/path/to/.hermes, or name the agent once: ' +
            'agentkeep agent add NAME --target T --store S.',
        );
      }
      // an agent without stores set: the stores found in its target, as its restore points capture them
      const found = given.length || r.stores?.length ? [] : await storesInTarget(r.target);
      const stores = given.length ? given : r.stores?.length ? r.stores : found;
      if (!stores.length && !storesOptional) {
        throw new UsageError(
          'InvalidParams',
          `${name}: agent ${r.name} has no stores set, and none were found in its target ${r.target}.`,
          `Give --store S, or set them: ` +
            `agentkeep agent add ${r.name} --target ${shellQuote(r.target)} --store S --replace.`,
        );
      }
      if (stores.length) cmd.setOptionValue('store', stores);
      if (STORE_AND_TARGET.has(name) && o.target === undefined) cmd.setOptionValue('target', r.target);
      return;
    }
    const r = await resolve(stateDir, { agent: o.agent, target: o.target, stores: given });
    if (!r) {
      throw new UsageError(
        'InvalidParams',
        `${name} needs --target T or --agent NAME, and no agents are set up.`,
        'Add --target dir:/abs/path, or name the agent once: agentkeep agent add NAME --target T [--store S].',
      );
    }
    cmd.setOptionValue('target', r.target);
    if (hasStore) cmd.setOptionValue('store', r.stores ?? []);
    if (r.name) cmd.setOptionValue('resolvedAgent', r.name);
  });
}
