/**
 * Who took a restore point, and the agent's own moments in the Agent view (issue 15 item 7). Pure
 * (no `vscode` import, unit-tested on Node); shapes from sidecar/protocol:
 * - the origin of a restore point (RestorePoint.reason.origin: hook | mcp | run | apt, with agent,
 *   session, tool, command or path) as a codicon and a sentence ("by the agent hermes in session
 *   3f2a…: pip install requests");
 * - a pre without its post (kind pre, no restore point of kind post with `pairOf` = its id: the
 *   command, the agent or the hook died, or it still runs), as `agentkeep restore-point list` shows it;
 * - the agent's restore requests (request.list) as rows;
 * - which restore points are new since the last look (the opt-in notification);
 * - what "Protect this agent's own changes" installs for the configured stores (`agentkeep hook
 *   install hermes|agent-zero`, run as a CLI child process).
 */
import type { NamedAgent, RestorePoint, RestoreRequest, StoreDescription } from '../sidecar/protocol';
import { formatAge, oneLine, truncate } from '../sidecar/protocol/format';

/** Who took a restore point (the protocol's Reason.origin). */
export type Origin = NonNullable<NonNullable<RestorePoint['reason']>['origin']>;

/** The codicon of each origin: an agent hook, the agent itself (MCP), `agentkeep run`, the apt hook. */
export const ORIGIN_ICONS: Readonly<Record<Origin, string>> = {
  hook: 'plug',
  mcp: 'hubot',
  run: 'terminal',
  apt: 'package',
};

/** Who each origin is, in words (tooltips, the details view). */
export const ORIGIN_NAMES: Readonly<Record<Origin, string>> = {
  hook: "an agent hook around the agent's own tool call",
  mcp: "the agent itself, through AgentKeep's MCP tools",
  run: '`agentkeep run` around a command',
  apt: "AgentKeep's apt hook around an apt command",
};

/** A restore point's origin as the Agent view shows it. */
export interface OriginView {
  origin: Origin;
  /** Codicon name (ORIGIN_ICONS). */
  icon: string;
  /** One line: "by the agent hermes in session 3f2a…: pip install requests". */
  text: string;
  /** Who, in words (ORIGIN_NAMES). */
  who: string;
}

/** A session id cut to its first 8 characters and an ellipsis (ids are long hashes or timestamps). */
export function shortSession(s: string): string {
  return s.length > 10 ? `${s.slice(0, 8)}…` : s;
}

/**
 * The origin of a restore point taken by an agent hook, the agent (MCP), `agentkeep run` or the apt
 * hook; undefined for one a person took (the editor, the CLI) or one from before origins existed.
 */
export function originView(rp: Pick<RestorePoint, 'reason'>): OriginView | undefined {
  const r = rp.reason;
  const origin = r?.origin;
  if (!r || !origin) return undefined;
  const base = { origin, icon: ORIGIN_ICONS[origin], who: ORIGIN_NAMES[origin] };
  const what = oneLine(r.command ?? r.path ?? '', 80);
  const agent = r.agent ? `the agent ${r.agent}` : 'the agent';
  switch (origin) {
    case 'hook': {
      const session = r.session ? ` in session ${shortSession(r.session)}` : '';
      const tool = r.tool && r.tool !== 'terminal' ? ` (${r.tool})` : '';
      return { ...base, text: `by ${agent}${session}${tool}${what ? `: ${what}` : ''}` };
    }
    case 'mcp': {
      // the sidecar writes "by the agent NAME: <the agent's reason>"
      const text = r.text && r.text.startsWith('by ') ? r.text : `by ${agent}${r.text ? `: ${r.text}` : ''}`;
      return { ...base, text: oneLine(text, 120) };
    }
    case 'run': {
      // "agentkeep run for agent NAME (exit 0): CMD"
      const text = r.text ? `by ${r.text}` : `by agentkeep run${r.agent ? ` for agent ${r.agent}` : ''}: ${what}`;
      return { ...base, text: oneLine(text, 120) };
    }
    case 'apt': {
      const summary = oneLine(r.text ?? what ?? '', 100);
      return { ...base, text: `by apt${r.agent ? ` (agent ${r.agent})` : ''}${summary ? `: ${summary}` : ''}` };
    }
  }
}

