/**
 * Hermes session history (state.db) as AgentKeep reads it: the `memory` tool calls (provenance of
 * entries) and the outside-world actions (what a rollback cannot undo). Only the `messages` and
 * `sessions` tables are read (plain SELECT; no FTS5), so both the current external-content FTS layout
 * (schema v23+) and the legacy inline `messages_fts(content)` one work, and so do databases whose
 * FTS module is missing. Source: NousResearch/hermes-agent hermes_state.py / hermes_state_common.py
 * (shared/reference/memory-stores.md §1.4).
 *
 * A memory write in history: an assistant row whose `tool_calls` JSON holds
 * `{function: {name: "memory", arguments: "<json>"}}` with arguments {action: add|replace|remove,
 * target: memory|user, content, old_text, operations[]}, followed by a role=tool row (tool_call_id)
 * with the result JSON ({"success": false, ...} when Hermes refused it).
 *
 * Schema v30 message state (hermes_state_common.py @ 00704d08 SCHEMA_SQL: `active INTEGER NOT NULL
 * DEFAULT 1, compacted INTEGER NOT NULL DEFAULT 0`; Hermes shows a row when `active = 1 OR compacted =
 * 1`, its display indexes and triggers): active 0 + compacted 1 is a row compaction soft-archived
 * (archive_and_compact: still recorded and shown), active 0 + compacted 0 a rewound row (hidden from
 * Hermes' views and search). Older schemas with `active` only: active 0 is a soft-archived
 * (compacted) row; without the columns every row is active. A compacted call is provenance like any
 * other, marked `messageState: compacted`; a rewound one counts only when no visible call wrote the
 * text, marked `rewound`.
 */
import type { ProvenanceTrace } from '../../protocol';
import { tableColumns, withReadOnlyDb, type SqliteDb } from '../sqlite';
import type { FileTransport } from '../transport';
import { isoTime } from './home';

/** One `memory` tool call operation from state.db. */
export interface MemoryOp {
  action: 'add' | 'replace' | 'remove';
  /** memory | user */
  target: string;
  content?: string;
  oldText?: string;
  /** unix seconds */
  time?: number;
  session?: string;
  source?: string;
  messageId: number;
  /** The arguments JSON as written (truncated). */
  raw: string;
  /** false when the tool result said success: false */
  ok: boolean;
  /** The tool call id (tool_calls[].id), where the row has one. */
  callId?: string;
  /** Index of this operation within its message (several calls or operations[] in one row). */
  n: number;
  /** The message's v30 state when not active (see the module doc); absent: active or no such columns. */
  state?: MessageState;
}

/** A state.db message that is not active: summarised away by compaction, or rewound. */
export type MessageState = 'compacted' | 'rewound';

/** One tool call (any tool) from state.db. */
export interface ToolCall {
  name: string;
  args: Record<string, unknown>;
  time?: number;
  session?: string;
  source?: string;
  messageId: number;
  raw: string;
}

/** The history read once per state.db version. */
export interface HermesHistory {
  memoryOps: MemoryOp[];
  /** Read tool calls (all tools) at or after `since` (only when asked for). */
  toolCalls: ToolCall[];
  /** Why provenance is limited (legacy schema, no messages table, ...). */
  notes: string[];
}

const MAX_MSG = 2000;

function parseJson(s: unknown): unknown {
  if (typeof s !== 'string') return s;
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}

function truncate(s: string): string {
  return s.length > MAX_MSG ? s.slice(0, MAX_MSG - 1) + '…' : s;
}

/** The tool calls in one assistant row's tool_calls JSON (OpenAI shape, or a bare {name, arguments}). */
export function toolCallsOf(
  json: unknown,
): Array<{ id?: string; name: string; args: Record<string, unknown>; raw: string }> {
  const v = parseJson(json);
  const list = Array.isArray(v) ? v : v && typeof v === 'object' ? [v] : [];
  const out: Array<{ id?: string; name: string; args: Record<string, unknown>; raw: string }> = [];
  for (const c of list) {
    if (!c || typeof c !== 'object') continue;
    const o = c as Record<string, unknown>;
    const fn = (o.function && typeof o.function === 'object' ? o.function : o) as Record<string, unknown>;
    if (typeof fn.name !== 'string') continue;
    const rawArgs = fn.arguments ?? fn.args ?? fn.input;
    const args = parseJson(rawArgs);
    out.push({
      id: typeof o.id === 'string' ? o.id : undefined,
      name: fn.name,
      args: args && typeof args === 'object' && !Array.isArray(args) ? (args as Record<string, unknown>) : {},
      raw: typeof rawArgs === 'string' ? rawArgs : JSON.stringify(rawArgs ?? {}),
    });
  }
  return out;
}

