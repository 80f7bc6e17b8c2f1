/**
 * Hermes' real format as Hermes' own code reads it (issue 12 item 6), on real files and real SQLite:
 * - write-approval staging: `pending/memory/<id>.json` records as tools/write_approval.py stage_write
 *   writes them (NousResearch/hermes-agent @ 00067189), shown as pending writes (memory.list, agent.status)
 *   and captured / restored as agent state;
 * - named profiles `profiles/<name>/` (hermes_constants.py named_profile_home), found by detect, named
 *   with `?profile=NAME`;
 * - state.db schema v30's messages.active / compacted (hermes_state_common.py SCHEMA_SQL), built with
 *   python3's sqlite3 (the library Hermes uses) as Hermes' schema and its column migrations do, read
 *   through the project's SQLite.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { storeItemView } from '../../extension/storeView';
import { agentStatusText } from '../../sidecar/cli/format';
import { Core } from '../../sidecar/core/core';
import { AgentKeepError } from '../../sidecar/core/errors';
import { detectStores, HermesStore, openStore, sameStore } from '../../sidecar/memory';
import { findHermesHomes } from '../../sidecar/memory/hermes';
import { runLint } from '../../sidecar/memory/lint/run';

/** A Hermes pending record as stage_write writes it (atomic_json_write: indented JSON). */
function record(id: string, createdAt: number, payload: Record<string, unknown>, origin = 'foreground'): string {
  const action = String(payload.action);
  return JSON.stringify(
    { id, subsystem: 'memory', action, summary: `${action} to memory: …`, origin, created_at: createdAt, payload },
    null,
    2,
  );
}

/**
 * state.db built as Hermes builds it: `v30` = SCHEMA_SQL's messages columns (active, compacted);
 * `v-active` = an older table that Hermes' column reconcile gave `active` only (ALTER TABLE ADD COLUMN);
 * `old` = no state columns at all. Rows: [content written by a memory add, active, compacted].
 */
function stateDb(file: string, schema: 'v30' | 'v-active' | 'old', rows: Array<[string, number, number]>): void {
  const py = String.raw`
import json, sqlite3, sys
schema, rows = sys.argv[2], json.loads(sys.argv[3])
c = sqlite3.connect(sys.argv[1])
c.execute('CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, started_at REAL NOT NULL)')
c.execute('''CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
  role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL''' +
  (''', observed INTEGER DEFAULT 0, _compressed_summary INTEGER NOT NULL DEFAULT 0,
  active INTEGER NOT NULL DEFAULT 1, compacted INTEGER NOT NULL DEFAULT 0, api_content TEXT, display_kind TEXT)''' if schema == 'v30' else ')'))
if schema == 'v-active':
    c.execute('ALTER TABLE messages ADD COLUMN active INTEGER NOT NULL DEFAULT 1')
c.execute("INSERT INTO sessions VALUES ('s1', 'cli', 1767000000)")
for i, (text, active, compacted) in enumerate(rows):
    t = 1767000000 + 60 * i
    call = [{'id': 'call_%d' % i, 'type': 'function', 'function': {'name': 'memory',
             'arguments': json.dumps({'action': 'add', 'target': 'memory', 'content': text})}}]
    cur = c.execute("INSERT INTO messages(session_id, role, tool_calls, timestamp) VALUES ('s1','assistant',?,?)", (json.dumps(call), t))
    c.execute("INSERT INTO messages(session_id, role, content, tool_call_id, tool_name, timestamp) VALUES ('s1','tool',?,?,'memory',?)",
              (json.dumps({'success': True}), 'call_%d' % i, t))
    if schema == 'v30':
        c.execute('UPDATE messages SET active = ?, compacted = ? WHERE id >= ?', (active, compacted, cur.lastrowid))
    elif schema == 'v-active':
        c.execute('UPDATE messages SET active = ? WHERE id >= ?', (active, cur.lastrowid))
c.commit()
c.close()
`;
  execFileSync('python3', ['-c', py, file, schema, JSON.stringify(rows)]);
}

async function put(root: string, rel: string, text: string): Promise<void> {
  await fs.mkdir(path.dirname(path.join(root, rel)), { recursive: true });
  await fs.writeFile(path.join(root, rel), text);
}

