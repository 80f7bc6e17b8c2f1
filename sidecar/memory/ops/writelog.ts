/**
 * AgentKeep's own memory writes, for provenance. Hermes' only write record is state.db (the memory
 * tool's calls), so an entry written by `agentkeep memory edit/add` would look "probably edited by
 * hand" and be flagged untraceable. Every successful memory.edit / remove / add therefore appends one
 * JSON line to `<stateDir>/memory-backups/<store key>/writes.jsonl` (next to the backups of the bytes
 * it replaced; see ./index.ts backupDir):
 *
 *   {"time": ISO UTC, "store": spec, "file": abs path, "action": "add"|"replace"|"remove",
 *    "id": entry id, "textHash": sha256 of the entry text, "text": the text (<= 2000 chars),
 *    "previous"?: the text before (replace)}
 *
 * Writes of the agent's own memory tool, seen by an agent hook (sidecar/hooks, memory.recordWrite),
 * go to the same log with `"source": "hook"` and the tool call's context:
 *
 *   {"time", "store", "file", "action", "id", "textHash", "text": the tool's content, "previous"?: its
 *    old_text, "source": "hook", "target"?: memory|user, "agent"?, "session"?, "toolCallId"?, "tool"?,
 *    "before": the file content before the call, "after": after it (each <= 256 KiB)}
 *
 * Records without `source` are AgentKeep's own writes. The log is append-only (one `appendFile` per
 * write, O_APPEND); unparsable lines are skipped. `withWriteLog` wraps an adapter so provenance() adds a trace with `source: "agentkeep"` for each
 * logged add/replace whose text and file match the entry.
 */
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { MemoryEntry, Provenance, ProvenanceTrace } from '../../protocol';
import type { MemoryStoreAdapter } from '../types';

/** One line of writes.jsonl. */
export interface WriteRecord {
  time: string;
  store: string;
  file?: string;
  action: 'add' | 'replace' | 'remove';
  id: string;
  textHash: string;
  text: string;
  previous?: string;
  /** Absent: AgentKeep's own write (memory edit/add/remove); "hook": the agent's memory tool, seen by a hook. */
  source?: 'hook';
  target?: string;
  agent?: string;
  session?: string;
  toolCallId?: string;
  tool?: string;
  /** Hook records: the memory file's content before and after the tool call. */
  before?: string;
  after?: string;
  /** AgentKeep writes made by the timeline (sidecar/memory/ops/timeline.ts): what made it. */
  why?: string;
  /** An undo: the MemoryWrite id it undid. */
  undoOf?: string;
  /** Writes applied as one change (forget, lint --fix). */
  group?: string;
  /** restore-entry: the restore point the text came from. */
  restorePoint?: string;
}

/** What a timeline write adds to its record (why, undoOf, group, restorePoint). */
export type WriteExtra = Pick<WriteRecord, 'why' | 'undoOf' | 'group' | 'restorePoint'>;

const MAX_TEXT = 2000;
/** Largest before/after file content kept in a hook record (Hermes files are a few KiB; bigger is cut). */
const MAX_FILE = 256 * 1024;

function textHash(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Path of a store's write log inside its backup dir (`dir` = backupDir(stateDir, store)). */
export function writeLogPath(dir: string): string {
  return path.join(dir, 'writes.jsonl');
}

/** Append one record for a successful write (creates the dir and file, mode 0600). */
export async function logWrite(
  dir: string,
  s: MemoryStoreAdapter,
  action: WriteRecord['action'],
  entry: MemoryEntry,
  previous?: string,
  extra?: WriteExtra,
): Promise<number> {
  const rec: WriteRecord = {
    time: new Date().toISOString(),
    store: s.spec,
    ...(entry.file ? { file: entry.file } : {}),
    action,
    id: entry.id,
    textHash: textHash(entry.text),
    text: entry.text.slice(0, MAX_TEXT),
    ...(previous !== undefined ? { previous: previous.slice(0, MAX_TEXT) } : {}),
    ...(extra ?? {}),
  };
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  await fs.appendFile(writeLogPath(dir), JSON.stringify(rec) + '\n', { mode: 0o600 });
  // its line number (1-based) is its id on the timeline ("log:<line>"): the log is append-only
  return (await fs.readFile(writeLogPath(dir), 'utf8')).split('\n').length - 1;
}

/** What a hook saw of one memory tool call (memory.recordWrite params without the store). */
export interface HookWrite {
  file: string;
  action: WriteRecord['action'];
  target?: string;
  content?: string;
  oldText?: string;
  before: string;
  after: string;
  agent?: string;
  session?: string;
  toolCallId?: string;
  tool?: string;
}

/** Append a hook record (source "hook") for one call of the agent's memory tool; returns the log's path. */
export async function logHookWrite(dir: string, store: string, w: HookWrite): Promise<string> {
  const text = w.content ?? w.oldText ?? '';
  const rec: WriteRecord = {
    time: new Date().toISOString(),
    store,
    file: w.file,
    action: w.action,
    id: createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 12),
    textHash: textHash(text),
    text: text.slice(0, MAX_TEXT),
    ...(w.oldText !== undefined ? { previous: w.oldText.slice(0, MAX_TEXT) } : {}),
    source: 'hook',
    ...(w.target ? { target: w.target } : {}),
    ...(w.agent ? { agent: w.agent } : {}),
    ...(w.session ? { session: w.session } : {}),
    ...(w.toolCallId ? { toolCallId: w.toolCallId } : {}),
    ...(w.tool ? { tool: w.tool } : {}),
    before: w.before.slice(0, MAX_FILE),
    after: w.after.slice(0, MAX_FILE),
  };
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  await fs.appendFile(writeLogPath(dir), JSON.stringify(rec) + '\n', { mode: 0o600 });
  return writeLogPath(dir);
}

