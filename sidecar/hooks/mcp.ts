/**
 * `agentkeep mcp [--agent NAME] [--target T --store S…]`: an MCP server on stdio (the official
 * `@modelcontextprotocol/sdk`) that lets the agent take restore points itself (issue 15 item 5).
 * Hermes registers it under `mcp_servers:` in config.yaml (`hook install hermes --mcp`); Agent Zero
 * under its MCP servers setting (docs/agent-hooks.md).
 *
 * Tools: restore_point_create (reason required), restore_point_list, restore_point_diff,
 * restore_request and memory_lint. restore_request never restores by itself: it stores a request
 * (request.create) that a person approves or denies (`agentkeep request list|approve|deny`), unless
 * the agent's settings allow scope-agent restores (allowAgentRestores, off by default).
 * Every tool answers text; a failure is an MCP tool error (isError) with the message and its fix.
 *
 * The server lives as long as the agent (Hermes and Agent Zero start it once), so it keeps one Core
 * for its whole life with the dir backend's inotify change journal on (`changeJournal: true`, as
 * `agentkeep serve` does; AGENTKEEP_DIR_JOURNAL=0 turns it off): after the first create, a create
 * lstats only what changed instead of walking the whole tree (docs/dir-backend.md "Change journal").
 * Calls that run at the same time still serialise on the target lock in the state dir (a busy target
 * is waited for at most the lock timeout, 30 s, then TargetBusy), and every wait the journal adds is
 * bounded (the barrier, 2 s, then the full walk). The journal's watch worker is stopped when stdin
 * closes, after the calls in flight have answered.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { Core } from '../core/core';
import { call } from '../core/dispatch';
import { resolveStateDir } from '../core/state';
import { closeJournals } from '../machine/dir/journal';
import { listenHookHandoff, type HandoffServer } from './handoffServer';
import { asAgentKeepError } from '../core/errors';
import { VERSION } from '../core/context';
import { formatAge } from '../protocol/format';
import type { HookAgent } from './agents';

const OUTSIDE =
  'A restore rolls back this machine and the agent memory only: it cannot undo what you already did outside it ' +
  '(messages sent, pushes to remote repositories, API calls, payments, files uploaded).';

/** The tool descriptions the model reads: when to call each tool. */
export const TOOL_DESCRIPTIONS = {
  restore_point_create:
    'Take a restore point of this machine and your memory before you change something you may want to undo: ' +
    'installing or upgrading packages or tools, updating yourself, changing your config (model, provider, tools), ' +
    'editing .env or system files, installing a skill, or a larger experiment. Give the reason in one sentence ' +
    '(it is shown to the person next to the restore point). Takes seconds. ' +
    OUTSIDE,
  restore_point_list:
    'List the restore points of this machine, newest first (id, age, kind, label, reason). Use it to find the id for restore_point_diff or restore_request.',
  restore_point_diff:
    'Show what changed since a restore point (files added, removed, changed; agent-state files), i.e. what a restore would undo. ' +
    'Use it before you ask for a restore, and to check what an install changed.',
  restore_request:
    'Ask the person to restore a restore point (scope machine: files and packages; agent: memory and agent state; both). ' +
    'This never restores by itself: the request waits until the person approves it, and you are told it is pending. ' +
    'Use it when a change broke something and you cannot repair it. ' +
    OUTSIDE,
  memory_lint:
    'Check your memory for problems: duplicates, contradictions, entries over the size budget, entries edited by hand, ' +
    'claims the machine no longer matches. Use it after many memory writes, or when your memory seems wrong.',
} as const;

type Text = { content: Array<{ type: 'text'; text: string }>; isError?: boolean };

function text(s: string): Text {
  return { content: [{ type: 'text', text: s }] };
}

/** Run a tool: its text, or its error as an MCP tool error (isError). */
async function answer(fn: () => Promise<string>): Promise<Text> {
  try {
    return text(await fn());
  } catch (e) {
    return { ...text(asAgentKeepError(e).oneLine()), isError: true };
  }
}

