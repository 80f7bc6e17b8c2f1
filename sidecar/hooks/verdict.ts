/**
 * What a hook does with one tool call, decided from the call alone (pure, no I/O, well under a
 * millisecond): the hook's fast path runs only this, so a non-risky call costs a Node start and
 * nothing more (bench/hook.bench.ts).
 *
 * - a terminal command (Hermes `terminal` `command`; Agent Zero `code_execution_tool` with runtime
 *   terminal, or the shell commands inside runtime python/nodejs code) that the risk engine flags
 *   (sidecar/risk/classify.ts, the same rules as `risk scan`): a restore point pair;
 * - a file write (Hermes `write_file` / `patch`, file-writing tools of Agent Zero) of a risky config
 *   path (sidecar/risk/config.ts: the agent's config.yaml, .env and other secrets, a skill, SOUL.md,
 *   units, crontabs, apt sources): a restore point pair;
 * - Hermes' `memory` tool: a record of the write (the memory file before and after);
 * - anything else: nothing.
 * Only text.ts and classify.ts of the risk engine are loaded (not the file-kind scanners, which pull
 * in the YAML and JSONC parsers).
 */
import * as path from 'node:path';
import {
  classifyPipeline,
  MAYBE_CONFIG_WRITE,
  MAYBE_RISKY,
  maxHit,
  noteDownloads,
  unwrap,
  type ClassifyContext,
  type RiskClass,
  type RiskHit,
} from '../risk/classify';
import { splitCommands } from '../risk/shell';
import { riskyConfigFile, type RiskyConfigKind } from '../risk/config';
import { lines, numbered, shellCommands } from '../risk/text';
import type { HookAgentKind, HookCall } from './call';

/** What to do with a call. */
export type Verdict =
  | { action: 'none' }
  | {
      action: 'restore-point';
      /** Why: a risky command or a risky file write. */
      what: 'command' | 'file';
      /** The command (commands joined by newlines) or the path, as the agent gave it. */
      detail: string;
      /** Risk class of a command; the config kind of a file. */
      class: RiskClass | RiskyConfigKind;
      /** One sentence for the reason: the risky part(s) of the command, or what the file is. */
      why: string;
    }
  | {
      action: 'memory';
      memoryAction: 'add' | 'replace' | 'remove';
      target: string;
      content?: string;
      oldText?: string;
    };

const NONE: Verdict = { action: 'none' };

/** Config kinds whose write is worth a restore point (manifests and lockfiles are not: the install is). */
const RISKY_WRITE_KINDS = new Set<RiskyConfigKind>([
  'agent',
  'secrets',
  'service',
  'cron',
  'apt-sources',
  'containers',
]);

/** The directory `cd DIR` moves to, for relative paths later in the same chain (as sidecar/risk/scan.ts). */
function cdTarget(dir: string, cwd: string | undefined): string | undefined {
  if (/^[/~$]/.test(dir)) return dir;
  return cwd ? `${cwd.replace(/\/+$/, '')}/${dir}` : undefined;
}

/**
 * The risky parts of a shell command text (one command line or a short script), with the same
 * verdicts as `risk scan` of it as a shell script (sidecar/risk/scan.ts verdictOf: per logical
 * command, per pipeline, with `cd` of the chain and the files earlier commands downloaded).
 * @returns the highest class with its reason and the risky parts, or null when nothing in it is risky
 */
export function classifyShell(text: string): { class: RiskClass; reason: string; parts: string[] } | null {
  let top: RiskHit | null = null;
  const parts: string[] = [];
  const ctx: ClassifyContext = { downloaded: new Set() };
  for (const lc of shellCommands(numbered(lines(text)))) {
    if (!ctx.downloaded?.size && !MAYBE_RISKY.test(lc.text) && !MAYBE_CONFIG_WRITE.test(lc.text)) continue;
    let local: ClassifyContext = ctx;
    for (const p of splitCommands(lc.text)) {
      const h = classifyPipeline(p, 0, local);
      for (const c of p.commands) noteDownloads(c.words, ctx);
      const w = p.commands.length === 1 ? unwrap(p.commands[0].words) : [];
      if (w[0] === 'cd' && w[1] && !w[1].startsWith('-')) local = { ...local, cwd: cdTarget(w[1], local.cwd) };
      if (!h) continue;
      parts.push(p.text);
      top = maxHit(top, h);
    }
  }
  return top ? { class: top.class, reason: top.reason, parts } : null;
}

/**
 * Shell commands inside Python or Node.js code as Agent Zero's code_execution_tool runs it: IPython
 * `!cmd` and `%pip`/`%conda` lines, and string (or list-of-strings) arguments of os.system,
 * os.popen, subprocess.*, child_process exec/execSync/spawn(Sync).
 */
