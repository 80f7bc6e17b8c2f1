/**
 * AgentKeep's entries in Hermes' config.yaml (issue 15 item 3): the `hooks:` block (pre_tool_call and
 * post_tool_call, one entry per matcher: `terminal`, `write_file|patch`, `memory`) and, with --mcp,
 * `mcp_servers: agentkeep`. Hermes reads them as agent/shell_hooks.py and cli-config.yaml.example
 * describe: `command` split with shlex (shell=False, `~` expanded), `matcher` a regex on the tool
 * name (fullmatch), `timeout` in seconds (default 60, at least 1).
 *
 * Every other byte and comment of the file is kept: the YAML Document API (the `yaml` package)
 * parses the file and gives each node's source range, the new entries are inserted as text at the
 * end of those ranges in the file's own indentation, and the result is parsed again and must equal
 * the old data plus exactly the new entries, or nothing is written. (Re-serialising the document
 * would re-indent lists, rewrap folded strings and move comments.) `remove` puts the backup back
 * byte for byte when the file is still as install left it; otherwise it cuts only AgentKeep's
 * entries out the same way.
 */
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import {
  isMap,
  isScalar,
  isSeq,
  LineCounter,
  parseDocument,
  type Document,
  type Pair,
  type YAMLMap,
  type YAMLSeq,
} from 'yaml';
import { AgentKeepError } from '../core/errors';
import { writeFileAtomic } from '../core/fsutil';

/** The matchers AgentKeep hooks, for pre_tool_call and post_tool_call alike. */
export const HERMES_MATCHERS = ['terminal', 'write_file|patch', 'memory'] as const;
export const HERMES_EVENTS = ['pre_tool_call', 'post_tool_call'] as const;
/** Hook timeout written to config.yaml, in seconds: below Hermes' default of 60, above the hook's 20 s budget. */
export const HERMES_HOOK_TIMEOUT_S = 30;
/** MCP tool-call timeout written for `mcp_servers: agentkeep` (Hermes' default is 120 s). */
export const HERMES_MCP_TIMEOUT_S = 120;

/** One hooks entry. */
export interface HookEntry {
  event: (typeof HERMES_EVENTS)[number];
  matcher: string;
  command: string;
  timeout: number;
}

/** What install wants in the file. */
export interface HermesWanted {
  command: string;
  /** mcp_servers.agentkeep {command, args}; absent: no MCP entry */
  mcp?: { command: string; args: string[] };
}

/** Whether a hooks entry's command is one of AgentKeep's (any path, any agent). */
export function isAgentKeepHookCommand(cmd: unknown): boolean {
  return typeof cmd === 'string' && /\bhook run hermes\b/.test(cmd) && /agentkeep|hook\.js|sidecar\.js/.test(cmd);
}

/** A shlex-safe word (POSIX shell quoting, as Python's shlex.quote). */
export function shlexQuote(s: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'"'"'`)}'`;
}

/** The six hook entries for a command. */
export function wantedEntries(command: string): HookEntry[] {
  return HERMES_EVENTS.flatMap((event) =>
    HERMES_MATCHERS.map((matcher) => ({ event, matcher, command, timeout: HERMES_HOOK_TIMEOUT_S })),
  );
}

interface Parsed {
  text: string;
  doc: Document.Parsed;
  root: YAMLMap | null;
}

/** @throws InvalidParams naming the line of the first YAML error, or a root that is not a mapping */
export function parseConfig(text: string, file: string): Parsed {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false });
  if (doc.errors.length) {
    const e = doc.errors[0];
    const at = lc.linePos(e.pos[0]);
    throw new AgentKeepError(
      'InvalidParams',
      `${file} does not parse as YAML (line ${at.line}, column ${at.col}: ${e.message.split('\n')[0]}); nothing was changed.`,
      'Fix the file (Hermes cannot read it either), then run the install again.',
    );
  }
  const c = doc.contents;
  if (c === null || (isScalar(c) && c.value === null)) return { text, doc, root: null };
  if (!isMap(c) || c.flow)
    throw new AgentKeepError(
      'InvalidParams',
      `${file} is not a block mapping of settings at the top level; nothing was changed.`,
      'Hermes expects `key: value` settings; fix the file first.',
    );
  return { text, doc, root: c };
}

function pairOf(m: YAMLMap | null, key: string): Pair | undefined {
  return m?.items.find((p) => isScalar(p.key) && p.key.value === key) as Pair | undefined;
}