/**
 * The MCP server of one agent (not connected), with the one Core it keeps for its life.
 * @param agent the agent it acts for (target, stores, settings)
 * @param stateDir the state dir of its restore points
 * @param opts.core the Core its tools call (default: one with the change journal on, see the module comment)
 * @param opts.inFlight gets each tool call's answer promise while it runs (a shutdown waits for them)
 */
export function agentKeepMcpServer(
  agent: HookAgent,
  stateDir: string,
  opts: { core?: Core; inFlight?: Set<Promise<unknown>> } = {},
): McpServer {
  const server = new McpServer({ name: 'agentkeep', version: VERSION });
  const core = opts.core ?? new Core({ stateDir, changeJournal: true });
  const guarded = (fn: () => Promise<string>): Promise<Text> => {
    const p = answer(fn);
    opts.inFlight?.add(p);
    void p.finally(() => opts.inFlight?.delete(p));
    return p;
  };
  const stores = agent.stores.length ? { stores: agent.stores } : {};

  server.registerTool(
    'restore_point_create',
    {
      description: TOOL_DESCRIPTIONS.restore_point_create,
      inputSchema: {
        reason: z
          .string()
          .trim()
          .min(1, 'say why: e.g. "before pip install torch"')
          .describe('Why, in one sentence: what you are about to change'),
        label: z.string().trim().max(200).optional().describe('Short label (default: the reason)'),
      },
    },
    async ({ reason, label }) =>
      guarded(async () => {
        const rp = await call(core, 'restorePointCreate', {
          target: agent.target,
          ...stores,
          kind: 'manual',
          label: label || reason.slice(0, 200),
          reason: {
            origin: 'mcp',
            agent: agent.name,
            tool: 'restore_point_create',
            text: `by the agent ${agent.name}: ${reason}`,
          },
        });
        return `Created restore point ${rp.id} ("${rp.label}") of ${rp.target}.${rp.warnings?.length ? ` Note: ${rp.warnings.join(' ')}` : ''}`;
      }),
  );

  server.registerTool(
    'restore_point_list',
    {
      description: TOOL_DESCRIPTIONS.restore_point_list,
      inputSchema: { limit: z.number().int().min(1).max(100).optional().describe('At most this many (default 20)') },
    },
    async ({ limit }) =>
      guarded(async () => {
        const points = await call(core, 'restorePointList', { target: agent.target });
        // damaged journal entries are not listed (list() leaves them out) but never vanish silently (as the CLI's list)
        const st = await call(core, 'agentStatus', { target: agent.target }).catch(() => undefined);
        const warnings = (st?.damagedRestorePoints ?? []).map(
          (d) =>
            `Warning: restore point ${d.id} is not listed: ${d.message} (a person can delete it: agentkeep restore-point delete ${d.id})`,
        );
        const lines = points.length
          ? points
              .slice(0, limit ?? 20)
              .map(
                (p) =>
                  `${p.id}  ${formatAge(p.createdAt)}  ${p.kind}  ${p.label}${p.reason?.text ? `  (${p.reason.text})` : ''}`,
              )
          : [`No restore points of ${agent.target} yet.`];
        return [...lines, ...warnings].join('\n');
      }),
  );

  server.registerTool(
    'restore_point_diff',
    {
      description: TOOL_DESCRIPTIONS.restore_point_diff,
      inputSchema: { id: z.string().min(1).describe('Restore point id (restore_point_list)') },
    },
    async ({ id }) =>
      guarded(async () => {
        const d = await call(core, 'restorePointDiff', { target: agent.target, id, ...stores });
        const part = (t: string, xs: string[]): string =>
          xs.length ? `${t} (${xs.length}): ${xs.slice(0, 30).join(', ')}${xs.length > 30 ? ', …' : ''}` : '';
        const lines = [
          part('added', d.added),
          part('removed', d.removed),
          part('changed', d.changed),
          part('agent state changed', d.agentChanged),
        ].filter(Boolean);
        return lines.length ? `Since ${id}:\n${lines.join('\n')}` : `Nothing changed since ${id}.`;
      }),
  );

  server.registerTool(
    'restore_request',
    {
      description: TOOL_DESCRIPTIONS.restore_request,
      inputSchema: {
        id: z.string().min(1).describe('Restore point id to go back to (restore_point_list)'),
        scope: z
          .enum(['machine', 'agent', 'both'])
          .describe('machine: files and packages; agent: memory and agent state; both'),
        reason: z.string().trim().min(1).describe('Why the restore is needed, in one sentence (the person reads it)'),
      },
    },
    async ({ id, scope, reason }) =>
      guarded(async () => {
        const r = await call(core, 'requestCreate', {
          target: agent.target,
          ...stores,
          restorePoint: id,
          scope,
          reason,
          agent: agent.name,
          allowAgentRestores: agent.allowAgentRestores,
        });
        if (r.status === 'approved')
          return `Restored ${id} (scope ${scope}) at once: this agent may restore its own agent state. Undo: restore ${r.undo}. ${OUTSIDE}`;
        if (r.status === 'failed') return `The restore of ${id} failed: ${r.note ?? 'see agentkeep request list'}.`;
        return `Request ${r.id} is pending: nothing was restored. A person has to approve it (agentkeep request approve ${r.id}) or deny it. ${OUTSIDE}`;
      }),
  );

  server.registerTool('memory_lint', { description: TOOL_DESCRIPTIONS.memory_lint, inputSchema: {} }, async () =>
    guarded(async () => {
      if (!agent.stores.length)
        return `Agent ${agent.name} has no memory stores set up (hook install … --store hermes:/path), so there is nothing to check.`;
      const r = await call(core, 'memoryLint', { stores: agent.stores, target: agent.target });
      if (!r.findings.length) return 'No findings: the memory looks consistent.';
      return r.findings
        .map((f) => `${f.severity} ${f.kind}: ${f.message}${f.suggestion ? ` (${f.suggestion})` : ''}`)
        .join('\n');
    }),
  );
  return server;
}

