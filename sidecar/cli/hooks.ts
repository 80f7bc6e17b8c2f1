/**
 * The CLI commands of the agent hooks (issue 15 items 3-5), added to the `agentkeep` program by
 * sidecar/cli/index.ts:
 *
 *     agentkeep hook install hermes [--home DIR] [--agent NAME] [--target T] [--store S…] [--mcp] [--json]
 *     agentkeep hook install agent-zero --root DIR [--agent NAME] [--target T] [--store S…] [--json]
 *     agentkeep hook remove hermes [--home DIR] | agent-zero --root DIR [--json]
 *     agentkeep hook status [hermes|agent-zero] [--home DIR] [--root DIR] [--json]
 *     agentkeep hook settings --agent NAME [--fail-closed | --fail-open] [--allow-agent-restores | --approve-agent-restores] [--json]
 *     agentkeep hook run hermes|agent-zero [--agent NAME] [--target T] [--store S…]   (the agent runs it; JSON on stdin)
 *     agentkeep hook install|remove|status|run apt …                                   (sidecar/cli/aptHook.ts)
 *     agentkeep mcp [--agent NAME] [--target T] [--store S…]                            (MCP server on stdio)
 *     agentkeep request list [--target T] [--all] [--json]
 *     agentkeep request approve ID [--yes] [--json]
 *     agentkeep request deny ID [--note TEXT] [--json]
 */
import { statSync } from 'node:fs';
import * as path from 'node:path';
import type { Command } from 'commander';
import type { CoreApi, CoreOptions } from '../core/service';
import { call } from '../core/dispatch';
import { AgentKeepError } from '../core/errors';
import { resolveStateDir } from '../core/state';
import { commandLine } from './actions';
import { nextAction, type RestoreRequest } from '../protocol';
import { resolveAgent } from '../core/agents';
import { resolveHookAgent } from '../hooks/agents';
import { hookMain, processStdin, type HookFull } from '../hooks/entry';
import {
  checkAgentZeroRoot,
  checkHermesHome,
  hermesHomeOf,
  installAgentZero,
  installedHermesHomes,
  installHermes,
  removeAgentZero,
  removeHermes,
  statusAgentZero,
  statusHermes,
  type HookChange,
  type HookStatus,
} from '../hooks/install';
import * as full from '../hooks/run';
import { changeSummary, shellQuote, table } from './format';
import type { CliIO } from './index';
import { aptInstall, aptOptions, aptRemove, aptRun, aptStatus, aptStatusWanted, type AptHookCliDeps } from './aptHook';
import type { AptStep } from '../hooks/aptRun';

/** What the hook commands need from the CLI (sidecar/cli/index.ts). */
export interface HookCliDeps {
  io: CliIO;
  core: (cmd: Command) => CoreApi;
  /** A core with given options (the apt hook's time-boxed creates). */
  makeCore: (o: CoreOptions) => CoreApi;
  coreOpts: (cmd: Command) => CoreOptions;
  /** Marks the command as --json (errors become JSON too) and says whether it is. */
  json: (cmd: Command) => boolean;
  printJson: (v: unknown) => void;
  /** A usage error (exit 2). */
  usage: (message: string, hint: string) => Error;
  /** The command keeps the process alive (a server): no exit code. */
  serving: () => void;
  /** Set the exit code without failing the command (what it printed stays). */
  setExitCode?: (code: number) => void;
}

type Kind = 'hermes' | 'agent-zero' | 'apt';

function collect(v: string, prev: string[]): string[] {
  return [...prev, v];
}

function kindOf(d: HookCliDeps, k: string): Kind {
  if (k === 'hermes' || k === 'agent-zero' || k === 'apt') return k;
  throw d.usage(`Unknown hook kind "${k}".`, 'Use hermes, agent-zero or apt.');
}

/**
 * Refuse an empty --home / --root (`--home ""` would otherwise mean the current folder, and an install
 * would edit whatever config.yaml is there).
 * @throws the usage error of `d.usage` (exit 2) naming the option and the fix
 */
function nonEmptyFolders(d: HookCliDeps, o: { home?: string; root?: string }): void {
  for (const [flag, v] of [
    ['--home', o.home],
    ['--root', o.root],
  ] as const)
    if (v !== undefined && v.trim() === '')
      throw d.usage(
        `Invalid ${flag}: it is empty.`,
        `Give the folder as an absolute path (e.g. ${flag === '--home' ? '--home /home/me/.hermes' : '--root /a0'}), or leave the option out for the default.`,
      );
}

