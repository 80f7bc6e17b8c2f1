/**
 * Test helpers: real Hermes state.db files made with python3's sqlite3 module (the same library
 * Hermes uses), in WAL mode when asked, with the schema v30 subset of the shared fixtures
 * (external-content FTS5) or the legacy inline FTS layout.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';

/** One message row. tool_calls may be given as an object (JSON-encoded here). */
export interface Msg {
  session?: string;
  role: string;
  content?: string | null;
  toolCalls?: unknown;
  toolCallId?: string;
  toolName?: string;
  /** unix seconds */
  time: number;
}

export interface DbSpec {
  wal?: boolean;
  layout?: 'current' | 'legacy';
  sessions?: Array<{ id: string; source: string; started: number }>;
  messages: Msg[];
}

const PY = String.raw`
import json, sqlite3, sys
spec = json.load(sys.stdin)
db = sys.argv[1]
c = sqlite3.connect(db)
if spec.get('wal'):
    c.execute('PRAGMA journal_mode=WAL')
legacy = spec.get('layout') == 'legacy'
c.executescript("""
CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, model TEXT,
  parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL, title TEXT);
CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, role TEXT NOT NULL,
  content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL, token_count INTEGER,
  finish_reason TEXT, active INTEGER NOT NULL DEFAULT 1, compacted INTEGER NOT NULL DEFAULT 0);
""")
if legacy:
    c.executescript("""
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(content);
CREATE TRIGGER IF NOT EXISTS messages_fts_insert AFTER INSERT ON messages BEGIN
  INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END;""")
else:
    c.executescript("""
CREATE VIEW IF NOT EXISTS messages_fts_src AS SELECT id, CASE WHEN role='tool' THEN substr(COALESCE(content,''),1,8192) ELSE content END AS content, tool_name, tool_calls FROM messages;
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(content, tool_name, tool_calls, content='messages_fts_src', content_rowid='id');
CREATE TRIGGER IF NOT EXISTS messages_fts_insert AFTER INSERT ON messages BEGIN
  INSERT INTO messages_fts(rowid, content, tool_name, tool_calls) VALUES (new.id,
    CASE WHEN new.role='tool' THEN substr(COALESCE(new.content,''),1,8192) ELSE new.content END, new.tool_name, new.tool_calls);
END;""")
for s in spec.get('sessions') or []:
    c.execute('INSERT OR REPLACE INTO sessions(id, source, started_at) VALUES (?,?,?)', (s['id'], s['source'], s['started']))
for m in spec['messages']:
    tc = m.get('toolCalls')
    c.execute('INSERT INTO messages(session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp) VALUES (?,?,?,?,?,?,?)',
      (m.get('session') or 's1', m['role'], m.get('content'), m.get('toolCallId'), None if tc is None else (tc if isinstance(tc, str) else json.dumps(tc)), m.get('toolName'), m['time']))
c.commit()
if spec.get('wal'):
    c.execute('PRAGMA wal_autocheckpoint=0')
c.close()
`;

/** Create (or append to) a state.db at `file` with python3 sqlite3. */
export function makeStateDb(file: string, spec: DbSpec): void {
  execFileSync('python3', ['-c', PY, file], { input: JSON.stringify(spec) });
}

/** An assistant message calling the memory tool (Hermes' shape: OpenAI tool_calls, JSON arguments). */
export function memoryCall(args: Record<string, unknown>, time: number, session = 's1', id = `call_${time}`): Msg {
  return {
    session,
    role: 'assistant',
    content: null,
    time,
    toolCalls: [{ id, type: 'function', function: { name: 'memory', arguments: JSON.stringify(args) } }],
  };
}

/** An assistant message calling any tool. */
export function toolCall(name: string, args: Record<string, unknown>, time: number, session = 's1'): Msg {
  return {
    session,
    role: 'assistant',
    content: null,
    time,
    toolCalls: [{ id: `call_${name}_${time}`, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
  };
}

/**
 * Keep a python3 connection open that has written rows to a WAL database without checkpointing, so
 * state.db-wal holds committed frames the main file does not (as while Hermes runs). Resolves once
 * the rows are committed; kill() ends the writer (its close would checkpoint, so it is killed).
 */
export async function holdWalWriter(
  file: string,
  messages: Msg[],
): Promise<{ child: ChildProcess; kill: () => Promise<void> }> {
  const py = String.raw`
import json, sqlite3, sys, time
c = sqlite3.connect(sys.argv[1])
c.execute('PRAGMA journal_mode=WAL'); c.execute('PRAGMA wal_autocheckpoint=0')
for m in json.loads(sys.argv[2]):
    tc = m.get('toolCalls')
    c.execute('INSERT INTO messages(session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp) VALUES (?,?,?,?,?,?,?)',
      (m.get('session') or 's1', m['role'], m.get('content'), m.get('toolCallId'), None if tc is None else json.dumps(tc), m.get('toolName'), m['time']))
c.commit()
print('ready', flush=True)
sys.stdin.read()
`;
  const child = spawn('python3', ['-c', py, file, JSON.stringify(messages)], { stdio: ['pipe', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    child.once('exit', (code) => reject(new Error(`python writer exited ${code}`)));
  });
  return {
    child,
    kill: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const done = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await done;
    },
  };
}

/** sha256 of every file under `dir` (relative path -> hash), for byte-identical checks. */
export async function hashTree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (d: string): Promise<void> => {
    for (const e of await fs.readdir(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else
        out[path.relative(dir, p)] = createHash('sha256')
          .update(await fs.readFile(p))
          .digest('hex');
    }
  };
  await walk(dir);
  return out;
}

/** Copy a (read-only) fixture tree to `dst` and make the copy writable (dirs 755, files 644). */
export async function copyFixture(src: string, dst: string): Promise<void> {
  await fs.cp(src, dst, { recursive: true });
  const walk = async (d: string): Promise<void> => {
    await fs.chmod(d, 0o755);
    for (const e of await fs.readdir(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else await fs.chmod(p, 0o644);
    }
  };
  await walk(dst);
}