/**
 * Serve the agent's MCP server on this process's stdin/stdout until stdin closes. Then (once the
 * calls in flight have answered) it closes the server and stops the change journal's watch worker,
 * so the process ends by itself (a signal ends it as before: the kernel drops its inotify watches).
 * With AGENTKEEP_DEBUG set, each create's scan ("journal: …" or "full walk: <why>") and the shutdown
 * are noted on stderr.
 */
export async function serveMcp(agent: HookAgent, stateDir: string): Promise<void> {
  const inFlight = new Set<Promise<unknown>>();
  const lastSnapshots = new Map<string, string>();
  const core = new Core({ stateDir, changeJournal: true, lastSnapshots });
  const server = agentKeepMcpServer(agent, stateDir, { inFlight, core });
  const transport = new StdioServerTransport();
  const debug = (m: string): void => {
    if (process.env.AGENTKEEP_DEBUG) process.stderr.write(`agentkeep mcp: ${m}\n`);
  };
  let closing = false;
  let handoff: HandoffServer | undefined;
  const shutdown = async (why: string): Promise<void> => {
    if (closing) return;
    closing = true;
    await Promise.allSettled([...inFlight]);
    await handoff?.close();
    await server.close().catch(() => undefined);
    closeJournals();
    debug(`${why}: closed, change journal stopped`);
  };
  process.stdin.once('end', () => void shutdown('stdin closed'));
  process.stdin.once('close', () => void shutdown('stdin closed'));
  await server.connect(transport);
  // the agent's shell hooks hand their restore points to this server (./handoffServer.ts)
  handoff = await listenHookHandoff(resolveStateDir(stateDir), lastSnapshots, (m) => process.stderr.write(`${m}\n`));
  debug(handoff ? `hook hand-off on ${handoff.path}` : 'no hook hand-off');
}
