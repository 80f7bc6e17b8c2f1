/**
 * Session history for the demo agent, for the test runners: writes `<hermesHome>/state.db` in the
 * layout of Hermes Agent's session store (a subset of its SCHEMA_SQL v30: schema_version, sessions,
 * messages, and the external-content FTS5 index messages_fts over messages_fts_src, as in
 * ../shared/fixtures/memory/make_fixtures.py) with two sessions whose `memory` tool calls added two
 * of the demo's MEMORY.md entries, so provenance (memory.show) has traces to show: one from the CLI,
 * one from Telegram. Real SQLite (node-sqlite3-wasm), written once; an existing state.db is kept.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Database } from 'node-sqlite3-wasm';
import { DEMO_SESSIONS } from './demoSessions';

const SCHEMA = `
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE sessions (
  id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, model TEXT, model_config TEXT,
  system_prompt TEXT, parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL, end_reason TEXT,
  message_count INTEGER DEFAULT 0, tool_call_count INTEGER DEFAULT 0, input_tokens INTEGER DEFAULT 0,
  output_tokens INTEGER DEFAULT 0, cwd TEXT, title TEXT, title_source TEXT, archived INTEGER NOT NULL DEFAULT 0);
CREATE TABLE messages (
  id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id), role TEXT NOT NULL,
  content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL, token_count INTEGER,
  finish_reason TEXT, active INTEGER NOT NULL DEFAULT 1, compacted INTEGER NOT NULL DEFAULT 0);
CREATE TABLE state_meta (key TEXT PRIMARY KEY, value TEXT);
CREATE VIEW messages_fts_src AS SELECT id, CASE WHEN role='tool' THEN substr(COALESCE(content,''),1,8192) ELSE content END AS content, tool_name, tool_calls FROM messages;
CREATE VIRTUAL TABLE messages_fts USING fts5(content, tool_name, tool_calls, content='messages_fts_src', content_rowid='id');
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
  INSERT INTO messages_fts(rowid, content, tool_name, tool_calls) VALUES (new.id,
    CASE WHEN new.role='tool' THEN substr(COALESCE(new.content,''),1,8192) ELSE new.content END, new.tool_name, new.tool_calls);
END;
`;

/**
 * Write the demo session history to `<hermesHome>/state.db` unless it exists. Returns its path.
 * @throws Error when the Hermes home does not exist (create the demo agent first)
 */
export function writeDemoSessionHistory(hermesHome: string): string {
  if (!fs.existsSync(path.join(hermesHome, 'memories'))) throw new Error(`${hermesHome} is not a Hermes home (no memories/). Create the demo agent first (createDemoAgent).`);
  const file = path.join(hermesHome, 'state.db');
  if (fs.existsSync(file)) return file;
  const tmp = `${file}.tmp-${process.pid}`;
  const db = new Database(tmp);
  try {
    db.exec(SCHEMA);
    db.run('INSERT INTO schema_version VALUES (30)');
    for (const s of DEMO_SESSIONS) {
      db.run('INSERT INTO sessions(id, source, model, started_at, ended_at, end_reason, message_count, tool_call_count, cwd, title, title_source) VALUES (?,?,?,?,?,?,?,?,?,?,?)', [
        s.id, s.source, 'anthropic/claude-sonnet-4', s.start, s.start + 300, 'new_session', 4, 1, '/home/sam/agent-home/workspace', s.title, 'llm',
      ]);
      const callId = `call_${s.id.slice(-6)}`;
      const args = JSON.stringify({ action: 'add', target: 'memory', content: s.entry });
      const msgs: Array<[string, string | null, string | null, string | null, string | null]> = [
        ['user', s.user, null, null, null],
        ['assistant', null, null, JSON.stringify([{ id: callId, type: 'function', function: { name: 'memory', arguments: args } }]), null],
        ['tool', JSON.stringify({ success: true, done: true, target: 'memory', message: 'Entry added.' }), callId, null, 'memory'],
        ['assistant', s.reply, null, null, null],
      ];
      msgs.forEach(([role, content, tcid, tcalls, tname], i) => {
        db.run('INSERT INTO messages(session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp) VALUES (?,?,?,?,?,?,?)', [s.id, role, content, tcid, tcalls, tname, s.start + 10 * i]);
      });
    }
  } finally {
    db.close();
  }
  fs.renameSync(tmp, file);
  return file;
}