/** Entries of config.yaml that are AgentKeep's: `{event, index, entry}`. */
export function agentKeepEntries(p: Parsed): Array<{ event: string; index: number; entry: Record<string, unknown> }> {
  const js = (p.doc.toJS() ?? {}) as Record<string, unknown>;
  const hooks = js.hooks as Record<string, unknown> | undefined;
  const out: Array<{ event: string; index: number; entry: Record<string, unknown> }> = [];
  if (!hooks || typeof hooks !== 'object') return out;
  for (const [event, list] of Object.entries(hooks)) {
    if (!Array.isArray(list)) continue;
    list.forEach((e, index) => {
      if (e && typeof e === 'object' && isAgentKeepHookCommand((e as Record<string, unknown>).command))
        out.push({ event, index, entry: e as Record<string, unknown> });
    });
  }
  return out;
}

function lineStart(text: string, at: number): number {
  return text.lastIndexOf('\n', at - 1) + 1;
}
function col(text: string, at: number): number {
  return at - lineStart(text, at);
}
/** Offset just after the line that holds `at - 1` (a range end), adding a newline when the file has none there. */
function afterLine(text: string, end: number): { at: number; pre: string } {
  if (end > 0 && text[end - 1] === '\n') return { at: end, pre: '' };
  const nl = text.indexOf('\n', end);
  return nl < 0 ? { at: text.length, pre: '\n' } : { at: nl + 1, pre: '' };
}

function q(s: string): string {
  return JSON.stringify(s);
}

function renderItems(entries: HookEntry[], dash: number): string {
  const d = ' '.repeat(dash);
  return entries
    .map((e) => `${d}- matcher: ${q(e.matcher)}\n${d}  command: ${q(e.command)}\n${d}  timeout: ${e.timeout}\n`)
    .join('');
}

function renderMcp(m: NonNullable<HermesWanted['mcp']>, ind: number): string {
  const d = ' '.repeat(ind);
  return `${d}agentkeep:\n${d}  command: ${q(m.command)}\n${d}  args: [${m.args.map(q).join(', ')}]\n${d}  timeout: ${HERMES_MCP_TIMEOUT_S}\n`;
}

function flowError(file: string, key: string): AgentKeepError {
  return new AgentKeepError(
    'InvalidParams',
    `${file}: \`${key}:\` is written in flow style ({…} or […]) or as a plain value, which AgentKeep does not edit; nothing was changed.`,
    `Write ${key}: as an indented block (see Hermes' cli-config.yaml.example), or add AgentKeep's entries by hand.`,
  );
}

/**
 * The new text of config.yaml with the missing entries added (every other byte unchanged), and what
 * was created. Checks the result: parsed again, it must equal the old data plus the new entries.
 * @returns `text` unchanged when everything is already there
 * @throws InvalidParams for YAML it cannot edit safely (flow style, a `hooks:` that is not a mapping)
 */
