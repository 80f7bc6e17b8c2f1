/**
 * Provenance and session history from real state.db files (python3 sqlite3, WAL mode, both FTS
 * layouts) read through node-sqlite3-wasm on a consistent copy; never written.
 */
import * as assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { HermesStore } from '../../sidecar/memory/hermes';
import { classifyAction } from '../../sidecar/memory/hermes/history';
import { captureSqlite, consistentCopy, withReadOnlyDb } from '../../sidecar/memory/sqlite';
import { FIXTURES } from './helpers/paths';
import { hashTree, holdWalWriter, makeStateDb, memoryCall, toolCall } from './helpers/hermes-db';

const T0 = 1767000000;

describe('Hermes provenance from state.db (real SQLite)', () => {
  let tmp: string;
  let home: string;
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-prov-'));
    home = path.join(tmp, 'hermes');
    await fs.mkdir(path.join(home, 'memories'), { recursive: true });
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  const entry = (text: string, area = 'memory') => ({ id: 'x', text, area });

  it('the shared fixture: the add call, its session, source and time', async () => {
    await fs.copyFile(path.join(FIXTURES, 'memory', 'hermes', 'state.db'), path.join(home, 'state.db'));
    const s = new HermesStore(home);
    const p = await s.provenance(
      entry('Staging server 10.0.1.50 listens for SSH on port 2222, key ~/.ssh/staging_ed25519'),
    );
    assert.equal(p.traces.length, 1);
    assert.deepEqual(
      { ...p.traces[0], message: undefined },
      {
        action: 'add',
        time: new Date((T0 + 10) * 1000).toISOString(),
        session: '20260101_101500_a1b2c3',
        source: 'cli',
        messageId: 2,
        message: undefined,
      },
    );
    assert.match(p.traces[0].message!, /"action": "add"/);
    const none = await s.provenance(entry('User prefers tabs'));
    assert.deepEqual(none.traces, []);
    assert.equal(none.note, 'no memory tool call in state.db wrote this text: it was probably edited by hand');
  });

  it('no state.db: says so plainly', async () => {
    const p = await new HermesStore(home).provenance(entry('anything'));
    assert.deepEqual(p.traces, []);
    assert.match(p.note!, /^no state\.db in this home/);
  });

  it('WAL mode with committed frames only in state.db-wal: read from a copy, the original untouched', async () => {
    const db = path.join(home, 'state.db');
    makeStateDb(db, {
      wal: true,
      sessions: [{ id: 's1', source: 'telegram', started: T0 }],
      messages: [memoryCall({ action: 'add', target: 'user', content: 'Lives in Berlin' }, T0)],
    });
    const w = await holdWalWriter(db, [
      memoryCall({ action: 'add', target: 'memory', content: 'Deploys on Fridays are banned' }, T0 + 60),
    ]);
    try {
      const wal = await fs.stat(db + '-wal');
      assert.ok(wal.size > 0, 'the writer left frames in the WAL');
      const before = await hashTree(home);
      const s = new HermesStore(home);
      const p = await s.provenance(entry('Deploys on Fridays are banned'));
      assert.equal(p.traces.length, 1, JSON.stringify(p));
      assert.equal(p.traces[0].time, new Date((T0 + 60) * 1000).toISOString());
      const u = await s.provenance(entry('Lives in Berlin', 'user'));
      assert.equal(u.traces[0].source, 'telegram');
      // user entries are not matched against memory-target calls
      assert.equal((await s.provenance(entry('Lives in Berlin', 'memory'))).traces.length, 0);
      assert.deepEqual(await hashTree(home), before, 'state.db, -wal and -shm are byte-identical after reading');
      // a consistent single-file capture holds the WAL rows and needs no -wal
      const cap = path.join(tmp, 'cap.db');
      await captureSqlite(db, cap);
      await assert.rejects(fs.stat(cap + '-wal'));
      const n = await withReadOnlyDb(cap, (d) => d.get('SELECT count(*) AS n FROM messages')!.n);
      assert.equal(n, 2);
      assert.deepEqual(await hashTree(home), before);
    } finally {
      await w.kill();
    }
  });

  it('legacy inline FTS layout works the same', async () => {
    makeStateDb(path.join(home, 'state.db'), {
      layout: 'legacy',
      sessions: [{ id: 's1', source: 'discord', started: T0 }],
      messages: [memoryCall({ action: 'add', target: 'memory', content: 'Uses zsh' }, T0)],
    });
    const p = await new HermesStore(home).provenance(entry('Uses zsh'));
    assert.equal(p.traces.length, 1);
    assert.equal(p.traces[0].source, 'discord');
  });

  it('normalised match, replace chains through old_text, batches, and refused calls', async () => {
    makeStateDb(path.join(home, 'state.db'), {
      sessions: [
        { id: 'a', source: 'cli', started: T0 },
        { id: 'b', source: 'telegram', started: T0 + 100 },
      ],
      messages: [
        memoryCall({ action: 'add', target: 'memory', content: 'Staging port is 22' }, T0, 'a'),
        memoryCall(
          { action: 'replace', target: 'memory', old_text: 'port is 22', content: 'Staging port is 2222' },
          T0 + 100,
          'b',
        ),
        memoryCall(
          { action: 'replace', target: 'memory', old_text: 'is 2222', content: 'Staging SSH port is 2222 (not 22)' },
          T0 + 200,
          'b',
        ),
        memoryCall(
          {
            operations: [
              { action: 'add', content: 'Batch one' },
              { action: 'add', content: 'Batch two' },
            ],
            target: 'memory',
          },
          T0 + 300,
          'b',
        ),
        memoryCall({ action: 'add', target: 'memory', content: 'Refused fact' }, T0 + 400, 'b', 'call_refused'),
        {
          session: 'b',
          role: 'tool',
          content: JSON.stringify({ success: false, error: 'over budget' }),
          toolCallId: 'call_refused',
          toolName: 'memory',
          time: T0 + 401,
        },
        memoryCall({ action: 'add', target: 'memory', content: 'Prefers   Dark Mode' }, T0 + 500, 'a'),
      ],
    });
    const s = new HermesStore(home);
    const chain = await s.provenance(entry('Staging SSH port is 2222 (not 22)'));
    assert.deepEqual(
      chain.traces.map((t) => [t.action, t.session, t.previous]),
      [
        ['add', 'a', undefined],
        ['replace', 'b', 'Staging port is 22'],
        ['replace', 'b', 'Staging port is 2222'],
      ],
    );
    assert.equal((await s.provenance(entry('Batch two'))).traces.length, 1);
    const refused = await s.provenance(entry('Refused fact'));
    assert.equal(refused.traces.length, 0, 'a call Hermes refused did not write the entry');
    const norm = await s.provenance(entry('prefers dark mode'));
    assert.equal(norm.traces.length, 1);
    assert.match(norm.note!, /ignoring whitespace and case/);
  });

  it('outside-world actions are classified from tool calls (documented list)', () => {
    const yes: Array<[string, Record<string, unknown>]> = [
      ['send_message', { text: 'hi' }],
      ['web_search', { query: 'x' }],
      ['browser_navigate', { url: 'https://x' }],
      ['terminal', { command: 'git push origin main' }],
      ['terminal', { command: 'curl -X POST https://api.example.com/x' }],
      ['terminal', { command: 'scp a b:/tmp' }],
      ['terminal', { command: 'npm publish' }],
    ];
    for (const [name, args] of yes) assert.ok(classifyAction({ name, args }), `${name} ${JSON.stringify(args)}`);
    const no: Array<[string, Record<string, unknown>]> = [
      ['terminal', { command: 'git status' }],
      ['terminal', { command: 'curl -fsS http://localhost:8080/health' }],
      ['read_file', { path: '/etc/hosts' }],
      ['memory', { action: 'add' }],
      ['write_file', { path: 'x' }],
    ];
    for (const [name, args] of no)
      assert.equal(classifyAction({ name, args }), undefined, `${name} ${JSON.stringify(args)}`);
  });

  it('actionsSince reads tool calls after a time', async () => {
    makeStateDb(path.join(home, 'state.db'), {
      sessions: [{ id: 's1', source: 'telegram', started: T0 }],
      messages: [
        toolCall('send_message', { text: 'old' }, T0),
        toolCall('send_message', { text: 'new' }, T0 + 100),
        toolCall('terminal', { command: 'ls' }, T0 + 101),
        toolCall('terminal', { command: 'git push' }, T0 + 102),
      ],
    });
    const a = await new HermesStore(home).actionsSince(new Date((T0 + 50) * 1000).toISOString());
    assert.equal(a.length, 2);
    assert.match(a[0].message!, /^message sent: send_message .*new/);
    assert.match(a[1].message!, /^git push/);
    assert.equal(a[0].source, 'telegram');
  });

  it('consistentCopy retries while the database changes and gives up with a clear error', async () => {
    const db = path.join(home, 'state.db');
    makeStateDb(db, { messages: [] });
    // a file that changes on every stat round: append in a tight loop for a while
    let stop = false;
    const writer = (async () => {
      while (!stop) {
        await fs.appendFile(db, Buffer.alloc(0));
        await fs.utimes(db, new Date(), new Date(Date.now() + Math.random() * 1e6));
        await new Promise((r) => setImmediate(r));
      }
    })();
    try {
      await assert.rejects(consistentCopy(db, tmp), /kept changing while it was copied/);
    } finally {
      stop = true;
      await writer;
    }
    const copy = await consistentCopy(db, tmp);
    assert.equal(path.dirname(copy), tmp);
  });

  it('a file that is not SQLite: provenance unavailable, a FileError naming it and the fix (issue 13 #5)', async () => {
    await fs.writeFile(path.join(home, 'state.db'), 'not a database at all, just text'.repeat(200));
    const p = await new HermesStore(home).provenance(entry('x'));
    assert.deepEqual(p.traces, []);
    assert.equal(p.unavailable?.code, 'file_error');
    assert.match(p.unavailable?.message ?? '', /state\.db is damaged: file is not a database/);
    assert.match(p.unavailable?.hint ?? '', /\.recover/);
    // what cannot do without the history still fails, with the same FileError
    await assert.rejects(
      new HermesStore(home).actionsSince(new Date(0).toISOString()),
      (e: Error & { kind?: string }) => e.kind === 'FileError' && /state\.db/.test(e.message),
    );
  });
});
