/**
 * A contract stub of mem0's REST server (mem0 itself cannot run here: it needs an LLM, an embedder and
 * a vector store). It serves the endpoints, bodies, answers and auth of mem0ai/mem0 server/main.py
 * (GET/PUT/DELETE /memories/{id}, POST /memories; MemoryUpdate {text}; MemoryCreate {messages, user_id |
 * agent_id | run_id, infer}; 400 without an identifier; Memory.get's `null` for an unknown id) and
 * server/auth.py (X-API-Key, 401 "Authentication required. …"), and keeps the memories where mem0
 * keeps their history: rows appended to a real history.db with python3's sqlite3, as
 * mem0/memory/storage.py add_history does (ADD / UPDATE old -> new / DELETE with is_deleted 1). With
 * no vector store in the directory, AgentKeep reads the memories back from that history.db.
 * Embeddings are not computed.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

const PY = String.raw`
import json, sqlite3, sys
db, op = sys.argv[1], sys.argv[2]
arg = json.loads(sys.argv[3])
c = sqlite3.connect(db)
c.execute('''CREATE TABLE IF NOT EXISTS history (id TEXT PRIMARY KEY, memory_id TEXT, old_memory TEXT, new_memory TEXT,
  event TEXT, created_at DATETIME, updated_at DATETIME, is_deleted INTEGER, actor_id TEXT, role TEXT)''')
if op == 'add':
    c.execute('INSERT INTO history VALUES (?,?,?,?,?,?,?,?,?,?)', (arg['row'], arg['id'], arg.get('old'), arg.get('new'),
      arg['event'], arg['created'], arg.get('updated'), 1 if arg['event'] == 'DELETE' else 0, None, arg.get('role')))
    c.commit()
rows = c.execute('SELECT memory_id, new_memory, event, created_at, updated_at FROM history ORDER BY rowid').fetchall()
state = {}
for mid, new, event, created, updated in rows:
    prev = state.get(mid)
    state[mid] = {'memory': new if event != 'NONE' else (prev or {}).get('memory'), 'created_at': (prev or {}).get('created_at', created),
                  'updated_at': updated, 'deleted': event == 'DELETE'}
print(json.dumps(state))
`;

interface Row {
  memory: string | null;
  created_at: string;
  updated_at: string | null;
  deleted: boolean;
}

export interface Mem0Stub {
  url: string;
  /** Requests seen, as "METHOD path". */
  log: string[];
  /**
   * Make the server's copy of a memory differ from history.db (a write by the agent that AgentKeep has
   * not read yet, as if it landed between AgentKeep's read and its write).
   */
  drift(id: string, text: string): void;
  close(): Promise<void>;
}

/**
 * Start the stub on 127.0.0.1 (random port) over `historyDb`.
 * @param opts.apiKey require X-API-Key (server/auth.py); absent: AUTH_DISABLED
 * @param opts.legacyPut behave like an older server whose PUT passes the whole body to Memory.update
 * @param opts.ignoresInfer behave like an older server without `infer` (its LLM rewrites the text)
 */
export async function startMem0Stub(
  historyDb: string,
  opts: { apiKey?: string; legacyPut?: boolean; ignoresInfer?: boolean } = {},
): Promise<Mem0Stub> {
  const log: string[] = [];
  const owners = new Map<string, Record<string, string>>();
  const drifted = new Map<string, string>();
  const db = (op: 'read' | 'add', arg: Record<string, unknown> = {}): Record<string, Row> =>
    JSON.parse(execFileSync('python3', ['-c', PY, historyDb, op, JSON.stringify(arg)]).toString()) as Record<
      string,
      Row
    >;
  const now = (): string => new Date().toISOString();
  const current = (id: string): Record<string, unknown> | null => {
    const r = db('read')[id];
    if (!r || r.deleted || r.memory === null) return null;
    // Memory.get's shape (mem0/memory/main.py): id, memory, hash, metadata, created_at, updated_at, owner ids
    return {
      id,
      memory: drifted.get(id) ?? r.memory,
      hash: 'md5-not-computed',
      metadata: null,
      created_at: r.created_at,
      updated_at: r.updated_at,
      ...owners.get(id),
    };
  };
  const body = (req: http.IncomingMessage): Promise<unknown> =>
    new Promise((resolve) => {
      let s = '';
      req.on('data', (d: Buffer) => (s += d.toString()));
      req.on('end', () => {
        try {
          resolve(s ? JSON.parse(s) : undefined);
        } catch {
          resolve(undefined);
        }
      });
    });
  const send = (res: http.ServerResponse, status: number, json: unknown): void => {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(json));
  };
  const server = http.createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://x');
      log.push(`${req.method} ${url.pathname}`);
      const data = await body(req);
      if (opts.apiKey) {
        const key = req.headers['x-api-key'];
        if (key === undefined)
          return send(res, 401, { detail: 'Authentication required. Provide a Bearer token or X-API-Key header.' });
        if (key !== opts.apiKey) return send(res, 401, { detail: 'Invalid API key.' });
      }
      const m = /^\/memories\/([^/]+)$/.exec(url.pathname);
      if (m && req.method === 'GET') return send(res, 200, current(decodeURIComponent(m[1])));
      if (m && req.method === 'PUT') {
        const id = decodeURIComponent(m[1]);
        const cur = current(id);
        if (!cur) return send(res, 404, { detail: `Memory with id ${id} not found.` });
        const o = (data ?? {}) as Record<string, unknown>;
        const text = opts.legacyPut ? JSON.stringify(o) : o.text;
        if (typeof text !== 'string') return send(res, 422, { detail: 'text must be a string' });
        drifted.delete(id);
        db('add', {
          row: randomUUID(),
          id,
          old: cur.memory,
          new: text,
          event: 'UPDATE',
          created: cur.created_at,
          updated: now(),
        });
        return send(res, 200, { message: 'Memory updated successfully!' });
      }
      if (m && req.method === 'DELETE') {
        const id = decodeURIComponent(m[1]);
        const cur = current(id);
        if (!cur) return send(res, 404, { detail: `Memory with id ${id} not found.` });
        db('add', { row: randomUUID(), id, old: cur.memory, event: 'DELETE', created: cur.created_at, updated: now() });
        owners.delete(id);
        return send(res, 200, { message: 'Memory deleted successfully' });
      }
      if (url.pathname === '/memories' && req.method === 'POST') {
        const o = (data ?? {}) as Record<string, unknown>;
        const owner: Record<string, string> = {};
        for (const k of ['user_id', 'agent_id', 'run_id'])
          if (typeof o[k] === 'string' && o[k]) owner[k] = o[k] as string;
        if (!Object.keys(owner).length)
          return send(res, 400, { detail: 'At least one identifier (user_id, agent_id, run_id) is required.' });
        const msgs = Array.isArray(o.messages) ? (o.messages as Array<{ content?: string }>) : [];
        let text = msgs.map((x) => x.content ?? '').join('\n');
        if (o.infer !== false || opts.ignoresInfer) text = `Extracted: ${text}`; // what an LLM extraction may make of it
        const id = randomUUID();
        const t = now();
        db('add', { row: randomUUID(), id, new: text, event: 'ADD', created: t, role: 'user' });
        owners.set(id, owner);
        return send(res, 200, { results: [{ id, memory: text, event: 'ADD' }] });
      }
      return send(res, 404, { detail: 'Not Found' });
    })();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    log,
    drift: (id, text) => drifted.set(id, text),
    close: () => new Promise((r) => server.close(() => r())),
  };
}
