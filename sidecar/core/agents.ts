/**
 * Named agents (issue 15 item 2): `agentkeep agent add NAME --target T --store S…` so nobody types
 * --target each time. They live in `<stateDir>/config.json` (sidecar/core/stateConfig.ts) as
 *
 *     "agents": { "hermes-vm": { "target": "proxmox://pve.lan/pve1/qemu/101", "stores": ["hermes:/root/.hermes"],
 *                                "failClosed": false } },
 *     "defaultAgent": "hermes-vm"
 *
 * agent.list / agent.add / agent.remove / agent.setDefault read and change them (writes atomic,
 * under the config lock, other keys kept); `resolveAgent` turns what a command was given
 * (`--agent NAME`, or `--target T --store S…`, or nothing) into the target and stores to use: the
 * named agent, the explicit target, else the default agent, else the only agent. Several agents and no
 * default is an error naming the choices; an unknown name is an error naming the known ones.
 * Per-agent settings: `failClosed` (hooks block a tool call when no restore point can be taken;
 * default off) and `allowAgentRestores` (the agent's scope-agent restore requests run without
 * approval; default off), changed with agent.setSettings.
 */
import { promises as fs } from 'node:fs';
import { backendFor } from '../machine';
import { openStore } from '../memory';
import { nextAction, type AgentSettings, type NamedAgent, type ParamsOf, type ResultOf } from '../protocol';
import type { CoreContext } from './context';
import { AgentKeepError } from './errors';
import { readStateConfig, stateConfigPath, updateStateConfig, type StateConfig } from './stateConfig';
import { describeParsedTarget, parseTarget } from './target';

/** The settings of agent `name` (own keys only: "constructor" or "__proto__" is no agent). */
function agentOf(config: StateConfig, name: string): AgentSettings | undefined {
  const agents = config.agents ?? {};
  return Object.hasOwn(agents, name) ? agents[name] : undefined;
}

/** The agents of a config, sorted by name, as agent.list shows them. */
function named(config: StateConfig): NamedAgent[] {
  const agents = config.agents ?? {};
  return Object.keys(agents)
    .sort()
    .map((name) => toNamed(name, agents[name], config.defaultAgent));
}

function toNamed(name: string, a: AgentSettings, dflt: string | undefined): NamedAgent {
  return {
    name,
    target: a.target,
    ...(a.stores ? { stores: a.stores } : {}),
    failClosed: a.failClosed ?? false,
    ...(a.allowAgentRestores ? { allowAgentRestores: true } : {}),
    default: name === dflt,
  };
}

/** "a, b, c" for a message. */
function names(list: readonly string[]): string {
  return list.length ? list.join(', ') : '(none)';
}

/**
 * The error for a name that is not an agent: names the known ones, or how to add one.
 * @returns AgentKeepError AgentNotFound
 */
export function unknownAgent(name: string, config: StateConfig, stateDir: string): AgentKeepError {
  const known = Object.keys(config.agents ?? {}).sort();
  return new AgentKeepError(
    'AgentNotFound',
    known.length
      ? `No agent named "${name}" in ${stateConfigPath(stateDir)}. Known agents: ${names(known)}.`
      : `No agent named "${name}": no agents are set up in ${stateConfigPath(stateDir)}.`,
    known.length
      ? 'Use one of them, or add this one (agent add, with its target).'
      : 'Add it first (agent add, with its target).',
    known.length ? [nextAction('List the agents', 'agentList', {})] : [],
  );
}

/** See Methods.agentList. @throws BadStateDir for a config.json that does not parse */
export async function listAgents(ctx: CoreContext, _p: ParamsOf<'agentList'>): Promise<ResultOf<'agentList'>> {
  const config = await readStateConfig(ctx.stateDir);
  return {
    agents: named(config),
    ...(config.defaultAgent ? { default: config.defaultAgent } : {}),
    configFile: stateConfigPath(ctx.stateDir),
  };
}

/**
 * See Methods.agentAdd. The target and stores are parsed by their registries (their normalised
 * spelling is kept); a target with a local root must exist, and so must each local store's root,
 * which must pass its adapter's check() (a Hermes store: a Hermes home; an ssh:// store is not
 * dialled: that would need the network and its keys; its first use checks it).
 * @throws BadTarget, BadStore, TargetNotFound, StoreNotFound (a local store missing), InvalidParams (name taken, without replace), BadStateDir
 */
