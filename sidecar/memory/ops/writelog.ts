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
 * The log is append-only (one `appendFile` per write, O_APPEND); unparsable lines are skipped.
 * `withWriteLog` wraps an adapter so provenance() adds a trace with `source: "agentkeep"` for each
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
}

const MAX_TEXT = 2000;

function textHash(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Path of a store's write log inside its backup dir (`dir` = backupDir(stateDir, store)). */
export function writeLogPath(dir: string): string {
  return path.join(dir, 'writes.jsonl');
}

/** Append one record for a successful write (creates the dir and file, mode 0600). */
export async function logWrite(dir: string, s: MemoryStoreAdapter, action: WriteRecord['action'], entry: MemoryEntry, previous?: string): Promise<void> {
  const rec: WriteRecord = {
    time: new Date().toISOString(),
    store: s.spec,
    ...(entry.file ? { file: entry.file } : {}),
    action,
    id: entry.id,
    textHash: textHash(entry.text),
    text: entry.text.slice(0, MAX_TEXT),
    ...(previous !== undefined ? { previous: previous.slice(0, MAX_TEXT) } : {}),
  };
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  await fs.appendFile(writeLogPath(dir), JSON.stringify(rec) + '\n', { mode: 0o600 });
}

/** The records of a store's write log, oldest first (missing log = none; bad lines skipped). */
export async function readWrites(dir: string): Promise<WriteRecord[]> {
  const raw = await fs.readFile(writeLogPath(dir), 'utf8').catch(() => '');
  const out: WriteRecord[] = [];
  for (const line of raw.split('\n')) {
    if (!line.trim()) continue;
    try {
      const r = JSON.parse(line) as WriteRecord;
      if (r && typeof r.textHash === 'string' && typeof r.action === 'string') out.push(r);
    } catch {
      /* a torn last line: skip */
    }
  }
  return out;
}

/** Traces of `entry` in the log: adds and replaces that wrote exactly its text (same file when both know it). */
export function tracesFromLog(records: WriteRecord[], entry: MemoryEntry): ProvenanceTrace[] {
  const h = textHash(entry.text);
  return records
    .filter((r) => r.action !== 'remove' && r.textHash === h && (!r.file || !entry.file || r.file === entry.file))
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
  return new Proxy(s, { get: (target, prop, recv) => (prop === 'provenance' ? provenance : Reflect.get(target, prop, recv)) });
}