export function addEntries(
  p: Parsed,
  file: string,
  want: HermesWanted,
): { text: string; added: HookEntry[]; mcpAdded: boolean } {
  const text = p.text;
  const have = agentKeepEntries(p);
  const missing = wantedEntries(want.command).filter(
    (w) => !have.some((h) => h.event === w.event && h.entry.matcher === w.matcher && h.entry.command === w.command),
  );
  const mcpPair = pairOf(p.root, 'mcp_servers');
  const mcpHave = mcpPair && isMap(mcpPair.value) ? pairOf(mcpPair.value, 'agentkeep') : undefined;
  const mcpMissing = !!want.mcp && !mcpHave;
  if (!missing.length && !mcpMissing) return { text, added: [], mcpAdded: false };
  const inserts: Array<{ at: number; text: string }> = [];
  const firstKey = p.root?.items[0]?.key as { range?: number[] } | undefined;
  const rootInd = firstKey?.range ? col(text, firstKey.range[0]) : 0;
  const appendTop = (s: string): void => {
    const pre = text.length && !text.endsWith('\n') ? '\n' : '';
    inserts.push({ at: text.length, text: pre + s });
  };

  if (missing.length) {
    const hooks = pairOf(p.root, 'hooks');
    const byEvent = (ev: string): HookEntry[] => missing.filter((m) => m.event === ev);
    if (!hooks) {
      const ind = ' '.repeat(rootInd);
      let s = `${ind}hooks:\n`;
      for (const ev of HERMES_EVENTS)
        if (byEvent(ev).length) s += `${ind}  ${ev}:\n${renderItems(byEvent(ev), rootInd + 4)}`;
      appendTop(s);
    } else if (isScalar(hooks.value) && hooks.value.value === null && !hooks.value.source) {
      const keyRange = (hooks.key as { range: number[] }).range;
      const ind = col(text, keyRange[0]) + 2;
      const { at, pre } = afterLine(text, keyRange[1]);
      let s = pre;
      for (const ev of HERMES_EVENTS)
        if (byEvent(ev).length) s += `${' '.repeat(ind)}${ev}:\n${renderItems(byEvent(ev), ind + 2)}`;
      inserts.push({ at, text: s });
    } else if (isMap(hooks.value) && !hooks.value.flow) {
      const hm = hooks.value;
      const ind = col(text, (hm.items[0].key as { range: number[] }).range[0]);
      let tail = '';
      for (const ev of HERMES_EVENTS) {
        const items = byEvent(ev);
        if (!items.length) continue;
        const evPair = pairOf(hm, ev);
        if (!evPair) {
          tail += `${' '.repeat(ind)}${ev}:\n${renderItems(items, ind + 2)}`;
        } else if (isSeq(evPair.value) && !evPair.value.flow) {
          const seq = evPair.value as YAMLSeq;
          const dash = col(text, seq.range![0]);
          const { at, pre } = afterLine(text, seq.range![1]);
          inserts.push({ at, text: pre + renderItems(items, dash) });
        } else if (isScalar(evPair.value) && evPair.value.value === null && !evPair.value.source) {
          const keyRange = (evPair.key as { range: number[] }).range;
          const { at, pre } = afterLine(text, keyRange[1]);
          inserts.push({ at, text: pre + renderItems(items, col(text, keyRange[0]) + 2) });
        } else throw flowError(file, `hooks.${ev}`);
      }
      if (tail) {
        const { at, pre } = afterLine(text, hm.range![1]);
        inserts.push({ at, text: pre + tail });
      }
    } else throw flowError(file, 'hooks');
  }

  if (mcpMissing && want.mcp) {
    if (!mcpPair) appendTop(`${' '.repeat(rootInd)}mcp_servers:\n${renderMcp(want.mcp, rootInd + 2)}`);
    else if (isMap(mcpPair.value) && !mcpPair.value.flow) {
      const mm = mcpPair.value;
      const ind = col(text, (mm.items[0].key as { range: number[] }).range[0]);
      const { at, pre } = afterLine(text, mm.range![1]);
      inserts.push({ at, text: pre + renderMcp(want.mcp, ind) });
    } else if (isScalar(mcpPair.value) && mcpPair.value.value === null && !mcpPair.value.source) {
      const keyRange = (mcpPair.key as { range: number[] }).range;
      const { at, pre } = afterLine(text, keyRange[1]);
      inserts.push({ at, text: pre + renderMcp(want.mcp, col(text, keyRange[0]) + 2) });
    } else throw flowError(file, 'mcp_servers');
  }

  let out = text;
  // apply from the end so earlier offsets stay valid; same offset: keep insertion order
  const ordered = inserts.map((x, i) => ({ ...x, i })).sort((a, b) => b.at - a.at || b.i - a.i);
  for (const ins of ordered) out = out.slice(0, ins.at) + ins.text + out.slice(ins.at);

  // the check: old data + exactly the new entries
  const expected = structuredClone((p.doc.toJS() ?? {}) as Record<string, unknown>);
  if (missing.length) {
    const hooks = (expected.hooks ??= {}) as Record<string, unknown[] | null>;
    for (const m of missing)
      (hooks[m.event] ??= []).push({ matcher: m.matcher, command: m.command, timeout: m.timeout });
  }
  if (mcpMissing && want.mcp)
    ((expected.mcp_servers ??= {}) as Record<string, unknown>).agentkeep = {
      command: want.mcp.command,
      args: want.mcp.args,
      timeout: HERMES_MCP_TIMEOUT_S,
    };
  const again = parseDocument(out);
  if (again.errors.length || !isDeepStrictEqual(again.toJS(), expected)) {
    throw new AgentKeepError(
      'Internal',
      `Could not add AgentKeep's entries to ${file} without changing anything else in it; nothing was changed.`,
      "Add them by hand (agentkeep hook status hermes prints them), and report the file's layout as a bug.",
    );
  }
  return { text: out, added: missing, mcpAdded: mcpMissing };
}

/**
 * The text with AgentKeep's hooks entries (and mcp_servers.agentkeep) cut out, each entry's lines
 * removed whole; an event list or `hooks:` / `mcp_servers:` left empty is removed when `created`
 * says install added it. Checked like addEntries.
 */