export async function addAgent(ctx: CoreContext, p: ParamsOf<'agentAdd'>): Promise<ResultOf<'agentAdd'>> {
  const target = parseTarget(p.target);
  const adapters = p.stores?.map((s) => openStore(s));
  const stores = adapters?.map((a) => a.spec);
  if (describeParsedTarget(target).localRoot) {
    await backendFor({ target, layout: ctx.layout, objects: ctx.objects }).check();
  }
  // a local store must exist, as the target must (remote ssh:// stores are not dialled here: no localRoot)
  for (const a of adapters ?? []) {
    if (!a.localRoot) continue;
    const st = await fs.stat(a.localRoot).catch((e: NodeJS.ErrnoException) => e);
    if (st instanceof Error)
      throw new AgentKeepError(
        'StoreNotFound',
        `The store ${a.spec} names ${a.localRoot}, which ${st.code === 'ENOENT' ? 'does not exist' : `cannot be read (${st.code ?? st.message})`}; nothing was changed.`,
        `Point --store at the folder the agent keeps its memory in (${a.kind}:ABSOLUTE-PATH, e.g. hermes:/home/USER/.hermes), or create ${a.localRoot} first.`,
      );
    // it exists: it must also be a store of its kind (a folder with no Hermes home in it is not one)
    try {
      await a.check();
    } catch (e) {
      if (!(e instanceof AgentKeepError) || e.kind !== 'StoreNotFound') throw e;
      throw new AgentKeepError(
        'StoreNotFound',
        `The store ${a.spec}: ${e.message.replace(/\.$/, '')}; nothing was changed.`,
        e.hint,
      );
    }
  }
  const settings: AgentSettings = {
    target: target.spec,
    ...(stores ? { stores } : {}),
    ...(p.failClosed ? { failClosed: true } : {}),
  };
  const { config } = await updateStateConfig(ctx.stateDir, (raw, current) => {
    const old = agentOf(current, p.name);
    if (old && !p.replace) {
      throw new AgentKeepError(
        'InvalidParams',
        `An agent named "${p.name}" exists already (target ${old.target}); nothing was changed.`,
        'Pick another name, or replace it.',
        [nextAction('Replace it', 'agentAdd', { ...p, replace: true })],
      );
    }
    // Keep the fields of a replaced agent that this call does not set (e.g. settings added by hooks).
    const rawAgents = (raw.agents ?? {}) as Record<string, Record<string, unknown>>;
    const kept = old ? { ...rawAgents[p.name], failClosed: undefined, stores: undefined } : {};
    rawAgents[p.name] = JSON.parse(JSON.stringify({ ...kept, ...settings })) as Record<string, unknown>;
    raw.agents = rawAgents;
    if (!current.defaultAgent) raw.defaultAgent = p.name;
  });
  return toNamed(p.name, agentOf(config, p.name)!, config.defaultAgent);
}

/** See Methods.agentRemove. @throws AgentNotFound, BadStateDir */
export async function removeAgent(ctx: CoreContext, p: ParamsOf<'agentRemove'>): Promise<ResultOf<'agentRemove'>> {
  const { config } = await updateStateConfig(ctx.stateDir, (raw, current) => {
    if (!agentOf(current, p.name)) throw unknownAgent(p.name, current, ctx.stateDir);
    const rawAgents = raw.agents as Record<string, unknown>;
    delete rawAgents[p.name];
    if (raw.defaultAgent === p.name) delete raw.defaultAgent;
  });
  return { removed: p.name, ...(config.defaultAgent ? { default: config.defaultAgent } : {}) };
}

/** See Methods.agentSetDefault. @throws AgentNotFound, BadStateDir */
export async function setDefaultAgent(
  ctx: CoreContext,
  p: ParamsOf<'agentSetDefault'>,
): Promise<ResultOf<'agentSetDefault'>> {
  const { config } = await updateStateConfig(ctx.stateDir, (raw, current) => {
    if (!agentOf(current, p.name)) throw unknownAgent(p.name, current, ctx.stateDir);
    raw.defaultAgent = p.name;
  });
  return toNamed(p.name, agentOf(config, p.name)!, config.defaultAgent);
}

