/**
 * `agentkeep hook install|remove|status hermes|agent-zero`: put AgentKeep's hook into an agent's own
 * configuration, take it out again, and say what is installed. Hermes: config.yaml (./hermesConfig.ts),
 * with a backup and a record in `<stateDir>/hooks/` (hermes-<key>.json: the file, its backup, the
 * hash install left, what install created); Agent Zero: two extension files (./agentZero.ts).
 * Bad input (a config.yaml that does not parse, a folder that is not the agent's, a file in the way)
 * is refused with a clear error before anything is written; a second install changes nothing.
 */
import { existsSync, promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { AgentKeepError } from '../core/errors';
import { readJsonIfExists, writeFileAtomic, writeJsonAtomic } from '../core/fsutil';
import { AGENT_ZERO_FILES, AGENT_ZERO_MARKER, agentZeroFiles } from './agentZero';
import {
  addEntries,
  agentKeepEntries,
  HERMES_EVENTS,
  installRecordPaths,
  parseConfig,
  removeEntries,
  sha256,
  shlexQuote,
  writeConfig,
  type HookEntry,
} from './hermesConfig';

/** The programs the installed hooks run (absolute paths: Hermes runs them without a shell or PATH lookup). */
export interface HookPrograms {
  node: string;
  /** out/hook.js: the hook's small entry point */
  hook: string;
  /** out/sidecar.js: the full CLI (the MCP server) */
  sidecar: string;
}

/**
 * The built programs: out/hook.js and out/sidecar.js next to the running bundle (or in the repo's
 * out/ when running from source).
 * @throws Unsupported when they are not built
 */
export function hookPrograms(): HookPrograms {
  for (const dir of [__dirname, path.resolve(__dirname, '..', '..', 'out')]) {
    const hook = path.join(dir, 'hook.js');
    if (existsSync(hook) && existsSync(path.join(dir, 'hook-full.js')))
      return { node: process.execPath, hook, sidecar: path.join(dir, 'sidecar.js') };
  }
  throw new AgentKeepError(
    'Unsupported',
    'The hook program out/hook.js is not built.',
    'Build it first: npm run build (or install the packaged extension).',
  );
}

/** Hermes' first-use consent, in the words install prints. */
export function consentNote(home: string): string {
  return (
    `Hermes asks once before it runs a new hook command (first-use consent, remembered in ${path.join(home, 'shell-hooks-allowlist.json')}): ` +
    'start hermes on a terminal and answer y for each AgentKeep hook. Gateway and cron runs have no terminal to ask on: ' +
    'start them with --accept-hooks, set HERMES_ACCEPT_HOOKS=1, or put `hooks_auto_accept: true` in config.yaml; until then Hermes skips these hooks.'
  );
}

/** The Hermes home: --home, else HERMES_HOME, else ~/.hermes. */
export function hermesHomeOf(home?: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(home ?? env.HERMES_HOME ?? path.join(os.homedir(), '.hermes'));
}

/**
 * config.yaml of a Hermes home.
 * @throws InvalidParams naming what is missing, or config.yaml that is not a file (a directory, a
 *   FIFO, a dangling symlink) with the fix; nothing changed
 */
async function hermesConfigFile(home: string): Promise<string> {
  const st = await fs.stat(home).catch(() => undefined);
  if (!st?.isDirectory())
    throw new AgentKeepError(
      'InvalidParams',
      `No Hermes home at ${home}: ${st ? 'not a directory' : 'no such directory'}; nothing was changed.`,
      'Give the folder Hermes uses (HERMES_HOME, usually ~/.hermes) with --home DIR.',
    );
  const file = path.join(home, 'config.yaml');
  const l = await fs.lstat(file).catch(() => undefined);
  if (l) {
    const cf = l.isSymbolicLink() ? await fs.stat(file).catch(() => undefined) : l;
    if (cf?.isFile()) return file;
    const what = !cf
      ? `a symbolic link to ${await fs.readlink(file).catch(() => '?')}, which does not exist`
      : cf.isDirectory()
        ? 'a directory'
        : 'not a regular file';
    throw new AgentKeepError(
      'InvalidParams',
      `${file} is ${what}, not Hermes' config file: Hermes cannot read its settings from it; nothing was changed.`,
      `Move it away (mv ${file} ${file}.moved) and let Hermes write a new one (hermes setup), or put the ` +
        'config.yaml back (e.g. from backups/config/ in the Hermes home), then try again.',
    );
  }
  const hermesLike = ['memories', 'state.db', 'SOUL.md', '.env', 'sessions', 'skills'].some((n) =>
    existsSync(path.join(home, n)),
  );
  throw new AgentKeepError(
    'InvalidParams',
    hermesLike
      ? `${home} has no config.yaml; nothing was changed.`
      : `${home} is not a Hermes home (no config.yaml, memories/ or state.db); nothing was changed.`,
    hermesLike
      ? 'Run hermes once (or hermes setup) so it writes config.yaml, then install again.'
      : 'Give the folder Hermes uses (HERMES_HOME, usually ~/.hermes) with --home DIR.',
  );
}

/**
 * Check that `home` is a Hermes home with a config.yaml that is a file (what install, remove and
 * status need), before anything else is looked at or changed.
 * @returns config.yaml's path
 * @throws InvalidParams naming the problem (no such folder, not a Hermes home, no config.yaml yet,
 *   config.yaml not a file) and the fix; nothing changed
 */
export function checkHermesHome(home: string): Promise<string> {
  return hermesConfigFile(path.resolve(home));
}

/** The record install keeps of one config.yaml. */
interface HermesRecord {
  config: string;
  backup: string;
  /** sha256 of config.yaml as install left it */
  afterHash: string;
  installedAt: string;
  command: string;
  created: { hooks?: boolean; events?: string[]; mcpServers?: boolean };
}

/** What an install or remove did. */
export interface HookChange {
  kind: 'hermes' | 'agent-zero';
  /** The file(s) changed or that would have been */
  files: string[];
  changed: boolean;
  /** One sentence: what happened */
  message: string;
  backup?: string;
  command?: string;
  notes: string[];
}

/** The hook command Hermes runs (one string, split with shlex). */
export function hermesHookCommand(p: HookPrograms, agent: string, stateDir: string): string {
  return [p.node, p.hook, 'hook', 'run', 'hermes', '--agent', agent, '--state-dir', stateDir].map(shlexQuote).join(' ');
}

/**
 * Add AgentKeep's hooks (and with `mcp` its MCP server) to a Hermes home's config.yaml.
 * @param o.dryRun check everything and report, but write nothing
 * @throws InvalidParams (not a Hermes home, config.yaml does not parse, flow-style hooks), Unsupported (not built)
 */
export async function installHermes(o: {
  home?: string;
  agent: string;
  stateDir: string;
  mcp?: boolean;
  programs?: HookPrograms;
  dryRun?: boolean;
}): Promise<HookChange> {
  const home = hermesHomeOf(o.home);
  const file = await hermesConfigFile(home);
  const progs = o.programs ?? hookPrograms();
  const command = hermesHookCommand(progs, o.agent, o.stateDir);
  const text = await fs.readFile(file, 'utf8');
  const parsed = parseConfig(text, file);
  const mcp = o.mcp
    ? { command: progs.node, args: [progs.sidecar, 'mcp', '--agent', o.agent, '--state-dir', o.stateDir] }
    : undefined;
  const { text: out, added, mcpAdded } = addEntries(parsed, file, { command, ...(mcp ? { mcp } : {}) });
  const notes = [consentNote(home)];
  if (out === text) {
    return {
      kind: 'hermes',
      files: [file],
      changed: false,
      message: `AgentKeep's hooks${o.mcp ? ' and MCP server are' : ' are'} already in ${file}; nothing changed.`,
      command,
      notes,
    };
  }
  if (o.dryRun)
    return {
      kind: 'hermes',
      files: [file],
      changed: true,
      message: `Would add AgentKeep's entries to ${file}.`,
      command,
      notes,
    };
  const paths = installRecordPaths(o.stateDir, file);
  const old = await readJsonIfExists<HermesRecord>(paths.record).catch(() => undefined);
  // keep the first backup while the file is still as the last install left it (remove then restores the original bytes)
  const keepOld = old && old.afterHash === sha256(text) && existsSync(old.backup);
  const createdNow = {
    hooks: !parsed.root?.items.some((x) => (x.key as { value?: unknown }).value === 'hooks'),
    events: HERMES_EVENTS.filter(
      (ev) =>
        added.some((a: HookEntry) => a.event === ev) &&
        !agentKeepEntries(parsed).some((h) => h.event === ev) &&
        !hasEvent(parsed, ev),
    ),
    mcpServers: mcpAdded && !parsed.root?.items.some((x) => (x.key as { value?: unknown }).value === 'mcp_servers'),
  };
  const created = keepOld
    ? {
        hooks: old.created.hooks || createdNow.hooks,
        events: [...new Set([...(old.created.events ?? []), ...createdNow.events])],
        mcpServers: old.created.mcpServers || createdNow.mcpServers,
      }
    : createdNow;
  await fs.mkdir(path.dirname(paths.backup), { recursive: true, mode: 0o700 });
  if (!keepOld) await writeFileAtomic(paths.backup, text, { mode: 0o600 });
  await writeConfig(file, out);
  const rec: HermesRecord = {
    config: file,
    backup: paths.backup,
    afterHash: sha256(out),
    installedAt: new Date().toISOString(),
    command,
    created,
  };
  await writeJsonAtomic(paths.record, rec, { pretty: true });
  const what = [
    added.length
      ? `${added.length} hook entries (pre_tool_call and post_tool_call: terminal, write_file|patch, memory)`
      : '',
    mcpAdded ? 'the MCP server mcp_servers.agentkeep' : '',
  ]
    .filter(Boolean)
    .join(' and ');
  return {
    kind: 'hermes',
    files: [file],
    changed: true,
    message: `Added ${what} to ${file}; backup of the old file: ${paths.backup}.`,
    backup: paths.backup,
    command,
    notes,
  };
}

function hasEvent(p: ReturnType<typeof parseConfig>, ev: string): boolean {
  const js = (p.doc.toJS() ?? {}) as { hooks?: Record<string, unknown> };
  return !!js.hooks && typeof js.hooks === 'object' && ev in js.hooks;
}

/**
 * Take AgentKeep's entries out of config.yaml: the backup back byte for byte when the file is as
 * install left it, else only AgentKeep's entries cut out (the rest kept).
 * @throws InvalidParams (not a Hermes home; config.yaml changed and no longer parses)
 */
export async function removeHermes(o: { home?: string; stateDir: string }): Promise<HookChange> {
  const home = hermesHomeOf(o.home);
  const file = await hermesConfigFile(home);
  const text = await fs.readFile(file, 'utf8');
  const paths = installRecordPaths(o.stateDir, file);
  const rec = await readJsonIfExists<HermesRecord>(paths.record).catch(() => undefined);
  if (rec && rec.afterHash === sha256(text) && existsSync(rec.backup)) {
    const original = await fs.readFile(rec.backup);
    await writeConfig(file, original);
    await fs.rm(paths.record, { force: true });
    return {
      kind: 'hermes',
      files: [file],
      changed: true,
      message: `Put ${file} back as it was before the install (from ${rec.backup}, byte for byte).`,
      backup: rec.backup,
      notes: [],
    };
  }
  const parsed = parseConfig(text, file);
  const { text: out, removed, mcpRemoved } = removeEntries(parsed, file, rec?.created);
  if (out === text) {
    await fs.rm(paths.record, { force: true });
    return {
      kind: 'hermes',
      files: [file],
      changed: false,
      message: `No AgentKeep entries in ${file}; nothing changed.`,
      notes: [],
    };
  }
  const backup = path.join(path.dirname(paths.backup), `hermes-${sha256(file).slice(0, 16)}-before-remove.yaml`);
  await fs.mkdir(path.dirname(backup), { recursive: true, mode: 0o700 });
  await writeFileAtomic(backup, text, { mode: 0o600 });
  await writeConfig(file, out);
  await fs.rm(paths.record, { force: true });
  return {
    kind: 'hermes',
    files: [file],
    changed: true,
    message:
      `Removed ${removed} AgentKeep hook entries${mcpRemoved ? ' and mcp_servers.agentkeep' : ''} from ${file} ` +
      `(it changed since the install, so only AgentKeep's entries were cut out); backup: ${backup}.`,
    backup,
    notes: [],
  };
}

/**
 * The Hermes homes AgentKeep's hooks were installed into with this state dir: the folders of the
 * config.yaml files named by the install records (`<stateDir>/hooks/hermes-<key>.json`, written by
 * installHermes, dropped by removeHermes), sorted. A record that cannot be read is left out; a missing
 * state dir or hooks folder gives [].
 */
export async function installedHermesHomes(stateDir: string): Promise<string[]> {
  const dir = path.join(stateDir, 'hooks');
  const names = await fs.readdir(dir).catch(() => [] as string[]);
  const homes = new Set<string>();
  for (const n of names) {
    if (!/^hermes-[0-9a-f]{16}\.json$/.test(n)) continue;
    const rec = await readJsonIfExists<Partial<HermesRecord>>(path.join(dir, n)).catch(() => undefined);
    if (typeof rec?.config === 'string' && path.isAbsolute(rec.config)) homes.add(path.dirname(rec.config));
  }
  return [...homes].sort();
}

/** What `hook status` reports for one agent. */
export interface HookStatus {
  kind: 'hermes' | 'agent-zero';
  location: string;
  installed: boolean;
  entries: Array<{ event?: string; matcher?: string; command: string; consent?: boolean; file?: string }>;
  mcp?: boolean;
  notes: string[];
  /** Why this home could not be read (bare `hook status` over several homes: the others are still reported) */
  error?: string;
}

/** AgentKeep's entries in a Hermes home and whether Hermes' consent allowlist approves each. */
export async function statusHermes(o: { home?: string }): Promise<HookStatus> {
  const home = hermesHomeOf(o.home);
  const file = await hermesConfigFile(home);
  const parsed = parseConfig(await fs.readFile(file, 'utf8'), file);
  const js = (parsed.doc.toJS() ?? {}) as { hooks_auto_accept?: unknown; mcp_servers?: Record<string, unknown> };
  let approvals: Array<{ event?: string; command?: string }> = [];
  try {
    const a = JSON.parse(await fs.readFile(path.join(home, 'shell-hooks-allowlist.json'), 'utf8')) as {
      approvals?: typeof approvals;
    };
    approvals = Array.isArray(a.approvals) ? a.approvals : [];
  } catch {
    /* no allowlist yet */
  }
  const entries = agentKeepEntries(parsed).map((e) => ({
    event: e.event,
    matcher: String(e.entry.matcher ?? ''),
    command: String(e.entry.command),
    consent: approvals.some((a) => a.event === e.event && a.command === e.entry.command),
  }));
  const autoAccept = js.hooks_auto_accept === true || /^(1|true|yes|on)$/i.test(String(js.hooks_auto_accept ?? ''));
  const notes: string[] = [];
  if (entries.length && !entries.every((e) => e.consent) && !autoAccept) notes.push(consentNote(home));
  if (autoAccept) notes.push('hooks_auto_accept: true in config.yaml: Hermes runs the hooks without asking.');
  return {
    kind: 'hermes',
    location: file,
    installed: entries.length > 0,
    entries,
    mcp: !!js.mcp_servers && typeof js.mcp_servers === 'object' && 'agentkeep' in js.mcp_servers,
    notes,
  };
}

/** The extension folder check. @throws InvalidParams when `root` is not an Agent Zero checkout */
async function agentZeroRoot(root: string | undefined): Promise<string> {
  if (!root)
    throw new AgentKeepError(
      'InvalidParams',
      'hook install agent-zero needs --root DIR (the Agent Zero folder, /a0 in its Docker image).',
      'Give e.g. --root /a0.',
    );
  const abs = path.resolve(root);
  if (!existsSync(path.join(abs, 'python', 'helpers', 'extension.py'))) {
    throw new AgentKeepError(
      'InvalidParams',
      `${abs} is not an Agent Zero folder (no python/helpers/extension.py); nothing was changed.`,
      'Give the folder that holds agent.py and python/ (/a0 in the Docker image) with --root DIR.',
    );
  }
  return abs;
}

/**
 * Check that `root` is an Agent Zero folder (what install and status need), before anything else.
 * @returns its absolute path
 * @throws InvalidParams (no --root, not an Agent Zero folder) naming the fix; nothing changed
 */
export function checkAgentZeroRoot(root: string | undefined): Promise<string> {
  return agentZeroRoot(root);
}

/** The hook argv the Agent Zero extensions run (no shell). */
export function agentZeroHookArgv(p: HookPrograms, agent: string, stateDir: string): string[] {
  return [p.node, p.hook, 'hook', 'run', 'agent-zero', '--agent', agent, '--state-dir', stateDir];
}

/**
 * Write the two extension files into an Agent Zero folder.
 * @throws InvalidParams (not Agent Zero; a file of the same name not written by AgentKeep is in the way)
 */
export async function installAgentZero(o: {
  root?: string;
  agent: string;
  stateDir: string;
  programs?: HookPrograms;
  dryRun?: boolean;
}): Promise<HookChange> {
  const root = await agentZeroRoot(o.root);
  const progs = o.programs ?? hookPrograms();
  const argv = agentZeroHookArgv(progs, o.agent, o.stateDir);
  const want = agentZeroFiles(argv);
  const files = { before: path.join(root, AGENT_ZERO_FILES.before), after: path.join(root, AGENT_ZERO_FILES.after) };
  const current = {
    before: await fs.readFile(files.before, 'utf8').catch(() => undefined),
    after: await fs.readFile(files.after, 'utf8').catch(() => undefined),
  };
  for (const k of ['before', 'after'] as const) {
    const c = current[k];
    if (c !== undefined && !c.startsWith(AGENT_ZERO_MARKER))
      throw new AgentKeepError(
        'InvalidParams',
        `${files[k]} exists and was not written by AgentKeep; nothing was changed.`,
        'Move that file away (or rename it), then install again.',
      );
  }
  const notes = [
    'Agent Zero loads extensions when the agent starts: restart it (docker restart <container>) so the hook takes effect.',
  ];
  if (current.before === want.before && current.after === want.after) {
    return {
      kind: 'agent-zero',
      files: [files.before, files.after],
      changed: false,
      message: `AgentKeep's extensions are already in ${root}; nothing changed.`,
      command: argv.map(shlexQuote).join(' '),
      notes,
    };
  }
  if (o.dryRun)
    return {
      kind: 'agent-zero',
      files: [files.before, files.after],
      changed: true,
      message: `Would write ${files.before} and ${files.after}.`,
      notes,
    };
  for (const k of ['before', 'after'] as const) {
    await fs.mkdir(path.dirname(files[k]), { recursive: true });
    await writeFileAtomic(files[k], want[k]);
  }
  return {
    kind: 'agent-zero',
    files: [files.before, files.after],
    changed: true,
    message: `Wrote ${files.before} and ${files.after}.`,
    command: argv.map(shlexQuote).join(' '),
    notes,
  };
}

/** Remove the extension files AgentKeep wrote (files without its marker are left alone and named). */
export async function removeAgentZero(o: { root?: string }): Promise<HookChange> {
  const root = await agentZeroRoot(o.root);
  const removed: string[] = [];
  const foreign: string[] = [];
  for (const rel of Object.values(AGENT_ZERO_FILES)) {
    const f = path.join(root, rel);
    const c = await fs.readFile(f, 'utf8').catch(() => undefined);
    if (c === undefined) continue;
    if (c.startsWith(AGENT_ZERO_MARKER)) {
      await fs.rm(f);
      removed.push(f);
    } else foreign.push(f);
  }
  const notes = foreign.map((f) => `${f} was not written by AgentKeep and was left alone.`);
  return {
    kind: 'agent-zero',
    files: removed,
    changed: removed.length > 0,
    message: removed.length
      ? `Removed ${removed.join(' and ')}; restart Agent Zero so it stops loading them.`
      : `No AgentKeep extensions in ${root}; nothing changed.`,
    notes,
  };
}

/** Whether AgentKeep's extensions are in an Agent Zero folder. */
export async function statusAgentZero(o: { root?: string }): Promise<HookStatus> {
  const root = await agentZeroRoot(o.root);
  const entries: HookStatus['entries'] = [];
  for (const rel of Object.values(AGENT_ZERO_FILES)) {
    const f = path.join(root, rel);
    const c = await fs.readFile(f, 'utf8').catch(() => undefined);
    if (c?.startsWith(AGENT_ZERO_MARKER))
      entries.push({ file: f, command: (/^AGENTKEEP_COMMAND = (.*)$/m.exec(c)?.[1] ?? '').trim() });
  }
  return {
    kind: 'agent-zero',
    location: root,
    installed: entries.length === 2,
    entries,
    notes: entries.length === 1 ? ['Only one of the two extension files is there: install again.'] : [],
  };
}