/** The origins whose restore points the agent (or a hook acting for it) takes unasked: the notification's. */
export const AGENT_ORIGINS: readonly Origin[] = ['hook', 'mcp', 'apt', 'run'];

/**
 * Whether `rp` is a pre restore point without its post: kind pre, not failed, and no restore point in
 * `all` of kind post pairs with it (`pairOf`). The CLI's `restore-point list` says "pre without post:
 * the command did not finish" for the same ones.
 */
export function isPreWithoutPost(rp: RestorePoint, all: readonly RestorePoint[]): boolean {
  return rp.kind === 'pre' && rp.status !== 'failed' && !all.some((x) => x.kind === 'post' && x.pairOf === rp.id);
}

/** The short flag of a pre without its post, in the tree's description. */
export const PRE_WITHOUT_POST = 'no post: did not finish';

/**
 * What happened to a pre without its post and what to do, for its tooltip: who took the pre (the
 * origin), that the command, the agent or the hook died before the post (or still runs), and the
 * choices: Compare with Now, Restore, Keep.
 */
export function preWithoutPostText(rp: Pick<RestorePoint, 'reason' | 'createdAt'>, now = Date.now()): string {
  const r = rp.reason;
  const what = r?.command ?? r?.path;
  const cmd = what ? `\`${oneLine(what, 80)}\`` : 'the command';
  const age = formatAge(rp.createdAt, now);
  let happened: string;
  switch (r?.origin) {
    case 'hook':
      happened = `The agent's tool call ${cmd} started ${age}, but no post restore point followed: the tool call, the agent or its hook died before it finished (or it is still running).`;
      break;
    case 'apt':
      happened = `apt started ${age} (${cmd}), but its Post-Invoke never took the post restore point: apt or dpkg stopped before the end (or it is still running). Check with \`sudo dpkg --audit\`.`;
      break;
    case 'run':
      happened = `\`agentkeep run\` took this before ${cmd} ${age}, but no post restore point followed: the command or \`agentkeep run\` itself died (or it is still running).`;
      break;
    default:
      happened = `This was taken before ${cmd} ${age}, but no post restore point followed: the command did not finish (it was cancelled, or the window or the process died), or it is still running.`;
  }
  return `${happened} What changed since is not recorded. Compare with Now shows it; Restore puts the machine back as it was before the command; Keep records the change as fine.`;
}

/** A restore request of the agent as a row of the Agent view's "Restore requests" group. */
export interface RequestView {
  label: string;
  description: string;
  tooltip: string;
  icon: string;
  /** `restoreRequest.<status>` (package.json menus match on it). */
  contextValue: string;
}

/**
 * The row of a restore request: who asks to restore which restore point (its label when `rp` is
 * known), with what scope, when and why. Approve and Deny act on pending ones (contextValue).
 */
export function requestView(
  r: RestoreRequest,
  rp: Pick<RestorePoint, 'label'> | undefined,
  now = Date.now(),
): RequestView {
  const who = r.agent ? `The agent ${r.agent}` : 'The agent';
  const point = rp ? `"${truncate(rp.label, 60)}"` : r.restorePoint;
  const session = r.session ? ` in session ${shortSession(r.session)}` : '';
  const state =
    r.status === 'pending'
      ? 'It waits for you: Approve shows what the restore would change and asks before it restores (the current state is captured first, so it can be undone); Deny records that you refused.'
      : `${r.status}${r.decidedAt ? ` ${formatAge(r.decidedAt, now)}` : ''}${r.note ? `: ${r.note}` : ''}`;
  return {
    label: `${r.agent ?? 'Agent'} asks to restore ${point}`,
    description: [`scope ${r.scope}`, formatAge(r.createdAt, now), oneLine(r.reason, 80)].filter(Boolean).join(' · '),
    tooltip:
      `${who}${session} asked ${formatAge(r.createdAt, now)} to restore ${point} (${r.restorePoint}, scope ${r.scope}).\n\n` +
      `Reason: ${r.reason}\n\n${state}\n\nRequest ${r.id}`,
    icon:
      r.status === 'pending'
        ? 'question'
        : r.status === 'approved'
          ? 'pass'
          : r.status === 'denied'
            ? 'circle-slash'
            : 'error',
    contextValue: `restoreRequest.${r.status}`,
  };
}