/**
 * See Methods.agentSetSettings: change failClosed / allowAgentRestores of a named agent (the hooks'
 * settings; `hook settings` in the CLI). A setting not given keeps its value; false removes the key.
 * @throws AgentNotFound, BadStateDir
 */
export async function setAgentSettings(
  ctx: CoreContext,
  p: ParamsOf<'agentSetSettings'>,
): Promise<ResultOf<'agentSetSettings'>> {
  const { config } = await updateStateConfig(ctx.stateDir, (raw, current) => {
    if (!agentOf(current, p.name)) throw unknownAgent(p.name, current, ctx.stateDir);
    const a = (raw.agents as Record<string, Record<string, unknown>>)[p.name];
    for (const k of ['failClosed', 'allowAgentRestores'] as const) {
      if (p[k] === true) a[k] = true;
      else if (p[k] === false) delete a[k];
    }
  });
  return toNamed(p.name, agentOf(config, p.name)!, config.defaultAgent);
}

/** What a command was given to pick the agent with. */
export interface AgentChoice {
  /** `--agent NAME`. */
  agent?: string;
  /** `--target T`. */
  target?: string;
  /** `--store S…` (empty = none given). With an agent they replace its stores for this call. */
  stores?: readonly string[];
}

/** The target and stores a command works on. */
export interface ResolvedAgent {
  /** The named agent, when one was used. */
  name?: string;
  target: string;
  /** Stores to capture or read; undefined = none given (create: the Hermes homes found in the target). */
  stores?: string[];
  /** The agent's failClosed setting (false for an explicit target). */
  failClosed: boolean;
  /** How it was picked: `agent` (--agent), `target` (--target), `default` (the default agent), `only` (sole one). */
  via: 'agent' | 'target' | 'default' | 'only';
}

/**
 * The target and stores for a command: `--agent NAME` (its target and stores; `--store` replaces its
 * stores), else `--target` (with `--store`), else the default agent, else the only agent. The
 * config is read only when it is needed (an explicit --target works with a broken config.json).
 * @param stateDir the state dir whose config.json holds the agents
 * @returns undefined when nothing names a target and no agent is set up (the caller says what is missing)
 * @throws AgentNotFound (unknown name: the message names the known ones), InvalidParams (--agent and
 *   --target together; several agents and no default: the message names them), BadStateDir (config.json
 *   does not parse)
 */
export async function resolveAgent(stateDir: string, choice: AgentChoice): Promise<ResolvedAgent | undefined> {
  const stores = choice.stores?.length ? [...choice.stores] : undefined;
  if (choice.agent !== undefined && choice.target !== undefined) {
    throw new AgentKeepError(
      'InvalidParams',
      `Both an agent (${choice.agent}) and a target (${choice.target}) were given.`,
      'Give one of them: the agent brings its own target and stores.',
    );
  }
  if (choice.target !== undefined)
    return { target: choice.target, ...(stores ? { stores } : {}), failClosed: false, via: 'target' };
  const config = await readStateConfig(stateDir);
  const pick = (name: string, via: ResolvedAgent['via']): ResolvedAgent => {
    const a = agentOf(config, name);
    if (!a) throw unknownAgent(name, config, stateDir);
    const use = stores ?? a.stores;
    return { name, target: a.target, ...(use ? { stores: [...use] } : {}), failClosed: a.failClosed ?? false, via };
  };
  if (choice.agent !== undefined) return pick(choice.agent, 'agent');
  if (config.defaultAgent) return pick(config.defaultAgent, 'default');
  const all = Object.keys(config.agents ?? {}).sort();
  if (all.length === 1) return pick(all[0], 'only');
  if (all.length === 0) return undefined;
  throw new AgentKeepError(
    'InvalidParams',
    `Several agents are set up (${names(all)}) and none is the default, so it is not clear which one is meant.`,
    'Name the agent to use (--agent NAME), or make one the default.',
    [nextAction(`Make ${all[0]} the default`, 'agentSetDefault', { name: all[0] })],
  );
}