function changeText(c: HookChange): string {
  return [c.message, ...(c.command ? [`Hook command: ${c.command}`] : []), ...c.notes.map((n) => `Note: ${n}`)].join(
    '\n',
  );
}

function statusText(s: HookStatus): string {
  if (s.error) return `${s.kind}: ${s.location}: ${s.error}`;
  if (!s.installed && !s.entries.length) return `${s.kind}: no AgentKeep hooks in ${s.location}.`;
  const rows = s.entries.map((e) =>
    s.kind === 'hermes'
      ? [e.event ?? '', e.matcher ?? '', e.consent ? 'approved' : 'not yet approved', e.command]
      : [e.file ?? '', e.command],
  );
  const head = s.kind === 'hermes' ? ['EVENT', 'MATCHER', 'CONSENT', 'COMMAND'] : ['FILE', 'COMMAND'];
  const mcp =
    s.kind === 'hermes'
      ? `\nMCP server mcp_servers.agentkeep: ${s.mcp ? 'installed' : 'not installed (hook install hermes --mcp adds it)'}`
      : '';
  return `${s.kind}: AgentKeep hooks in ${s.location}:\n${table([head, ...rows])}${mcp}${s.notes.map((n) => `\nNote: ${n}`).join('')}`;
}

/** Whether `p` is a directory (following symbolic links). */
function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function requestsTable(rs: RestoreRequest[]): string {
  if (!rs.length) return 'No restore requests.';
  return table([
    ['ID', 'STATUS', 'AGENT', 'RESTORE POINT', 'SCOPE', 'TARGET', 'REASON'],
    ...rs.map((r) => [r.id, r.status, r.agent ?? '', r.restorePoint, r.scope, r.target, r.reason]),
  ]);
}

/** Whether an agent's target (dir:X with the home in X) or a store (hermes:HOME, dir:X) covers a Hermes home. */
function coversHome(target: string, stores: string[] | undefined, home: string): boolean {
  const inside = (spec: string, scheme: string): boolean => {
    if (!spec.startsWith(scheme)) return false;
    const rel = path.relative(path.resolve(spec.slice(scheme.length)), home);
    return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
  };
  return inside(target, 'dir:') || (stores ?? []).some((s) => inside(s, 'hermes:') || inside(s, 'dir:'));
}

/** The agent an install acts for, and whether it is to be (re)registered as a named agent. */
interface InstallAgent {
  name: string;
  target: string;
  stores?: string[];
  register: boolean;
}

/**
 * The agent `hook install` sets up: --target (with --store) names (or re-points) the agent NAME;
 * without it a named agent (--agent NAME, else the default one) is used; with no agent set up at all,
 * `hook install hermes` makes one named hermes for the Hermes home (dir:HOME, hermes:HOME).
 * @throws AgentNotFound for an unknown --agent without --target (naming the known ones)
 */
async function installAgent(
  d: HookCliDeps,
  stateDir: string,
  kind: Kind,
  home: string | undefined,
  o: { agent?: string; target?: string; store: string[] },
): Promise<InstallAgent> {
  if (o.target)
    return { name: o.agent ?? kind, target: o.target, ...(o.store.length ? { stores: o.store } : {}), register: true };
  const r = await resolveAgent(stateDir, { agent: o.agent, stores: o.store });
  if (r?.name && kind === 'hermes' && home && o.agent === undefined && !coversHome(r.target, r.stores, home))
    throw new AgentKeepError(
      'InvalidParams',
      `The default agent ${r.name} snapshots ${r.target}${r.stores?.length ? ` with ${r.stores.join(', ')}` : ''}, ` +
        `which does not cover the Hermes home ${home}: its hooks would take restore points of another agent's files; nothing was changed.`,
      `Name an agent that covers ${home} (--agent NAME), or set one up first: ` +
        `agentkeep agent add ${shellQuote(path.basename(home) || 'hermes')} --target ${shellQuote(`dir:${home}`)} --store ${shellQuote(`hermes:${home}`)}, ` +
        'then install with --agent and that name.',
    );
  if (r?.name)
    return { name: r.name, target: r.target, ...(r.stores ? { stores: r.stores } : {}), register: !!o.store.length };
  if (kind === 'hermes' && home)
    return { name: o.agent ?? 'hermes', target: `dir:${home}`, stores: [`hermes:${home}`], register: true };
  throw d.usage(
    'hook install agent-zero needs the agent: --agent NAME (agentkeep agent add NAME --target T) or --target T.',
    'Give e.g. --agent a0 --target dir:/a0/usr.',
  );
}