function opsOfArgs(args: Record<string, unknown>): Array<Record<string, unknown>> {
  if (Array.isArray(args.operations)) {
    return args.operations
      .filter((x): x is Record<string, unknown> => !!x && typeof x === 'object')
      .map((x) => ({ target: args.target, ...x }));
  }
  return [args];
}

/**
 * Read the history of one state.db: every `memory` tool call (in message order) and, when
 * `actionsSince` is given (unix seconds), every tool call at or after that time. `io`: the machine
 * the database is on (default this one; elsewhere it is copied here first and the copy is read).
 * @throws AgentKeepError FileError (unreadable database), see withReadOnlyDb
 */
export async function readHistory(dbPath: string, actionsSince?: number, io?: FileTransport): Promise<HermesHistory> {
  return withReadOnlyDb(dbPath, (db) => readHistoryFrom(db, actionsSince), io);
}

/** readHistory on an open database (tests and the bench use it directly). */
export function readHistoryFrom(db: SqliteDb, actionsSince?: number): HermesHistory {
  const notes: string[] = [];
  const mcols = new Set(tableColumns(db, 'messages'));
  if (!mcols.has('tool_calls')) {
    notes.push(
      mcols.size
        ? 'state.db has no messages.tool_calls column (an old schema): tool calls are not recorded'
        : 'state.db has no messages table',
    );
    return { memoryOps: [], toolCalls: [], notes };
  }
  const scols = new Set(tableColumns(db, 'sessions'));
  const ts = mcols.has('timestamp') ? 'm.timestamp' : 'NULL';
  const sid = mcols.has('session_id') ? 'm.session_id' : 'NULL';
  // no JOIN: sessions are few, read once into a map (a join per row was the slow part at 50k messages)
  const sources = new Map<string, string>();
  if (scols.has('id') && scols.has('source'))
    for (const r of db.all('SELECT id, source FROM sessions')) sources.set(String(r.id), String(r.source));
  const active = mcols.has('active') ? 'm.active' : '1';
  const compacted = mcols.has('compacted') ? 'm.compacted' : 'NULL';
  const sel =
    `SELECT m.id AS id, ${sid} AS session, ${ts} AS time, m.tool_calls AS calls, ${active} AS active, ` +
    `${compacted} AS compacted FROM messages m`;
  const stateOf = (r: Record<string, unknown>): MessageState | undefined => {
    if (r.active == null || Number(r.active) !== 0) return undefined;
    // before the compacted column, active 0 meant soft-archived by compression
    return r.compacted == null || Number(r.compacted) === 1 ? 'compacted' : 'rewound';
  };
  const sourceOf = (session: unknown): string | undefined =>
    session == null ? undefined : sources.get(String(session));

  type Pending = Omit<MemoryOp, 'ok'>;
  const pending: Pending[] = [];
  const rowIds: number[] = [];
  // the LIKE prefilter keeps JSON parsing to rows that can hold a memory call
  for (const r of db.all(`${sel} WHERE m.tool_calls LIKE '%memory%' ORDER BY m.id`)) {
    const calls = toolCallsOf(r.calls);
    let any = false;
    let n = 0;
    for (const c of calls) {
      if (c.name !== 'memory') continue;
      for (const a of opsOfArgs(c.args)) {
        const action = String(a.action ?? '');
        if (action !== 'add' && action !== 'replace' && action !== 'remove') continue;
        any = true;
        pending.push({
          action,
          target: a.target === 'user' ? 'user' : 'memory',
          content: typeof a.content === 'string' ? a.content : undefined,
          oldText: typeof a.old_text === 'string' ? a.old_text : undefined,
          time: typeof r.time === 'number' ? r.time : undefined,
          session: r.session == null ? undefined : String(r.session),
          source: sourceOf(r.session),
          messageId: Number(r.id),
          raw: truncate(c.raw),
          callId: c.id,
          n: n++,
          ...(stateOf(r) ? { state: stateOf(r) } : {}),
        });
      }
    }
    // the results follow the call: rows id+1 .. id+len(calls) (+2 for interleaved messages)
    if (any) for (let k = 1; k <= calls.length + 2; k++) rowIds.push(Number(r.id) + k);
  }
  // results of memory tool calls: refused writes (success false) are not provenance
  const failed = new Set<string>();
  if (mcols.has('tool_call_id') && mcols.has('role') && rowIds.length) {
    for (let i = 0; i < rowIds.length; i += 500) {
      const ids = rowIds.slice(i, i + 500).join(',');
      for (const r of db.all(
        `SELECT tool_call_id AS cid, content FROM messages WHERE id IN (${ids}) AND role = 'tool'`,
      )) {
        const v = parseJson(r.content) as Record<string, unknown> | undefined;
        if (v && typeof v === 'object' && v.success === false && typeof r.cid === 'string') failed.add(r.cid);
      }
    }
  }
  const memoryOps: MemoryOp[] = pending.map((op) => ({ ...op, ok: !(op.callId && failed.has(op.callId)) }));
  const toolCalls: ToolCall[] = [];
  if (actionsSince !== undefined) {
    const cond = mcols.has('timestamp') ? `AND m.timestamp >= ${Number(actionsSince)}` : '';
    for (const r of db.all(`${sel} WHERE m.tool_calls IS NOT NULL AND m.tool_calls != '' ${cond} ORDER BY m.id`)) {
      for (const c of toolCallsOf(r.calls)) {
        toolCalls.push({
          name: c.name,
          args: c.args,
          time: typeof r.time === 'number' ? r.time : undefined,
          session: r.session == null ? undefined : String(r.session),
          source: sourceOf(r.session),
          messageId: Number(r.id),
          raw: truncate(c.raw),
        });
      }
    }
  }
  return { memoryOps, toolCalls, notes };
}

