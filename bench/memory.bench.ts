/**
 * Benchmark: Hermes memory provenance on a large session history.
 *   A Hermes home whose state.db (made with python3 sqlite3, schema v30 subset with the external-content
 *   FTS5 triggers, WAL mode) holds BENCH_MEM_MESSAGES (50,000) messages in 500 sessions: user turns,
 *   assistant turns with tool calls (terminal, read_file, web_search, ...), tool results, and 1,200
 *   `memory` tool calls (adds, replaces with old_text, removes) of which the current MEMORY.md and USER.md
 *   (40 entries) are the survivors (a few edited by hand, untraceable on purpose).
 *   - AgentKeep: a cold HermesStore: list() + provenance of every entry (consistent copy of state.db,
 *     one pass over the rows holding a memory call, an index, exact / normalised / replace-chain match)
 *   - naive alternative: per entry, SELECT ... WHERE tool_calls LIKE '%<entry text>%' on the same copy
 *     with the same SQLite (node-sqlite3-wasm), i.e. what a reader without an index would do
 *     (it also misses JSON-escaped text and replace chains; the matches found are counted).
 * Run: npm run bench:memory   (= npx tsx bench/memory.bench.ts)
 * Env: BENCH_MEM_MESSAGES (50000), BENCH_MEM_ROUNDS (5), BENCH_DIR (os.tmpdir()/agentkeep-memory-bench),
 *      BENCH_KEEP=1 keeps the data.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { HermesStore } from '../sidecar/memory/hermes';
import { withReadOnlyDb } from '../sidecar/memory/sqlite';

const MESSAGES = Number(process.env.BENCH_MEM_MESSAGES ?? 50_000);
const ROUNDS = Number(process.env.BENCH_MEM_ROUNDS ?? 5);
const BASE = process.env.BENCH_DIR ?? path.join(os.tmpdir(), 'agentkeep-memory-bench');

const GEN = String.raw`
import json, random, sqlite3, sys
random.seed(7)
home, n = sys.argv[1], int(sys.argv[2])
c = sqlite3.connect(home + '/state.db')
c.execute('PRAGMA journal_mode=WAL')
c.executescript("""
CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, model TEXT, parent_session_id TEXT,
  started_at REAL NOT NULL, ended_at REAL, title TEXT);
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, role TEXT NOT NULL, content TEXT,
  tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL, token_count INTEGER, finish_reason TEXT,
  active INTEGER NOT NULL DEFAULT 1, compacted INTEGER NOT NULL DEFAULT 0);
CREATE VIEW messages_fts_src AS SELECT id, CASE WHEN role='tool' THEN substr(COALESCE(content,''),1,8192) ELSE content END AS content, tool_name, tool_calls FROM messages;
CREATE VIRTUAL TABLE messages_fts USING fts5(content, tool_name, tool_calls, content='messages_fts_src', content_rowid='id');
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
  INSERT INTO messages_fts(rowid, content, tool_name, tool_calls) VALUES (new.id,
    CASE WHEN new.role='tool' THEN substr(COALESCE(new.content,''),1,8192) ELSE new.content END, new.tool_name, new.tool_calls);
END;
""")
words = 'deploy server port staging docker build test release config user prefers typescript python cache node api key ssh database backup cron'.split()
def sentence(k): return ' '.join(random.choice(words) for _ in range(k))
sources = ['cli', 'telegram', 'discord', 'cron']
t = 1760000000.0
live = {'memory': [], 'user': []}
mem_calls = 1200
every = max(1, n // mem_calls)
sid = None
for i in range(n):
    if i % (n // 500 or 1) == 0:
        sid = 's%04d' % (i // (n // 500 or 1))
        c.execute('INSERT INTO sessions(id, source, started_at) VALUES (?,?,?)', (sid, random.choice(sources), t))
    t += 7
    if i % every == 0:
        target = 'user' if random.random() < 0.25 else 'memory'
        cur = live[target]
        r = random.random()
        if cur and r < 0.2:
            old = random.choice(cur); new = old + ' (updated ' + str(i) + ')'
            cur[cur.index(old)] = new
            args = {'action': 'replace', 'target': target, 'old_text': old[-30:], 'content': new}
        elif cur and r < 0.3:
            old = random.choice(cur); cur.remove(old)
            args = {'action': 'remove', 'target': target, 'old_text': old[-30:]}
        else:
            new = 'Fact %d: %s' % (i, sentence(8))
            cur.append(new)
            if len(cur) > (30 if target == 'memory' else 10): cur.pop(0)
            args = {'action': 'add', 'target': target, 'content': new}
        tc = [{'id': 'call_%d' % i, 'type': 'function', 'function': {'name': 'memory', 'arguments': json.dumps(args)}}]
        c.execute('INSERT INTO messages(session_id, role, content, tool_calls, timestamp) VALUES (?,?,?,?,?)', (sid, 'assistant', None, json.dumps(tc), t))
        continue
    k = i % 4
    if k == 0:
        c.execute('INSERT INTO messages(session_id, role, content, timestamp) VALUES (?,?,?,?)', (sid, 'user', sentence(30), t))
    elif k == 1:
        name = random.choice(['terminal', 'read_file', 'web_search', 'write_file', 'send_message'])
        tc = [{'id': 'call_%d' % i, 'type': 'function', 'function': {'name': name, 'arguments': json.dumps({'command': 'ls -la ' + sentence(3), 'query': sentence(5)})}}]
        c.execute('INSERT INTO messages(session_id, role, content, tool_calls, timestamp) VALUES (?,?,?,?,?)', (sid, 'assistant', sentence(10), json.dumps(tc), t))
    elif k == 2:
        c.execute('INSERT INTO messages(session_id, role, content, tool_call_id, tool_name, timestamp) VALUES (?,?,?,?,?,?)', (sid, 'tool', sentence(60), 'call_%d' % (i - 1), 'terminal', t))
    else:
        c.execute('INSERT INTO messages(session_id, role, content, timestamp) VALUES (?,?,?,?)', (sid, 'assistant', sentence(40), t))
c.commit()
c.close()
# two entries edited by hand (untraceable), one with whitespace/case changes (normalised match)
mem = live['memory']
if len(mem) > 3:
    mem[0] = 'Hand-written note: the NAS is at 10.0.0.5'
    mem[1] = mem[1].upper()
open(home + '/memories/MEMORY.md', 'w').write('\n§\n'.join(mem))
open(home + '/memories/USER.md', 'w').write('\n§\n'.join(live['user']))
open(home + '/config.yaml', 'w').write('memory:\n  memory_char_limit: 20000\n  user_char_limit: 20000\n')
print(json.dumps({'memory': len(mem), 'user': len(live['user'])}))
`;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function main(): Promise<void> {
  fs.rmSync(BASE, { recursive: true, force: true });
  const home = path.join(BASE, 'hermes');
  fs.mkdirSync(path.join(home, 'memories'), { recursive: true });
  let t = performance.now();
  const counts = JSON.parse(execFileSync('python3', ['-c', GEN, home, String(MESSAGES)]).toString()) as {
    memory: number;
    user: number;
  };
  const genMs = performance.now() - t;
  const dbBytes = fs.statSync(path.join(home, 'state.db')).size;
  console.log(
    `generated ${MESSAGES} messages (${(dbBytes / 1e6).toFixed(1)} MB state.db), ${counts.memory} + ${counts.user} entries, in ${Math.round(genMs)} ms`,
  );

  const ours: number[] = [];
  let traced = 0;
  let entriesN = 0;
  for (let r = 0; r < ROUNDS; r++) {
    t = performance.now();
    const s = new HermesStore(home);
    const entries = (await s.list())
      .filter((f) => f.kind === 'hermes-memory' || f.kind === 'hermes-user')
      .flatMap((f) => f.entries);
    const prov = await s.provenanceAll(entries);
    ours.push(performance.now() - t);
    traced = prov.filter((p) => p.traces.length).length;
    entriesN = entries.length;
  }

  const naive: number[] = [];
  let naiveFound = 0;
  const entries = (await new HermesStore(home).list())
    .filter((f) => f.kind === 'hermes-memory' || f.kind === 'hermes-user')
    .flatMap((f) => f.entries);
  for (let r = 0; r < Math.min(ROUNDS, 3); r++) {
    t = performance.now();
    naiveFound = await withReadOnlyDb(path.join(home, 'state.db'), (db) => {
      let found = 0;
      const st = db.prepare(
        `SELECT m.id, m.session_id, m.timestamp, s.source FROM messages m LEFT JOIN sessions s ON s.id = m.session_id WHERE m.tool_calls LIKE ? ORDER BY m.id`,
      );
      try {
        for (const e of entries) if (st.all([`%${e.text}%`]).length) found++;
      } finally {
        st.finalize();
      }
      return found;
    });
    naive.push(performance.now() - t);
  }
  const o = median(ours);
  const n = median(naive);
  console.log('');
  console.log(`| what (${MESSAGES} messages, ${entriesN} entries) | median ms | entries traced |`);
  console.log('|---|---|---|');
  console.log(`| AgentKeep: copy + list + provenance of every entry | ${o.toFixed(0)} | ${traced}/${entriesN} |`);
  console.log(
    `| naive: per-entry \`tool_calls LIKE '%text%'\` (same copy, same SQLite) | ${n.toFixed(0)} | ${naiveFound}/${entriesN} |`,
  );
  console.log(`| ratio naive / AgentKeep | ${(n / o).toFixed(1)}x | |`);
  console.log(
    `rounds: ours ${ours.map((x) => x.toFixed(0)).join(', ')}; naive ${naive.map((x) => x.toFixed(0)).join(', ')}`,
  );
  if (!process.env.BENCH_KEEP) fs.rmSync(BASE, { recursive: true, force: true });
}

void main().catch((e) => {
  console.error(e);
  process.exit(1);
});
