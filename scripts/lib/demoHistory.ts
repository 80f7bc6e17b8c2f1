/**
 * Session history for the demo agent, for the test runners: writes `<hermesHome>/state.db` in the
 * layout of Hermes Agent's session store (sessions, messages and the external-content FTS5 index, as
 * test/unit/helpers/hermes-db.ts makes it with python3's sqlite3, the library Hermes uses) with the
 * two sessions of demoSessions.ts, whose `memory` tool calls added two of the demo's MEMORY.md
 * entries, so provenance (memory.show) has traces to show: one from the CLI, one from Telegram.
 * Written once; an existing state.db is kept.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeStateDb, type Msg } from '../../test/unit/helpers/hermes-db';
import { DEMO_SESSIONS } from './demoSessions';

/**
 * Write the demo session history to `<hermesHome>/state.db` unless it exists. Returns its path.
 * @throws Error when the Hermes home does not exist (create the demo agent first), or python3 fails
 */
export function writeDemoSessionHistory(hermesHome: string): string {
  if (!fs.existsSync(path.join(hermesHome, 'memories')))
    throw new Error(
      `${hermesHome} is not a Hermes home (no memories/). Create the demo agent first (createDemoAgent).`,
    );
  const file = path.join(hermesHome, 'state.db');
  if (fs.existsSync(file)) return file;
  const messages: Msg[] = DEMO_SESSIONS.flatMap((s): Msg[] => {
    const callId = `call_${s.id.slice(-6)}`;
    const args = JSON.stringify({ action: 'add', target: 'memory', content: s.entry });
    return [
      { session: s.id, role: 'user', content: s.user, time: s.start },
      {
        session: s.id,
        role: 'assistant',
        toolCalls: [{ id: callId, type: 'function', function: { name: 'memory', arguments: args } }],
        time: s.start + 10,
      },
      {
        session: s.id,
        role: 'tool',
        content: JSON.stringify({ success: true, done: true, target: 'memory', message: 'Entry added.' }),
        toolCallId: callId,
        toolName: 'memory',
        time: s.start + 20,
      },
      { session: s.id, role: 'assistant', content: s.reply, time: s.start + 30 },
    ];
  });
  const tmp = `${file}.tmp-${process.pid}`;
  makeStateDb(tmp, {
    sessions: DEMO_SESSIONS.map((s) => ({ id: s.id, source: s.source, started: s.start })),
    messages,
  });
  fs.renameSync(tmp, file);
  return file;
}