/** Whitespace collapsed, case folded: the second-chance match of an entry text. */
export function normaliseText(s: string): string {
  return s.replace(/\s+/g, ' ').trim().toLowerCase();
}

function trace(op: MemoryOp, previous?: string): ProvenanceTrace {
  return {
    ...(op.state ? { messageState: op.state } : {}),
    action: op.action,
    ...(op.time !== undefined ? { time: isoTime(op.time) } : {}),
    ...(op.session ? { session: op.session } : {}),
    ...(op.source ? { source: op.source } : {}),
    message: op.raw,
    messageId: op.messageId,
    ...(previous !== undefined ? { previous } : {}),
  };
}

/** An index over memory ops for provenance of many entries (built once per history). */
export class ProvenanceIndex {
  private readonly exact = new Map<string, MemoryOp[]>();
  private readonly norm = new Map<string, MemoryOp[]>();
  private readonly writes: MemoryOp[];

  private readonly rewoundExact = new Map<string, MemoryOp[]>();
  private readonly rewoundNorm = new Map<string, MemoryOp[]>();

  constructor(readonly ops: MemoryOp[]) {
    const all = ops.filter((o) => o.ok && (o.action === 'add' || o.action === 'replace') && o.content !== undefined);
    // rewound calls (Hermes hides them) are a fallback only: see the module doc
    this.writes = all.filter((o) => o.state !== 'rewound');
    for (const o of all) {
      const c = o.content!.trim();
      const [exact, norm] = o.state === 'rewound' ? [this.rewoundExact, this.rewoundNorm] : [this.exact, this.norm];
      push(exact, `${o.target}\0${c}`, o);
      push(norm, `${o.target}\0${normaliseText(c)}`, o);
    }
  }

  /**
   * The tool calls that wrote `text` (area memory | user), oldest first: exact matches of the
   * content, else normalised ones (whitespace/case), then the replace chain back through `old_text`
   * (each replace's old_text located in the entry an earlier call wrote). `how` says which matched.
   */
  tracesFor(area: string, text: string): { traces: ProvenanceTrace[]; how: 'exact' | 'normalised' | 'none' } {
    const target = area === 'user' ? 'user' : 'memory';
    let hits = this.exact.get(`${target}\0${text.trim()}`);
    let how: 'exact' | 'normalised' | 'none' = 'exact';
    if (!hits?.length) {
      hits = this.norm.get(`${target}\0${normaliseText(text)}`);
      how = 'normalised';
    }
    if (!hits?.length) {
      // only a rewound call wrote it: Hermes hides that message, but the write reached the file
      hits = this.rewoundExact.get(`${target}\0${text.trim()}`);
      how = 'exact';
      if (!hits?.length) {
        hits = this.rewoundNorm.get(`${target}\0${normaliseText(text)}`);
        how = 'normalised';
      }
    }
    if (!hits?.length) return { traces: [], how: 'none' };
    const out: ProvenanceTrace[] = [];
    const seen = new Set<MemoryOp>();
    // the last write of this text, and the chain of replaces that led to it
    let cur: MemoryOp | undefined = hits[hits.length - 1];
    const chain: Array<{ op: MemoryOp; previous?: string }> = [];
    while (cur && !seen.has(cur)) {
      seen.add(cur);
      if (cur.action !== 'replace' || !cur.oldText) {
        chain.push({ op: cur });
        break;
      }
      const before: MemoryOp | undefined = this.lastWriteContaining(cur.target, cur.oldText, cur.messageId);
      chain.push({ op: cur, previous: before?.content ?? cur.oldText });
      cur = before;
    }
    // earlier identical writes (re-adds) come first, then the chain oldest first
    for (const h of hits.slice(0, -1)) if (!chain.some((c) => c.op === h)) out.push(trace(h));
    for (const c of chain.reverse()) out.push(trace(c.op, c.previous));
    return { traces: out, how };
  }