export function removeEntries(
  p: Parsed,
  file: string,
  created: { hooks?: boolean; events?: string[]; mcpServers?: boolean } = {},
): { text: string; removed: number; mcpRemoved: boolean } {
  const text = p.text;
  const cuts: Array<[number, number]> = [];
  let removed = 0;
  const hooks = pairOf(p.root, 'hooks');
  const emptied: string[] = [];
  if (hooks && isMap(hooks.value)) {
    for (const evPair of hooks.value.items as Pair[]) {
      if (!isSeq(evPair.value) || evPair.value.flow) continue;
      const seq = evPair.value as YAMLSeq;
      let kept = 0;
      for (const item of seq.items) {
        const node = item as YAMLMap;
        if (isMap(node) && isAgentKeepHookCommand(node.get('command'))) {
          const [start, end] = [lineStart(text, node.range![0]), afterLine(text, node.range![1]).at];
          cuts.push([start, end]);
          removed++;
        } else kept++;
      }
      const ev = isScalar(evPair.key) ? String(evPair.key.value) : '';
      if (!kept && seq.items.length && created.events?.includes(ev)) {
        emptied.push(ev);
        const kr = (evPair.key as { range: number[] }).range;
        cuts.push([lineStart(text, kr[0]), afterLine(text, kr[1]).at]);
      }
    }
    const allEvents = (hooks.value.items as Pair[]).map((x) => (isScalar(x.key) ? String(x.key.value) : ''));
    if (created.hooks && allEvents.every((e) => emptied.includes(e))) {
      const kr = (hooks.key as { range: number[] }).range;
      cuts.push([lineStart(text, kr[0]), afterLine(text, kr[1]).at]);
    }
  }
  let mcpRemoved = false;
  const mcp = pairOf(p.root, 'mcp_servers');
  if (mcp && isMap(mcp.value)) {
    const ours = pairOf(mcp.value, 'agentkeep');
    if (ours && isMap(ours.value)) {
      const kr = (ours.key as { range: number[] }).range;
      cuts.push([lineStart(text, kr[0]), afterLine(text, ours.value.range![1]).at]);
      mcpRemoved = true;
      if (created.mcpServers && mcp.value.items.length === 1) {
        const mk = (mcp.key as { range: number[] }).range;
        cuts.push([lineStart(text, mk[0]), afterLine(text, mk[1]).at]);
      }
    }
  }
  // merge overlapping cuts, apply from the end
  cuts.sort((a, b) => a[0] - b[0]);
  const merged: Array<[number, number]> = [];
  for (const c of cuts) {
    const last = merged.at(-1);
    if (last && c[0] <= last[1]) last[1] = Math.max(last[1], c[1]);
    else merged.push([...c]);
  }
  let out = text;
  for (const [a, b] of merged.reverse()) out = out.slice(0, a) + out.slice(b);
  const again = parseDocument(out);
  if (again.errors.length)
    throw new AgentKeepError(
      'Internal',
      `Could not remove AgentKeep's entries from ${file} cleanly; nothing was changed.`,
      'Remove the entries whose command runs "hook run hermes" by hand.',
    );
  const left = agentKeepEntries({
    text: out,
    doc: again,
    root: isMap(again.contents) ? (again.contents as YAMLMap) : null,
  });
  if (left.length)
    throw new AgentKeepError(
      'Internal',
      `AgentKeep's entries in ${file} are not all in block style; removed none.`,
      'Remove the entries whose command runs "hook run hermes" by hand.',
    );
  return { text: out, removed, mcpRemoved };
}

/** sha256 of a text, hex. */
export function sha256(s: string | Buffer): string {
  return createHash('sha256').update(s).digest('hex');
}

/**
 * Write config.yaml atomically, keeping its mode. A symbolic link (dotfiles) is written through:
 * the file it points to (realpath) is replaced atomically in its own directory, so the link stays a link.
 */
export async function writeConfig(file: string, text: string | Uint8Array): Promise<void> {
  const real = await fs.realpath(file).catch(() => file);
  const st = await fs.stat(real).catch(() => undefined);
  await writeFileAtomic(real, text);
  if (st) await fs.chmod(real, st.mode & 0o7777);
}

/** Where install keeps its record and backup of one config.yaml. */
export function installRecordPaths(stateDir: string, configFile: string): { record: string; backup: string } {
  const key = sha256(path.resolve(configFile)).slice(0, 16);
  return {
    record: path.join(stateDir, 'hooks', `hermes-${key}.json`),
    backup: path.join(stateDir, 'hooks', 'backups', `hermes-${key}-config.yaml`),
  };
}