/**
 * The restore points in `rps` that the agent or a hook took (AGENT_ORIGINS) and that are not in
 * `known` (the ids seen at the last look). `known` undefined (the first look): none, so opening
 * VS Code does not announce old ones.
 */
export function newAgentRestorePoints(
  known: ReadonlySet<string> | undefined,
  rps: readonly RestorePoint[],
): RestorePoint[] {
  if (!known) return [];
  return rps.filter((rp) => !known.has(rp.id) && !!rp.reason?.origin && AGENT_ORIGINS.includes(rp.reason.origin));
}

/** The notification for restore points the agent took since the last look. */
export function agentRestorePointMessage(news: readonly RestorePoint[]): string {
  if (news.length === 1) {
    const rp = news[0]!;
    return `AgentKeep: restore point "${truncate(rp.label, 60)}" taken ${originView(rp)?.text ?? ''}`.trim();
  }
  const newest = news[0]!;
  return `AgentKeep: ${news.length} restore points taken by the agent or its hooks, the newest ${originView(newest)?.text ?? ''}`.trim();
}

/** The hook kinds the Agent view can install (`agentkeep hook install KIND`). */
export type HookKind = 'hermes' | 'agent-zero';

/** One agent the configured stores name whose own hook can be installed. */
export interface HookCandidate {
  kind: HookKind;
  /** The Hermes home (--home) or the Agent Zero folder (--root): the store's local root. */
  dir: string;
  store: string;
  /** "Hermes at /home/me/.hermes" */
  label: string;
}

/**
 * What "Protect this agent's own changes" can install for the configured stores: a Hermes store
 * (its home, `--home`) or an Agent Zero store (its folder, `--root`), from their descriptions
 * (store.describe: kind and local root). A store without a local root (on another machine, behind an
 * API) or of another kind cannot get a hook here: `skipped` says why, one line each.
 */
export function hookCandidates(stores: ReadonlyArray<StoreDescription | { store: string; error: string }>): {
  candidates: HookCandidate[];
  skipped: string[];
} {
  const candidates: HookCandidate[] = [];
  const skipped: string[] = [];
  for (const d of stores) {
    if ('error' in d) {
      skipped.push(`${d.store}: ${d.error}`);
      continue;
    }
    if (d.kind !== 'hermes' && d.kind !== 'agent-zero') {
      skipped.push(`${d.store}: ${d.kindName} has no AgentKeep hook (Hermes and Agent Zero have)`);
      continue;
    }
    if (!d.localRoot) {
      skipped.push(
        `${d.store}: not on this machine; install the hook where the agent runs (agentkeep hook install ${d.kind})`,
      );
      continue;
    }
    candidates.push({ kind: d.kind, dir: d.localRoot, store: d.store, label: `${d.kindName} at ${d.localRoot}` });
  }
  return { candidates, skipped };
}

/**
 * The named agent the hook acts for: the one whose target and stores are the configured ones, else
 * one with the same target, else a new one named after the kind (`hermes`, `agent-zero`; `hermes-2`
 * when that name is taken by another target), so an install never re-points someone else's agent.
 */