export function shellInCode(code: string): string[] {
  const out: string[] = [];
  for (const l of code.split(/\r?\n/)) {
    const t = l.trim();
    if (t.startsWith('!')) out.push(t.slice(1));
    else if (/^%(pip|conda|mamba|uv)\b/.test(t)) out.push(t.slice(1));
  }
  const call =
    /\b(?:os\.system|os\.popen|subprocess\.(?:run|call|check_call|check_output|Popen|getoutput|getstatusoutput)|execSync|execFileSync|exec|spawnSync|spawn)\s*\(\s*(?:[rbf]{0,2}("""|'''|"|'|`)([\s\S]*?)\1|\[([^\]]*)\])/g;
  for (const m of code.matchAll(call)) {
    if (m[2] !== undefined) out.push(m[2]);
    else if (m[3] !== undefined) {
      const items = [...m[3].matchAll(/(["'])((?:\\.|(?!\1).)*)\1/g)].map((x) => x[2]);
      if (items.length) out.push(items.join(' '));
    }
  }
  return out;
}

/** Paths a Hermes `patch` call writes: its `path`, or the files a V4A patch names. */
function patchPaths(input: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const k of ['path', 'file_path', 'file', 'filename', 'target_file'])
    if (typeof input[k] === 'string' && input[k]) out.push(input[k] as string);
  if (typeof input.patch === 'string')
    for (const m of input.patch.matchAll(/^\*\*\* (?:Add|Update|Delete) File: (.+)$/gm)) out.push(m[1].trim());
  if (typeof input.patch === 'string')
    for (const m of input.patch.matchAll(/^\*\*\* Move to: (.+)$/gm)) out.push(m[1].trim());
  return out;
}

/** Tool names that write files, by agent (Hermes' own; file tools seen in Agent Zero builds). */
const FILE_TOOLS = new Set([
  'write_file',
  'patch',
  'text_editor',
  'file_write',
  'edit_file',
  'replace_in_file',
  'str_replace_editor',
]);

/** Whether a file-tool call only reads (text_editor `op: read`, str_replace_editor `command: view`). */
function readOnlyFileCall(input: Record<string, unknown>): boolean {
  const op = String(input.op ?? input.action ?? input.command ?? '').toLowerCase();
  return ['read', 'view', 'list', 'show', 'cat'].includes(op);
}

/**
 * Decide what the hook does with a call.
 * @param homes the agent's home folders (its hermes: stores, HERMES_HOME): files under them are the agent's own
 */
export function decide(kind: HookAgentKind, call: HookCall, homes: string[] = []): Verdict {
  const input = call.input;
  // terminal commands
  let commands: string[] = [];
  if (call.tool === 'terminal' && typeof input.command === 'string') commands = [input.command];
  else if (call.tool === 'code_execution_tool' || call.tool === 'execute_code') {
    const runtime = String(input.runtime ?? (call.tool === 'execute_code' ? 'python' : ''))
      .toLowerCase()
      .trim();
    const code = typeof input.code === 'string' ? input.code : typeof input.command === 'string' ? input.command : '';
    if (runtime === 'terminal') commands = [code];
    else if (runtime === 'python' || runtime === 'nodejs') commands = shellInCode(code);
  } else if ((call.tool === 'Bash' || call.tool === 'shell') && typeof input.command === 'string')
    commands = [input.command];
  if (commands.length) {
    let top: RiskHit | null = null;
    for (const c of commands) {
      const v = classifyShell(c);
      if (v) top = maxHit(top, v);
    }
    if (!top) return NONE;
    return {
      action: 'restore-point',
      what: 'command',
      detail: commands.join('\n').trim(),
      class: top.class,
      why: top.reason,
    };
  }
  // file writes
  if (FILE_TOOLS.has(call.tool) && !readOnlyFileCall(input)) {
    for (const p of patchPaths(input)) {
      const abs = path.isAbsolute(p) ? p : p.startsWith('~/') ? p : path.resolve(call.cwd ?? '/', p);
      const r = riskyConfigFile(abs, homes);
      if (r && RISKY_WRITE_KINDS.has(r.kind))
        return { action: 'restore-point', what: 'file', detail: p, class: r.kind, why: r.reason };
    }
    return NONE;
  }
  // Hermes' memory tool (tools/memory_tool.py: action add|replace|remove, target memory|user, content, old_text)
  if (kind === 'hermes' && call.tool === 'memory') {
    const a = input.action;
    if (a !== 'add' && a !== 'replace' && a !== 'remove') return NONE;
    return {
      action: 'memory',
      memoryAction: a,
      target: input.target === 'user' ? 'user' : 'memory',
      ...(typeof input.content === 'string' ? { content: input.content } : {}),
      ...(typeof input.old_text === 'string' ? { oldText: input.old_text } : {}),
    };
  }
  return NONE;
}
