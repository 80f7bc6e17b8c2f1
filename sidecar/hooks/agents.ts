/**
 * The agents the hooks act for, and their hook settings: `<stateDir>/hooks/agents.json`
 *
 *     {"agents": {"hermes": {"target": "dir:/home/me/.hermes", "stores": ["hermes:/home/me/.hermes"],
 *                            "failClosed": false, "allowAgentRestores": false}}}
 *
 * `hook install … --agent NAME --target T --store S` records NAME here, so the installed hook
 * command only names the agent (`hook run hermes --agent NAME`). failClosed: when a restore point
 * cannot be taken before a risky call, block the call instead of letting it through (default false:
 * fail open). allowAgentRestores: the agent's MCP restore_request may restore scope agent without a
 * person's approval (default false). Named agents of the state dir (issue 15 item 2) will take the
 * target and stores over; the hook settings stay here.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { AgentKeepError } from '../core/errors';
import { writeJsonAtomic } from '../core/fsutil';

/** One agent's hook settings. */
export interface HookAgent {
  name: string;
  target: string;
  stores: string[];
  failClosed: boolean;
  allowAgentRestores: boolean;
}

interface AgentsFile {
  agents: Record<string, Omit<HookAgent, 'name'>>;
}

/** Valid agent names: letters, digits, `.`, `_`, `-` (they appear in commands and file names). */
export const AGENT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Path of the settings file. */
export function agentsPath(stateDir: string): string {
  return path.join(stateDir, 'hooks', 'agents.json');
}

/** @throws BadStateDir when the file exists but does not parse */
async function readFile(stateDir: string): Promise<AgentsFile> {
  const file = agentsPath(stateDir);
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { agents: {} };
    throw new AgentKeepError('BadStateDir', `Cannot read ${file}: ${(e as Error).message}.`, 'Fix its permissions.');
  }
  try {
    const o = JSON.parse(text) as AgentsFile;
    if (!o || typeof o.agents !== 'object') throw new Error('no "agents" object');
    return o;
  } catch (e) {
    throw new AgentKeepError('BadStateDir', `${file} is not valid (${(e as Error).message}).`, 'Fix it or remove it, then run agentkeep hook install again.');
  }
}

/** Every recorded agent, by name. */
export async function listHookAgents(stateDir: string): Promise<HookAgent[]> {
  const f = await readFile(stateDir);
  return Object.entries(f.agents).map(([name, a]) => ({ name, ...a, failClosed: !!a.failClosed, allowAgentRestores: !!a.allowAgentRestores }));
}

/**
 * The agent a hook or the MCP server acts for: `name` from the settings file, with `target`/`stores`
 * given on the command line taking precedence.
 * @throws InvalidParams for an unknown name without a target (naming the known ones), a bad name
 */
export async function resolveHookAgent(stateDir: string, o: { agent?: string; target?: string; stores?: string[] }): Promise<HookAgent> {
  const name = o.agent ?? 'default';
  if (!AGENT_NAME.test(name)) throw new AgentKeepError('InvalidParams', `"${name}" is not an agent name (letters, digits, . _ -).`, 'Give e.g. --agent hermes.');
  const known = await listHookAgents(stateDir);
  const a = known.find((k) => k.name === name);
  if (!a && !o.target) {
    const names = known.map((k) => k.name);
    throw new AgentKeepError(
      'InvalidParams',
      o.agent ? `Unknown agent "${name}": no agent of that name is set up in ${agentsPath(stateDir)}.` : 'No agent given.',
      names.length ? `Use one of: ${names.join(', ')}; or set it up: agentkeep hook install hermes --agent ${name} --target T --store S.` : `Set it up first: agentkeep hook install hermes --agent ${name} --target dir:/path --store hermes:/path (or pass --target).`,
    );
  }
  return {
    name,
    target: o.target ?? a!.target,
    stores: o.stores?.length ? o.stores : (a?.stores ?? []),
    failClosed: a?.failClosed ?? false,
    allowAgentRestores: a?.allowAgentRestores ?? false,
  };
}

/** Record (or update) an agent; settings not given keep their value. */
export async function saveHookAgent(stateDir: string, a: Pick<HookAgent, 'name'> & Partial<HookAgent>): Promise<HookAgent> {
  const f = await readFile(stateDir);
  const old = f.agents[a.name];
  const target = a.target ?? old?.target;
  if (!target) throw new AgentKeepError('InvalidParams', `Agent "${a.name}" has no target.`, `Give --target, e.g. agentkeep hook install hermes --agent ${a.name} --target dir:/home/me/.hermes.`);
  const next = {
    target,
    stores: a.stores ?? old?.stores ?? [],
    failClosed: a.failClosed ?? old?.failClosed ?? false,
    allowAgentRestores: a.allowAgentRestores ?? old?.allowAgentRestores ?? false,
  };
  f.agents[a.name] = next;
  await fs.mkdir(path.dirname(agentsPath(stateDir)), { recursive: true, mode: 0o700 });
  await writeJsonAtomic(agentsPath(stateDir), f, { pretty: true });
  return { name: a.name, ...next };
}
