/**
 * The agent a hook or the MCP server acts for: a named agent of the state dir (issue 15 item 2,
 * sidecar/core/agents.ts: `<stateDir>/config.json` `agents.<name>` with its target, stores and the
 * hook settings failClosed and allowAgentRestores), resolved the way every command resolves
 * `--agent NAME`. An explicit --target (with --store) overrides the agent's for one call; the
 * agent's settings still apply.
 */
import { resolveAgent } from '../core/agents';
import { AgentKeepError } from '../core/errors';
import { readStateConfig, stateConfigPath } from '../core/stateConfig';

/** One agent as the hooks use it. */
export interface HookAgent {
  name: string;
  target: string;
  /** Stores captured with each restore point ([]: the Hermes homes found in the target) */
  stores: string[];
  failClosed: boolean;
  allowAgentRestores: boolean;
}

/**
 * Resolve `--agent NAME` (or the default agent), or an explicit `--target` / `--store`.
 * @throws AgentNotFound (unknown name, naming the known ones), InvalidParams (no agent set up and no
 *   target; several agents and no default), BadStateDir (config.json does not parse)
 */
export async function resolveHookAgent(
  stateDir: string,
  o: { agent?: string; target?: string; stores?: string[] },
): Promise<HookAgent> {
  const config = await readStateConfig(stateDir);
  const settings = (name: string | undefined): { failClosed: boolean; allowAgentRestores: boolean } => {
    const a = name && Object.hasOwn(config.agents ?? {}, name) ? config.agents![name] : undefined;
    return { failClosed: a?.failClosed ?? false, allowAgentRestores: a?.allowAgentRestores ?? false };
  };
  if (o.target) return { name: o.agent ?? 'agent', target: o.target, stores: o.stores ?? [], ...settings(o.agent) };
  const r = await resolveAgent(stateDir, { agent: o.agent, stores: o.stores });
  if (!r?.name) {
    throw new AgentKeepError(
      'InvalidParams',
      `No agent is set up in ${stateConfigPath(stateDir)}, and no --target was given.`,
      'Name the agent once: agentkeep agent add NAME --target T --store S (or hook install … --agent NAME --target T).',
    );
  }
  return { name: r.name, target: r.target, stores: r.stores ?? [], ...settings(r.name) };
}