/**
 * The records of a store's write log, oldest first (missing log = none; bad lines skipped), each
 * with `line`: its 1-based line number in the log (the timeline's stable "log:<line>" id).
 */
export async function readWrites(dir: string): Promise<Array<WriteRecord & { line: number }>> {
  const raw = await fs.readFile(writeLogPath(dir), 'utf8').catch(() => '');
  const out: Array<WriteRecord & { line: number }> = [];
  const lines = raw.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (!line.trim()) continue;
    try {
      const r = JSON.parse(line) as WriteRecord;
      if (r && typeof r.textHash === 'string' && typeof r.action === 'string') out.push({ ...r, line: i + 1 });
    } catch {
      /* a torn last line: skip */
    }
  }
  return out;
}

/**
 * Traces of `entry` in the log: AgentKeep's own adds and replaces that wrote exactly its text (same
 * file when both know it). Hook records are left out: the agent's own tool call is already in its
 * session history (Hermes state.db), which provenance reads.
 */
export function tracesFromLog(records: WriteRecord[], entry: MemoryEntry): ProvenanceTrace[] {
  const h = textHash(entry.text);
  return records
    .filter(
      (r) =>
        r.source === undefined &&
        r.action !== 'remove' &&
        r.textHash === h &&
        (!r.file || !entry.file || r.file === entry.file),
    )
    .map((r) => ({
      action: r.action,
      time: r.time,
      source: 'agentkeep',
      message: `agentkeep memory ${r.action === 'replace' ? 'edit' : 'add'}: ${r.text}`,
      ...(r.previous !== undefined ? { previous: r.previous } : {}),
    }));
}

/**
 * `s` with provenance() extended by AgentKeep's write log in `dir`: logged writes become traces
 * (`source: "agentkeep"`), merged with the store's own traces by time; when only the log has traces
 * the note says AgentKeep wrote the entry. Other methods are the adapter's own.
 */
export function withWriteLog(s: MemoryStoreAdapter, dir: string): MemoryStoreAdapter {
  if (!s.provenance) return s;
  const own = s.provenance.bind(s);
  let cached: Promise<WriteRecord[]> | undefined;
  const provenance = async (entry: MemoryEntry): Promise<Provenance> => {
    const p = await own(entry);
    const mine = tracesFromLog(await (cached ??= readWrites(dir)), entry);
    if (!mine.length) return p;
    const traces = [...p.traces, ...mine].sort((a, b) => (a.time ?? '').localeCompare(b.time ?? ''));
    if (p.traces.length) return { ...p, traces };
    const verb = mine[mine.length - 1].action === 'replace' ? 'edit' : 'add';
    const how = `written by AgentKeep (memory ${verb}, logged in ${writeLogPath(dir)})`;
    // the store's history could not be read: whether an agent tool call wrote it too is unknown
    if (p.unavailable) return { ...p, traces, note: `${how}; ${p.note ?? p.unavailable.message}` };
    return { traces, note: `${how}; no agent tool call wrote this text` };
  };
  return new Proxy(s, {
    get: (target, prop, recv) => (prop === 'provenance' ? provenance : Reflect.get(target, prop, recv)),
  });
}