  private lastWriteContaining(target: string, needle: string, beforeId: number): MemoryOp | undefined {
    for (let i = this.writes.length - 1; i >= 0; i--) {
      const w = this.writes[i];
      if (w.messageId >= beforeId || w.target !== target) continue;
      if (w.content!.includes(needle)) return w;
    }
    return undefined;
  }
}

function push<K, V>(m: Map<K, V[]>, k: K, v: V): void {
  const a = m.get(k);
  if (a) a.push(v);
  else m.set(k, [v]);
}

/**
 * Which tool calls reach the outside world (a rollback of the machine cannot undo them). Matched on
 * the Hermes tool name, and for shell tools on the command. Documented in docs/memory.md.
 */
export const OUTSIDE_TOOLS: Array<{ match: RegExp; kind: string }> = [
  {
    match: /^(send_message|telegram.*|discord.*|slack.*|whatsapp.*|signal.*|sms.*|notify.*|post_message)$/,
    kind: 'message sent',
  },
  { match: /^(send_email|email.*|gmail.*|mail_send)$/, kind: 'email sent' },
  { match: /^(web_search|web_extract|web_fetch|fetch_url|http_request|crawl.*)$/, kind: 'web request' },
  { match: /^browser.*$/, kind: 'browser action' },
  { match: /^(github|gh|create_issue|create_pull_request|git_push)(_.*)?$/, kind: 'code host action' },
  {
    match:
      /^(mem0_add|mem0_update|mem0_delete|honcho_conclude|fact_store|image_generate|text_to_speech|cronjob|schedule.*)$/,
    kind: 'external service call',
  },
  { match: /^(delegate_task|mixture_of_agents)$/, kind: 'delegated to another agent' },
];

/** Shell commands that reach the outside world. */
export const OUTSIDE_COMMANDS: Array<{ match: RegExp; kind: string }> = [
  { match: /\bgit\s+(push|send-email)\b/, kind: 'git push' },
  {
    match:
      /\bcurl\b[^|;&]*(-X\s*(POST|PUT|PATCH|DELETE)|--request\s+(POST|PUT|PATCH|DELETE)|\s-d\s|--data|-F\s|--form|--upload-file|-T\s)/i,
    kind: 'HTTP write (curl)',
  },
  { match: /\bwget\b[^|;&]*--(post-data|post-file|method)/, kind: 'HTTP write (wget)' },
  { match: /\b(ssh|scp|rsync|sftp)\s/, kind: 'remote shell / copy' },
  { match: /\b(sendmail|mail|mutt|msmtp)\s/, kind: 'email sent' },
  {
    match:
      /\b(npm|pnpm|yarn)\s+publish\b|\btwine\s+upload\b|\bcargo\s+publish\b|\bdocker\s+push\b|\bgh\s+(pr|issue|release)\s+create\b/,
    kind: 'publish',
  },
  {
    match: /\b(kubectl|helm|terraform|pulumi)\s+(apply|delete|destroy|install|upgrade|up)\b/,
    kind: 'infrastructure change',
  },
];

const SHELL_TOOLS = /^(terminal|shell|bash|execute_command|run_command|execute_code|process)$/;

/**
 * Classify a tool call as an outside-world action (what, human-readable) or undefined for local work
 * (file edits, reads, memory, todo, ...).
 */
export function classifyAction(c: Pick<ToolCall, 'name' | 'args'>): string | undefined {
  for (const t of OUTSIDE_TOOLS) if (t.match.test(c.name)) return t.kind;
  if (SHELL_TOOLS.test(c.name)) {
    const cmd = [c.args.command, c.args.cmd, c.args.code, c.args.script].find((x) => typeof x === 'string') as
      string | undefined;
    if (cmd) for (const t of OUTSIDE_COMMANDS) if (t.match.test(cmd)) return t.kind;
  }
  return undefined;
}

/** The outside-world actions among tool calls, as provenance traces (message = "<kind>: <tool> <args>"). */
export function outsideActions(calls: ToolCall[]): ProvenanceTrace[] {
  const out: ProvenanceTrace[] = [];
  for (const c of calls) {
    const kind = classifyAction(c);
    if (!kind) continue;
    out.push({
      action: 'none',
      ...(c.time !== undefined ? { time: isoTime(c.time) } : {}),
      ...(c.session ? { session: c.session } : {}),
      ...(c.source ? { source: c.source } : {}),
      message: truncate(`${kind}: ${c.name} ${c.raw}`),
      messageId: c.messageId,
    });
  }
  return out;
}