async function expectError(p: Promise<unknown> | (() => unknown), kind: string, re: RegExp): Promise<void> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    assert.ok(e instanceof AgentKeepError, `expected AgentKeepError, got ${String(e)}`);
    assert.equal(e.kind, kind);
    assert.match(`${e.message} ${e.hint ?? ''}`, re);
    return;
  }
  assert.fail(`expected ${kind}`);
}

describe("Hermes' real format (staged writes, profiles, state.db v30 message state)", function () {
  this.timeout(60000);
  let tmp: string;
  let home: string;
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-hermesfmt-'));
    home = path.join(tmp, '.hermes');
    await put(home, 'memories/MEMORY.md', 'User deploys with Ansible.\n§\nStaging listens on port 2222.');
    await put(home, 'memories/USER.md', 'User prefers short answers.');
    await put(home, 'config.yaml', 'memory:\n  write_approval: true\n');
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
    await fs.rm(`${tmp}-state`, { recursive: true, force: true });
  });

  async function stage(): Promise<void> {
    await put(
      home,
      'pending/memory/3f9a1c2e.json',
      record('3f9a1c2e', 1767003600.5, {
        action: 'replace',
        target: 'user',
        content: 'User prefers detailed answers.',
        old_text: 'short answers',
      }),
    );
    await put(
      home,
      'pending/memory/a1b2c3d4.json',
      '\uFEFF' + // Hermes reads records as utf-8-sig
        record(
          'a1b2c3d4',
          1767000000,
          { action: 'add', target: 'memory', content: 'User moved to Lisbon.', old_text: null },
          'background_review',
        ),
    );
    await put(
      home,
      'pending/memory/b0b0b0b0.json',
      record('b0b0b0b0', 1767007200, {
        action: 'batch',
        target: 'memory',
        operations: [
          { action: 'remove', old_text: 'Ansible' },
          { action: 'add', content: 'User deploys with Nix.' },
        ],
      }),
    );
    await put(home, 'pending/memory/broken.json', '{"id": "broken", ');
    await put(home, 'pending/memory/.b0b0b0b0.json.tmp123', 'half-written by atomic_json_write');
    await put(home, 'pending/skills/5e5e5e5e.json', record('5e5e5e5e', 1767000000, { action: 'create', name: 'x' }));
  }

  it('staged memory writes are listed as pending writes: action, target, content, time; read-only; not linted', async () => {
    const lint = async (): Promise<unknown> => runLint({ stores: [`hermes:${home}`] }, { now: 1767100000000 });
    const unstaged = await lint();
    await stage();
    const store = openStore(`hermes:${home}`);
    const files = await store.list();
    const pending = files.find((f) => f.kind === 'hermes-pending');
    assert.ok(pending, 'a hermes-pending file is listed');
    assert.equal(pending.pending, true);
    assert.equal(pending.file, path.join(home, 'pending', 'memory'));
    assert.match(pending.readOnly ?? '', /\/memory approve <id>/);
    // oldest first, as Hermes' list_pending sorts them; the unreadable record is named, not hidden
    assert.deepEqual(
      pending.entries.map((e) => [e.id, e.meta?.action, e.meta?.target, e.text, e.createdAt, e.source]),
      [
        ['a1b2c3d4', 'add', 'memory', 'User moved to Lisbon.', '2025-12-29T09:20:00.000Z', 'background_review'],
        ['3f9a1c2e', 'replace', 'user', 'User prefers detailed answers.', '2025-12-29T10:20:00.500Z', 'foreground'],
        [
          'b0b0b0b0',
          'batch',
          'memory',
          'remove: Ansible\nadd: User deploys with Nix.',
          '2025-12-29T11:20:00.000Z',
          'foreground',
        ],
      ],
    );
    assert.equal(pending.entries[1].meta?.oldText, 'short answers');
    assert.deepEqual(pending.entries[2].meta?.operations, [
      { action: 'remove', oldText: 'Ansible' },
      { action: 'add', content: 'User deploys with Nix.' },
    ]);
    assert.ok(pending.warnings?.some((w) => w.includes('pending/memory/broken.json is not JSON')));
    // the memory itself is unchanged: the staged write is not in MEMORY.md yet
    assert.equal(files.find((f) => f.kind === 'hermes-memory')!.entries.length, 2);
    // Hermes' pending_count: every *.json (the broken one too), not the temp file
    assert.equal(await (store as HermesStore).pendingWrites(), 4);
    const prov = await store.provenance!(pending.entries[1]);
    assert.equal(prov.traces[0].action, 'replace');
    assert.equal(prov.traces[0].previous, 'short answers');
    assert.match(prov.note ?? '', /not written yet.*\/memory approve 3f9a1c2e/);
    await expectError(store.edit!('3f9a1c2e', 'x'), 'Unsupported', /staged for approval/);
    await expectError(store.remove!('a1b2'), 'Unsupported', /staged for approval/);
    // the lint leaves staged writes out ("User deploys with Nix." is not memory yet): the same findings
    assert.deepEqual(await lint(), unstaged);
  });

  it('agent.status counts the staged writes per store; none: absent', async () => {
    const core = new Core({ stateDir: path.join(tmp, 'state') });
    const before = (await core.agentStatus({ target: `dir:${tmp}`, stores: [`hermes:${home}`] })).stores[0];
    assert.equal(before.pendingWrites, undefined);
    await stage();
    const after = (await core.agentStatus({ target: `dir:${tmp}`, stores: [`hermes:${home}`] })).stores[0];
    assert.equal(after.ok, true);
    assert.equal(after.pendingWrites, 4);
    // the Agent view's store row says so too (description and tooltip), and says nothing without them
    const row = storeItemView(after.store, after.description, 0, undefined, after);
    assert.match(row.description, /· 4 pending$/);
    assert.match(row.tooltip, /\n4 writes the agent staged for approval, not in memory yet/);
    assert.doesNotMatch(storeItemView(before.store, before.description, 0, undefined, before).description, /pending/);
    const text = agentStatusText(
      await core.agentStatus({ target: `dir:${tmp}`, stores: [`hermes:${home}`] }),
      () => undefined,
    );
    assert.match(text, /store hermes:\S+: ok; 4 writes wait for approval \(memory list shows them\)/);
  });

  it('staged writes (memory and skills) are agent state: captured, and a restore brings back what was waiting', async () => {
    await stage();
    const store = openStore(`hermes:${home}`);
    const state = await store.agentStateFiles();
    for (const rel of [
      'pending/memory/3f9a1c2e.json',
      'pending/memory/a1b2c3d4.json',
      'pending/memory/b0b0b0b0.json',
      'pending/memory/broken.json',
      'pending/skills/5e5e5e5e.json',
    ])
      assert.ok(state.includes(rel), `${rel} is agent state`);
    assert.ok(!state.some((r) => r.endsWith('.tmp123')), "Hermes' temp file is not agent state");
    assert.equal(store.isAgentStatePath('pending/memory/new.json'), true);
    assert.equal(store.isAgentStatePath('pending/other/x.json'), false);

    const core = new Core({ stateDir: `${tmp}-state` }); // outside the target
    const target = `dir:${tmp}`;
    const rp = await core.createRestorePoint({ target, stores: [`hermes:${home}`] });
    const captured = rp.agent.flatMap((a) => a.files.map((f) => f.path));
    assert.ok(captured.includes('pending/memory/3f9a1c2e.json'), 'captured in the restore point');
    // the user approves one write in Hermes (the record goes, MEMORY.md changes) and rejects another
    await fs.rm(path.join(home, 'pending/memory/a1b2c3d4.json'));
    await fs.rm(path.join(home, 'pending/memory/3f9a1c2e.json'));
    await fs.appendFile(path.join(home, 'memories/MEMORY.md'), '\n§\nUser moved to Lisbon.');
    await core.restoreRestorePoint({ target, id: rp.id, scope: 'agent', stores: [`hermes:${home}`] });
    const again = (await store.list()).find((f) => f.kind === 'hermes-pending')!;
    assert.deepEqual(
      again.entries.map((e) => e.id),
      ['a1b2c3d4', '3f9a1c2e', 'b0b0b0b0'],
    );
    assert.equal((await store.list())[0].entries.length, 2, 'MEMORY.md as it was');
  });

  it('named profiles: ?profile=NAME is the profile home Hermes uses; default is the root; bad names refused', async () => {
    const work = path.join(home, 'profiles', 'work');
    await put(work, 'memories/MEMORY.md', 'Work profile fact.');
    const s = openStore(`hermes:${home}?profile=work`);
    assert.equal(s.location, work);
    assert.equal(s.localRoot, work);
    assert.ok(sameStore(`hermes:${work}`, s), 'the same store as its path');
    assert.equal((await s.list())[0].entries[0].text, 'Work profile fact.');
    assert.equal(openStore(`hermes:${home}?profile=default`).location, home);
    await expectError(() => openStore(`hermes:${home}?profile=../x`), 'BadStore', /not a Hermes profile name/);
    await expectError(() => openStore(`hermes:${home}?profile=Work`), 'BadStore', /hermes profile list/);
    await expectError(() => openStore(`hermes:${home}?colour=blue`), 'BadStore', /colour/);
  });

  it('detect finds each named profile as its own store (root home too), not .-names or deleted ones', async () => {
    for (const root of [tmp, home]) {
      const base = root === tmp ? home : root;
      for (const n of ['work', 'zeta', 'gone', '.cache'])
        await put(path.join(base, 'profiles', n), 'memories/MEMORY.md', `${n} fact`);
      await fs.mkdir(path.join(base, 'profiles', '.deleted', 'gone'), { recursive: true }); // hermes profile delete
      const found = (await detectStores(root)).map((a) => a.spec);
      assert.deepEqual(found, [
        `hermes:${home}`,
        `hermes:${path.join(home, 'profiles', 'work')}`,
        `hermes:${path.join(home, 'profiles', 'zeta')}`,
      ]);
    }
    assert.deepEqual(await findHermesHomes({}, tmp), [
      home,
      path.join(home, 'profiles', 'work'),
      path.join(home, 'profiles', 'zeta'),
    ]);
  });

  it('state.db v30: a compacted call is provenance marked compacted; a rewound one only as a fallback, marked', async () => {
    await put(
      home,
      'memories/MEMORY.md',
      ['Live fact.', 'Compacted fact.', 'Rewound fact.', 'Twice written fact.'].join('\n§\n'),
    );
    stateDb(path.join(home, 'state.db'), 'v30', [
      ['Live fact.', 1, 0],
      ['Compacted fact.', 0, 1],
      ['Rewound fact.', 0, 0],
      ['Twice written fact.', 0, 0],
      ['Twice written fact.', 1, 0],
    ]);
    const store = openStore(`hermes:${home}`);
    const [mem] = await store.list();
    const prov = await Promise.all(mem.entries.map((e) => store.provenance!(e)));
    assert.deepEqual(
      prov.map((p) => p.traces.map((t) => [t.action, t.messageState ?? 'active'])),
      [[['add', 'active']], [['add', 'compacted']], [['add', 'rewound']], [['add', 'active']]],
    );
    assert.match(prov[1].note ?? '', /compaction summarised out of the context/);
    assert.match(prov[2].note ?? '', /rewound part of its session.*Hermes hides/);
    assert.equal(prov[3].note, undefined, 'the visible call wins; the rewound one is not mentioned');
    assert.equal(prov[3].traces[0].time, '2025-12-29T09:24:00.000Z');
  });

  it('older state.db schemas still work: no state columns (all active), `active` only (0 = soft-archived)', async () => {
    await put(home, 'memories/MEMORY.md', 'Old fact.\n§\nArchived fact.');
    stateDb(path.join(home, 'state.db'), 'old', [
      ['Old fact.', 1, 0],
      ['Archived fact.', 0, 0],
    ]);
    let store = openStore(`hermes:${home}`);
    let prov = await Promise.all((await store.list())[0].entries.map((e) => store.provenance!(e)));
    assert.deepEqual(
      prov.map((p) => p.traces.map((t) => t.messageState ?? 'active')),
      [['active'], ['active']],
    );
    await fs.rm(path.join(home, 'state.db'));
    stateDb(path.join(home, 'state.db'), 'v-active', [
      ['Old fact.', 1, 0],
      ['Archived fact.', 0, 0],
    ]);
    store = openStore(`hermes:${home}`);
    prov = await Promise.all((await store.list())[0].entries.map((e) => store.provenance!(e)));
    assert.deepEqual(
      prov.map((p) => p.traces.map((t) => t.messageState ?? 'active')),
      [['active'], ['compacted']],
    );
  });
});