/** Add `hook`, `mcp` and `request` to the program. */
export function addHookCommands(root: Command, d: HookCliDeps): void {
  const hook = root
    .command('hook')
    .description("restore points at the agent's own moments: hooks for Hermes, Agent Zero and apt");
  const stateDirOf = (cmd: Command): string => resolveStateDir(d.coreOpts(cmd).stateDir);
  // the apt hook (sidecar/cli/aptHook.ts): its own options on the same commands
  const aptDeps: AptHookCliDeps = {
    io: d.io,
    makeCore: d.makeCore,
    coreOpts: d.coreOpts,
    json: d.json,
    print: d.printJson,
  };
  const apt = (): ReturnType<typeof aptOptions> => aptOptions();

  hook
    .command('install')
    .description(
      "add AgentKeep's hook to an agent: Hermes config.yaml hooks (and --mcp its MCP server), Agent Zero extension " +
        'files; apt: a pre/post pair around each apt command (/etc/apt/apt.conf.d/80agentkeep, root)',
    )
    .argument('<kind>', 'hermes | agent-zero | apt')
    .option('--home <dir>', 'hermes: the Hermes home (default: $HERMES_HOME, else ~/.hermes)')
    .option('--root <dir>', 'agent-zero: the Agent Zero folder (/a0 in its Docker image)')
    .option('--agent <name>', 'name of the agent (default: hermes / agent-zero); it appears in restore point reasons')
    .option('--target <target>', 'what to take restore points of, e.g. dir:/home/me (default for hermes: dir:HOME)')
    .option(
      '--store <store>',
      'memory store captured with each restore point (repeatable; default for hermes: hermes:HOME)',
      collect,
      [],
    )
    .option('--mcp', "hermes: also register AgentKeep's MCP server (mcp_servers.agentkeep)")
    .addOption(apt().confDir)
    .addOption(apt().timeout)
    .option('--json', 'print the result as JSON')
    .action(
      async (
        k: string,
        o: {
          home?: string;
          root?: string;
          agent?: string;
          target?: string;
          store: string[];
          mcp?: boolean;
          aptConfDir?: string;
          timeout?: string;
        },
        cmd: Command,
      ) => {
        const asJson = d.json(cmd);
        const kind = kindOf(d, k);
        nonEmptyFolders(d, o);
        if (kind === 'apt') return aptInstall(aptDeps, cmd, o);
        const stateDir = stateDirOf(cmd);
        const c = d.core(cmd);
        const home = kind === 'hermes' ? hermesHomeOf(o.home) : undefined;
        // the agent's folder first: an agent set up for a folder that is no Hermes home (no Agent Zero
        // folder) would not help
        if (home) await checkHermesHome(home);
        else await checkAgentZeroRoot(o.root);
        const agent = await installAgent(d, stateDir, kind, home, o);
        const install = (dryRun: boolean): Promise<HookChange> =>
          kind === 'hermes'
            ? installHermes({ home: o.home, agent: agent.name, stateDir, mcp: o.mcp, dryRun })
            : installAgentZero({ root: o.root, agent: agent.name, stateDir, dryRun });
        // everything is checked before anything is written: the agent's config, then the named agent
        await install(true);
        if (agent.register) {
          const old = (await call(c, 'agentList', {})).agents.find((a) => a.name === agent.name);
          const same =
            old &&
            old.target === agent.target &&
            JSON.stringify(old.stores ?? []) === JSON.stringify(agent.stores ?? []);
          if (!same)
            await call(c, 'agentAdd', {
              name: agent.name,
              target: agent.target,
              ...(agent.stores ? { stores: agent.stores } : {}),
              ...(old ? { replace: true, failClosed: old.failClosed } : {}),
            });
        }
        const change = await install(false);
        const named = (await call(c, 'agentList', {})).agents.find((a) => a.name === agent.name);
        change.notes.push(
          `Restore points of agent ${agent.name} go to ${named?.target ?? agent.target}` +
            `${named?.stores?.length ? ` with ${named.stores.join(', ')}` : ''}; fail ${named?.failClosed ? 'closed' : 'open'} ` +
            `(agentkeep hook settings --agent ${agent.name} changes it).`,
        );
        // the state dir too: the Agent view's MCP settings for Agent Zero name it
        if (asJson) d.printJson({ ...change, agent: named, stateDir });
        else d.io.out(changeText(change));
      },
    );

  hook
    .command('remove')
    .description("take AgentKeep's hook out of an agent again (Hermes: config.yaml back as it was)")
    .argument('<kind>', 'hermes | agent-zero | apt')
    .option('--home <dir>', 'hermes: the Hermes home (default: $HERMES_HOME, else ~/.hermes)')
    .option('--root <dir>', 'agent-zero: the Agent Zero folder')
    .addOption(apt().confDir)
    .option('--json', 'print the result as JSON')
    .action(async (k: string, o: { home?: string; root?: string; aptConfDir?: string }, cmd: Command) => {
      const asJson = d.json(cmd);
      const kind = kindOf(d, k);
      nonEmptyFolders(d, o);
      if (kind === 'apt') return aptRemove(aptDeps, cmd, o);
      const change =
        kind === 'hermes'
          ? await removeHermes({ home: o.home, stateDir: stateDirOf(cmd) })
          : await removeAgentZero({ root: o.root });
      if (asJson) d.printJson(change);
      else d.io.out(changeText(change));
    });

  hook
    .command('status')
    .description('what AgentKeep hooks are installed (Hermes: with its first-use consent), and the agents they act for')
    .argument(
      '[kind]',
      'hermes | agent-zero | apt (default: hermes (the Hermes home and every home hooks were installed into), agent-zero with --root, apt when installed)',
    )
    .option('--home <dir>', 'hermes: the Hermes home')
    .option('--root <dir>', 'agent-zero: the Agent Zero folder')
    .addOption(apt().confDir)
    .option('--json', 'print {hooks, agents, apt, notes} as JSON')
    .action(async (k: string | undefined, o: { home?: string; root?: string; aptConfDir?: string }, cmd: Command) => {
      const asJson = d.json(cmd);
      const asked = k ? kindOf(d, k) : undefined;
      nonEmptyFolders(d, o);
      const kinds: Kind[] = asked
        ? asked === 'apt'
          ? []
          : [asked]
        : o.root
          ? o.home
            ? ['hermes', 'agent-zero']
            : ['agent-zero']
          : o.aptConfDir !== undefined
            ? []
            : ['hermes'];
      const hooks: HookStatus[] = [];
      const lines: string[] = [];
      for (const kind of kinds) {
        if (kind === 'hermes' && !asked && o.home === undefined) {
          // bare `hook status`: the default home when it exists, and every home hooks were installed
          // into with this state dir; none of them: say so (not an error: nothing is installed)
          const stateDir = stateDirOf(cmd);
          const dflt = hermesHomeOf();
          const recorded = await installedHermesHomes(stateDir);
          const homes = [...new Set([...(isDir(dflt) ? [dflt] : []), ...recorded])];
          if (!homes.length)
            lines.push(
              `hermes: no Hermes home at ${dflt}${process.env.HERMES_HOME ? ' (HERMES_HOME)' : ''} and no Hermes hooks ` +
                `installed with the state dir ${stateDir}. Give --home DIR for a Hermes home elsewhere ` +
                '(agentkeep hook install hermes --home DIR installs one).',
            );
          for (const home of homes) {
            try {
              hooks.push(await statusHermes({ home }));
            } catch (e) {
              if (!(e instanceof AgentKeepError)) throw e;
              hooks.push({
                kind: 'hermes',
                location: home,
                installed: false,
                entries: [],
                notes: [],
                error: recorded.includes(home)
                  ? `AgentKeep's hooks were installed here with this state dir, but ${e.message.replace(/; nothing was changed\.$/, '.')}`
                  : `${e.message}${e.hint ? ` ${e.hint}` : ''}`,
              });
              d.setExitCode?.(1);
            }
          }
          continue;
        }
        hooks.push(kind === 'hermes' ? await statusHermes({ home: o.home }) : await statusAgentZero({ root: o.root }));
      }
      const aptSt = asked === 'apt' || (!asked && aptStatusWanted(o)) ? await aptStatus(o) : undefined;
      if (aptSt && asked === 'apt') {
        if (asJson) d.printJson({ apt: aptSt.status });
        else d.io.out(aptSt.text);
        return;
      }
      const { agents } = await call(d.core(cmd), 'agentList', {});
      if (asJson)
        d.printJson({
          hooks,
          agents,
          ...(aptSt ? { apt: aptSt.status } : {}),
          ...(lines.length ? { notes: lines } : {}),
        });
      else {
        const ag = agents.length
          ? `Agents:\n${table([
              ['NAME', 'TARGET', 'STORES', 'FAIL', 'AGENT RESTORES'],
              ...agents.map((a) => [
                a.name,
                a.target,
                (a.stores ?? []).join(', '),
                a.failClosed ? 'closed' : 'open',
                a.allowAgentRestores ? 'scope agent without approval' : 'need approval',
              ]),
            ])}`
          : 'No agents set up yet.';
        d.io.out([...lines, ...hooks.map(statusText), ...(aptSt ? [aptSt.text] : []), ag].join('\n'));
      }
    });

  hook
    .command('settings')
    .description("an agent's hook settings: fail closed or open, and whether its restore requests need approval")
    .requiredOption('--agent <name>', 'the agent')
    .option('--fail-closed', 'block a risky call when its restore point cannot be taken')
    .option('--fail-open', 'let a risky call through when its restore point cannot be taken (default)')
    .option('--allow-agent-restores', "let the agent's restore_request restore scope agent without approval")
    .option('--approve-agent-restores', 'every restore the agent asks for waits for approval (default)')
    .option('--json', 'print the settings as JSON')
    .action(
      async (
        o: {
          agent: string;
          failClosed?: boolean;
          failOpen?: boolean;
          allowAgentRestores?: boolean;
          approveAgentRestores?: boolean;
        },
        cmd: Command,
      ) => {
        const asJson = d.json(cmd);
        if (o.failClosed && o.failOpen)
          throw d.usage('--fail-closed and --fail-open contradict each other.', 'Give one of them.');
        if (o.allowAgentRestores && o.approveAgentRestores)
          throw d.usage(
            '--allow-agent-restores and --approve-agent-restores contradict each other.',
            'Give one of them.',
          );
        const next = await call(d.core(cmd), 'agentSetSettings', {
          name: o.agent,
          ...(o.failClosed ? { failClosed: true } : o.failOpen ? { failClosed: false } : {}),
          ...(o.allowAgentRestores
            ? { allowAgentRestores: true }
            : o.approveAgentRestores
              ? { allowAgentRestores: false }
              : {}),
        });
        if (asJson) d.printJson(next);
        else
          d.io.out(
            `Agent ${next.name}: target ${next.target}; hooks fail ` +
              (next.failClosed
                ? 'closed (a risky call is blocked when its restore point cannot be taken)'
                : 'open (a risky call goes ahead when its restore point cannot be taken, with a warning)') +
              `; restore requests ${next.allowAgentRestores ? 'of scope agent run without approval' : 'wait for approval'}.`,
          );
      },
    );

  hook
    .command('run')
    .description('the hook itself: reads the tool call as JSON on stdin (the agent runs this; see docs/agent-hooks.md)')
    .argument('<kind>', 'hermes | agent-zero | apt')
    .option('--agent <name>', 'the agent')
    .option('--target <target>', "override the agent's target")
    .option('--store <store>', "override the agent's stores (repeatable)", collect, [])
    .addOption(apt().dpkg)
    .addOption(apt().budget)
    .action(
      async (
        k: string,
        o: { agent?: string; target?: string; store: string[]; dpkg?: AptStep; budgetMs?: string },
        cmd: Command,
      ) => {
        if (kindOf(d, k) === 'apt') return aptRun(aptDeps, cmd, o);
        const argv = [
          'hook',
          'run',
          k,
          ...(o.agent ? ['--agent', o.agent] : []),
          ...(o.target ? ['--target', o.target] : []),
          ...o.store.flatMap((s) => ['--store', s]),
          '--state-dir',
          stateDirOf(cmd),
        ];
        await hookMain(
          argv,
          { readStdin: processStdin, out: (s) => d.io.out(s), err: (s) => d.io.err(s) },
          () => full as HookFull,
        );
      },
    );

  root
    .command('mcp')
    .description(
      "the agent's MCP server on stdio: restore_point_create, restore_point_list, restore_point_diff, restore_request, memory_lint",
    )
    .option('--agent <name>', 'the agent (hook install set it up)')
    .option('--target <target>', "the target (instead of, or overriding, the agent's)")
    .option('--store <store>', 'memory store (repeatable)', collect, [])
    .action(async (o: { agent?: string; target?: string; store: string[] }, cmd: Command) => {
      const stateDir = stateDirOf(cmd);
      const agent = await resolveHookAgent(stateDir, { agent: o.agent, target: o.target, stores: o.store });
      // loaded for this command only: the MCP SDK (with its zod 3 schemas and ajv) costs every other start ~10 ms
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { serveMcp } = require('../hooks/mcp') as typeof import('../hooks/mcp');
      await serveMcp(agent, stateDir);
      d.serving();
    });

  const req = root
    .command('request')
    .description('restore requests of the agent (MCP restore_request): list, approve, deny');
  req
    .command('list')
    .description('restore requests, newest first (pending only, unless --all)')
    .option('--target <target>', "only this target's")
    .option('--agent <name>', "only this agent's (its target)")
    .option('--all', 'also approved, denied and failed ones')
    .option('--json', 'print a JSON array')
    .action(async (o: { target?: string; agent?: string; all?: boolean }, cmd: Command) => {
      const asJson = d.json(cmd);
      const target =
        o.target ?? (o.agent ? (await resolveHookAgent(stateDirOf(cmd), { agent: o.agent })).target : undefined);
      const rs = await call(d.core(cmd), 'requestList', {
        ...(target ? { target } : {}),
        ...(o.all ? {} : { status: 'pending' }),
      });
      if (asJson) d.printJson(rs);
      else d.io.out(requestsTable(rs));
    });

  req
    .command('approve')
    .description('approve a pending request: runs the restore (with its pre-restore point, so it can be undone)')
    .argument('<id>', 'request id (request list)')
    .option('--yes', 'do not ask for confirmation')
    .option('--json', 'print the result as JSON')
    .action(async (id: string, o: { yes?: boolean }, cmd: Command) => {
      const asJson = d.json(cmd);
      const c = d.core(cmd);
      const r = (await call(c, 'requestList', {})).find((x) => x.id === id);
      if (!r) throw new AgentKeepError('InvalidParams', `No restore request ${id}.`, 'See agentkeep request list.');
      if (r.status !== 'pending')
        throw new AgentKeepError(
          'InvalidParams',
          `Restore request ${id} is ${r.status}, not pending.`,
          'See agentkeep request list --all.',
        );
      if (!o.yes) {
        if (!d.io.isTTY)
          throw new AgentKeepError(
            'ConfirmationRequired',
            `Approving ${id} restores ${r.restorePoint} (scope ${r.scope}) on ${r.target} and needs confirmation.`,
            'Pass --yes (the current state is captured first, so the restore can be undone).',
          );
        const diff = await call(c, 'restorePointDiff', {
          target: r.target,
          id: r.restorePoint,
          ...(r.stores ? { stores: r.stores } : {}),
        }).catch(() => undefined);
        d.io.err(
          `Agent ${r.agent ?? '?'} asks to restore ${r.restorePoint} (scope ${r.scope}) on ${r.target}: "${r.reason}"\n` +
            `${diff ? changeSummary(diff, true, r.scope) : ''}\n` +
            'A restore does not undo what the agent did outside the machine (messages sent, remote pushes, ' +
            'API calls, payments).\nThe current state is captured first, so this can be undone.',
        );
        if (!(await d.io.confirm('Restore?')))
          throw new AgentKeepError(
            'ConfirmationRequired',
            'Not approved; nothing was restored. The request is still pending.',
            `Approve it later (agentkeep request approve ${id}) or deny it (agentkeep request deny ${id}).`,
          );
      }
      const res = await call(c, 'requestApprove', { id });
      if (asJson) d.printJson(res);
      else {
        // the same runnable line as every other printed restore action (with --yes, the state dir when not the default)
        const undo =
          res.request.undo &&
          commandLine(
            nextAction('Undo', 'restorePointRestore', {
              target: r.target,
              id: res.request.undo,
              scope: r.scope,
              ...(r.stores?.length ? { stores: r.stores } : {}),
            }),
            { stateDir: stateDirOf(cmd) },
          );
        d.io.out(
          `Approved ${id}: restored ${r.restorePoint} (scope ${r.scope}) on ${r.target}.` +
            `${res.restore ? `\n${changeSummary(res.restore.changes, false, r.scope)}` : ''}\n` +
            (undo ? `Undo: ${undo}` : 'It took no undo point.'),
        );
      }
    });

  req
    .command('deny')
    .description('deny a pending request: nothing is restored')
    .argument('<id>', 'request id (request list)')
    .option('--note <text>', 'why (kept with the request)')
    .option('--json', 'print the request as JSON')
    .action(async (id: string, o: { note?: string }, cmd: Command) => {
      const asJson = d.json(cmd);
      const r = await call(d.core(cmd), 'requestDeny', { id, ...(o.note ? { note: o.note } : {}) });
      if (asJson) d.printJson(r);
      else d.io.out(`Denied ${id}; nothing was restored.`);
    });
}