export function hookAgentName(
  kind: HookKind,
  config: { target: string; stores: readonly string[] },
  agents: ReadonlyArray<Pick<NamedAgent, 'name' | 'target' | 'stores'>>,
): string {
  const same = (a: readonly string[] | undefined) =>
    JSON.stringify([...(a ?? [])].sort()) === JSON.stringify([...config.stores].sort());
  const exact = agents.find((a) => a.target === config.target && same(a.stores));
  if (exact) return exact.name;
  const sameTarget = agents.find((a) => a.target === config.target);
  if (sameTarget) return sameTarget.name;
  const taken = new Set(agents.map((a) => a.name));
  if (!taken.has(kind)) return kind;
  for (let i = 2; ; i++) if (!taken.has(`${kind}-${i}`)) return `${kind}-${i}`;
}

/**
 * The argv (after `node out/sidecar.js`) of the install: `hook install KIND --home|--root DIR --agent
 * NAME --target T --store S… [--mcp] --json [--state-dir D]`. --target and --store name (or
 * re-point) the agent NAME to the configured target and stores, so the hook's restore points are the
 * ones the Agent view shows.
 */
export function hookInstallArgs(
  c: HookCandidate,
  o: { agent: string; target: string; stores: readonly string[]; mcp?: boolean; stateDir?: string },
): string[] {
  return [
    'hook',
    'install',
    c.kind,
    c.kind === 'hermes' ? '--home' : '--root',
    c.dir,
    '--agent',
    o.agent,
    '--target',
    o.target,
    ...o.stores.flatMap((s) => ['--store', s]),
    ...(o.mcp && c.kind === 'hermes' ? ['--mcp'] : []),
    '--json',
    ...(o.stateDir ? ['--state-dir', o.stateDir] : []),
  ];
}

/** What `agentkeep hook install … --json` prints (sidecar/hooks/install.ts HookChange, plus the agent and state dir). */
export interface HookInstallOutput {
  kind: HookKind;
  files: string[];
  changed: boolean;
  message: string;
  backup?: string;
  command?: string;
  notes: string[];
  agent?: Pick<NamedAgent, 'name' | 'target' | 'stores' | 'failClosed'>;
  stateDir?: string;
}

/**
 * The --json output of `hook install`: the change, or the CLI's `{"error": {code, message, hint}}`.
 * @throws Error naming what is wrong when the output is neither
 */
export function parseHookInstallOutput(
  stdout: string,
): { ok: HookInstallOutput } | { error: { code: string; message: string; hint?: string } } {
  let v: unknown;
  try {
    v = JSON.parse(stdout);
  } catch {
    throw new Error(`agentkeep hook install printed no JSON: ${oneLine(stdout, 200) || '(nothing)'}`);
  }
  const o = v as Record<string, unknown> | null;
  const err = o?.error as { code?: unknown; message?: unknown; hint?: unknown } | undefined;
  if (err && typeof err.message === 'string')
    return {
      error: {
        code: typeof err.code === 'string' ? err.code : 'internal',
        message: err.message,
        ...(typeof err.hint === 'string' ? { hint: err.hint } : {}),
      },
    };
  if (!o || typeof o.message !== 'string' || !Array.isArray(o.notes) || typeof o.changed !== 'boolean')
    throw new Error(`agentkeep hook install printed an unexpected JSON shape: ${oneLine(stdout, 200)}`);
  return { ok: o as unknown as HookInstallOutput };
}

/**
 * Agent Zero's MCP server settings for AgentKeep (Settings → MCP servers), the JSON docs/agent-hooks.md
 * shows: `agentkeep mcp --agent NAME --state-dir DIR` run with `node`.
 */
export function agentZeroMcpSettings(p: { node: string; sidecar: string; agent: string; stateDir?: string }): string {
  const args = [p.sidecar, 'mcp', '--agent', p.agent, ...(p.stateDir ? ['--state-dir', p.stateDir] : [])];
  return JSON.stringify({ mcpServers: { agentkeep: { command: p.node, args } } }, null, 2);
}
