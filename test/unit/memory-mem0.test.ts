/**
 * mem0 store on the real fixture files (test/fixtures/memory/mem0: history.db and a local Qdrant
 * storage.sqlite with pickled points, copied from shared/fixtures/memory) and variants made with
 * real SQLite (python3's sqlite3 module, as mem0 itself writes them).
 */
import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { AgentKeepError } from '../../sidecar/core/errors';
import { openStore, Mem0Store } from '../../sidecar/memory';
import { isEphemeralPath, mem0TimeToIso } from '../../sidecar/memory/mem0';
import { withReadOnlyDb } from '../../sidecar/memory/sqlite';
import { expectAgentKeepError as expectError } from './helpers/errors';
import { FIXTURES } from './helpers/paths';
import { buildSidecar, runSidecar } from './helpers/sidecar';

const FIXTURE = path.join(FIXTURES, 'memory', 'mem0');
const MID = '3f2b8a9e-6c1d-4b7a-9e2f-0a1b2c3d4e5f';

function python(code: string): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile('python3', ['-c', code], (err, out, stderr) => (err ? reject(new Error(stderr)) : resolve(out))),
  );
}

/** qdrant_client's local meta.json (qdrant_client/local/qdrant_local.py _save) for one collection. */
function metaJson(onDisk: boolean | undefined): string {
  const vectors: Record<string, unknown> = { size: 4, distance: 'Cosine' };
  if (onDisk !== undefined) vectors.on_disk = onDisk;
  return JSON.stringify({ collections: { mem0: { vectors, shard_number: null, on_disk_payload: null } }, aliases: {} });
}

describe('mem0 memory store', function () {
  this.timeout(60_000);
  let durable: string; // under /var/tmp: survives reboots, so no /tmp warning
  let ephemeral: string; // under the OS temp dir
  let dir: string;

  beforeEach(async () => {
    durable = await fs.mkdtemp(path.join('/var/tmp', 'ak-mem0-'));
    ephemeral = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-mem0-'));
    dir = path.join(durable, '.mem0');
    await fs.cp(FIXTURE, dir, { recursive: true });
    await fs.writeFile(path.join(dir, 'qdrant', 'meta.json'), metaJson(true));
  });
  afterEach(async () => {
    await fs.rm(durable, { recursive: true, force: true });
    await fs.rm(ephemeral, { recursive: true, force: true });
  });

  it('reads current memories from the local Qdrant storage.sqlite (pickled points)', async () => {
    const s = openStore(`mem0:${dir}`);
    assert.ok(s instanceof Mem0Store);
    const files = await s.list();
    assert.equal(files.length, 1);
    const f = files[0];
    assert.equal(f.kind, 'mem0');
    assert.equal(f.file, path.join(dir, 'qdrant', 'collection', 'mem0', 'storage.sqlite'));
    assert.equal(f.warnings, undefined, 'durable config: no warnings');
    assert.match(f.readOnly ?? '', /only through its own API \(Memory\.update \/ Memory\.delete/);
    assert.equal(f.entries.length, 1);
    const e = f.entries[0];
    assert.equal(e.id, MID);
    assert.equal(e.text, 'Likes Chinese food, especially Sichuan');
    assert.equal(e.createdAt, '2026-01-01T10:00:00.000Z');
    assert.equal(e.updatedAt, '2026-01-05T08:30:00.000Z');
    assert.equal(e.meta?.hash, '8c3add93bed3965ac7bea0e899ee962b');
    assert.equal(e.meta?.user_id, 'dana');
    assert.equal(e.meta?.collection, 'mem0');
    assert.equal(e.source, 'user');
    // same as mem0's own get_all() answer for this store
    const getAll = JSON.parse(await fs.readFile(path.join(FIXTURE, 'get_all.json'), 'utf8')) as {
      results: Array<{ id: string; memory: string; hash: string }>;
    };
    assert.deepEqual(
      getAll.results.map((r) => [r.id, r.memory, r.hash]),
      [[e.id, e.text, e.meta?.hash]],
    );
  });

  it('provenance of a memory is its history.db ADD -> UPDATE chain; a memory without rows says so', async () => {
    const s = openStore(`mem0:${dir}`);
    const e = (await s.list())[0].entries[0];
    const p = await s.provenance!(e);
    assert.deepEqual(
      p.traces.map((t) => [t.action, t.time, t.message, t.previous]),
      [
        ['add', '2026-01-01T10:00:00.000Z', 'Likes Chinese food', undefined],
        ['update', '2026-01-05T08:30:00.000Z', 'Likes Chinese food, especially Sichuan', 'Likes Chinese food'],
      ],
    );
    assert.ok(p.traces.every((t) => t.source === 'user' && typeof t.messageId === 'string'));
    assert.match(p.note ?? '', /mem0ai\/mem0#7047/);
    const none = await s.provenance!({ id: 'no-such-memory', text: 'x' });
    assert.deepEqual(none.traces, []);
    assert.match(none.note ?? '', /No trace: history\.db has no rows for memory no-such-memory/);
    // the deleted memory's timeline ends in remove
    const gone = await s.provenance!({ id: '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d', text: '' });
    assert.deepEqual(
      gone.traces.map((t) => [t.action, t.message]),
      [
        ['add', 'Works at Acme Corp'],
        ['remove', 'Works at Acme Corp'],
      ],
    );
  });

  it('warns when the configuration is not durable: on_disk false/unset, Qdrant under /tmp, history.db missing', async () => {
    await fs.writeFile(path.join(dir, 'qdrant', 'meta.json'), metaJson(false));
    let w = (await openStore(`mem0:${dir}`).list())[0].warnings ?? [];
    assert.equal(w.length, 1);
    assert.match(
      w[0],
      /Collection "mem0" was created with on_disk false .*mem0 deletes the local Qdrant path each time it starts/,
    );
    await fs.writeFile(path.join(dir, 'qdrant', 'meta.json'), metaJson(undefined));
    w = (await openStore(`mem0:${dir}`).list())[0].warnings ?? [];
    assert.match(w.join('\n'), /on_disk unset \(false\)/);

    // Qdrant in the temp dir (mem0's default /tmp/qdrant) given with ?qdrant=
    const q = path.join(ephemeral, 'qdrant');
    await fs.cp(path.join(dir, 'qdrant'), q, { recursive: true });
    await fs.writeFile(path.join(q, 'meta.json'), metaJson(true));
    await fs.rm(path.join(dir, 'qdrant'), { recursive: true });
    const s = openStore(`mem0:${dir}?qdrant=${q}&collection=mem0`);
    const f = (await s.list())[0];
    assert.equal(f.entries.length, 1);
    w = f.warnings ?? [];
    assert.match(w.join('\n'), /under a temporary directory .*lost on reboot/);
    assert.match(w.join('\n'), /outside .*capture history\.db only/);
    assert.deepEqual(await s.agentStateFiles(), ['history.db']);

    await fs.rm(path.join(dir, 'history.db'));
    w = (await s.list())[0].warnings ?? [];
    assert.match(w.join('\n'), /history\.db is missing .*mem0ai\/mem0#3717/);
    const p = await s.provenance!(f.entries[0]);
    assert.match(p.note ?? '', /No trace: .*history\.db does not exist/);
  });

  it('without Qdrant storage, reconstructs current memories from history.db and says so', async () => {
    await fs.rm(path.join(dir, 'qdrant'), { recursive: true });
    const f = (await openStore(`mem0:${dir}?qdrant=${path.join(dir, 'nowhere')}`).list())[0];
    assert.equal(f.file, path.join(dir, 'history.db'));
    assert.deepEqual(
      f.entries.map((e) => [e.id, e.text, e.meta?.reconstructedFromHistory]),
      [[MID, 'Likes Chinese food, especially Sichuan', true]],
    );
    assert.match(f.warnings!.join('\n'), /No local Qdrant storage found .*reconstructed from history\.db/);

    // without ?qdrant=, mem0's machine-wide default is never read implicitly: the warning names how to opt in
    const g = (await openStore(`mem0:${dir}`).list())[0];
    assert.equal(g.file, path.join(dir, 'history.db'));
    assert.match(
      g.warnings!.join('\n'),
      new RegExp(`name it: mem0:${dir}\\?qdrant=/tmp/qdrant \\(that path does not survive a reboot\\)`),
    );
  });

  it('reads a history.db in WAL mode with uncheckpointed writes, and captures it consistently without touching it', async () => {
    const db = path.join(dir, 'history.db');
    // a writer that keeps the WAL open (no checkpoint) while we read: python3 sqlite3, as mem0 does
    const pyWriter = `
import sqlite3, sys, time
c = sqlite3.connect(${JSON.stringify(db)}); c.execute("PRAGMA journal_mode=WAL"); c.execute("PRAGMA wal_autocheckpoint=0")
c.execute("INSERT INTO history VALUES ('h5', '${MID}', 'Likes Chinese food, especially Sichuan', 'Loves Sichuan and Hunan food', 'UPDATE', '2026-01-01T10:00:00+00:00', '2026-01-07T09:00:00+00:00', 0, 'agent-7', 'assistant')")
c.commit()
print("ready", flush=True)
sys.stdin.readline()
`;
    const child = execFile('python3', ['-c', pyWriter]);
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
        child.on('exit', (c) => reject(new Error(`writer exited ${c}`)));
      });
      assert.ok((await fs.stat(`${db}-wal`)).size > 0, 'the WAL holds the new row');
      const before = await fs.readFile(db);
      const s = openStore(`mem0:${dir}`);
      const p = await s.provenance!({ id: MID, text: '' });
      assert.deepEqual(
        p.traces.map((t) => t.action),
        ['add', 'update', 'update'],
      );
      assert.equal(p.traces[2].source, 'agent-7');
      assert.equal(p.traces[2].previous, 'Likes Chinese food, especially Sichuan');
      assert.deepEqual(await s.agentStateFiles(), [
        'history.db',
        'history.db-wal',
        'qdrant/collection/mem0/storage.sqlite',
        'qdrant/meta.json',
      ]);
      // capture: one self-contained db with the WAL row; the -wal is not captured on its own
      const cap = path.join(ephemeral, 'cap.db');
      assert.equal(await s.captureFile!('history.db', cap), true);
      assert.equal(await s.captureFile!('history.db-wal', path.join(ephemeral, 'cap.db-wal')), false);
      await assert.rejects(fs.stat(path.join(ephemeral, 'cap.db-wal')));
      const n = await withReadOnlyDb(
        cap,
        (d) => d.get("SELECT count(*) AS n FROM history WHERE id = 'h5'") as { n: number },
      );
      assert.equal(n.n, 1);
      assert.deepEqual(await fs.readFile(db), before, 'the original db file is never written');
      const qcap = path.join(ephemeral, 'q.sqlite');
      await s.captureFile!('qdrant/collection/mem0/storage.sqlite', qcap);
      assert.equal(
        (await withReadOnlyDb(qcap, (d) => d.get('SELECT count(*) AS n FROM points') as { n: number })).n,
        1,
      );
    } finally {
      child.stdin!.end('\n');
      await new Promise((r) => (child.exitCode !== null ? r(undefined) : child.on('exit', r)));
    }
  });

  it('names the problem and the fix for bad stores and damaged databases', async () => {
    assert.throws(
      () => openStore('mem0:rel/dir'),
      (e: AgentKeepError) => e.kind === 'BadStore' && /not absolute/.test(e.message),
    );
    assert.throws(
      () => openStore(`mem0:${dir}?qdrant=rel/q`),
      (e: AgentKeepError) => e.kind === 'BadStore' && /Qdrant path "rel\/q"/.test(e.message),
    );
    assert.throws(
      () => openStore(`mem0:${dir}?url=http://x`),
      (e: AgentKeepError) => e.kind === 'BadStore' && /Unknown option "url"/.test(e.message),
    );
    await expectError(
      openStore(`mem0:${path.join(durable, 'nope')}`).list(),
      'StoreNotFound',
      /does not exist.*MEM0_DIR/s,
    );
    const empty = path.join(durable, 'empty');
    await fs.mkdir(empty);
    await expectError(
      openStore(`mem0:${empty}?qdrant=${path.join(empty, 'q')}`).list(),
      'StoreNotFound',
      /no history\.db and no local Qdrant storage/,
    );
    await fs.rm(path.join(dir, 'qdrant'), { recursive: true });
    await fs.writeFile(path.join(dir, 'history.db'), 'garbage, not sqlite '.repeat(100));
    await expectError(openStore(`mem0:${dir}?qdrant=${path.join(dir, 'q')}`).list(), 'FileError', /history\.db/);
    // read-only without mem0's API URL (issue 12 item 7: edits go through it when configured), saying why
    const s = openStore(`mem0:${dir}`);
    await expectError(s.edit!(MID, 'x'), 'Unsupported', /AGENTKEEP_MEM0_URL/);
    await expectError(s.remove!(MID), 'Unsupported', /AGENTKEEP_MEM0_URL/);
  });

  it('lists through the core and the real CLI (agentkeep memory list --store mem0:... --json)', async () => {
    const spec = `mem0:${dir}`;
    const core = new Core({ stateDir: path.join(ephemeral, 'state') });
    const r = await core.listMemory({ stores: [spec] });
    assert.deepEqual(
      r.stores.flatMap((f) => f.entries.map((e) => e.id)),
      [MID],
    );
    await buildSidecar();
    const cli = await runSidecar([
      '--state-dir',
      path.join(ephemeral, 'state'),
      'memory',
      'list',
      '--store',
      spec,
      '--json',
    ]);
    assert.equal(cli.code, 0, cli.stderr);
    const j = JSON.parse(cli.stdout) as {
      stores: Array<{ kind: string; entries: Array<{ id: string; text: string }> }>;
    };
    assert.deepEqual(
      j.stores.flatMap((f) => f.entries.map((e) => [e.id, e.text])),
      [[MID, 'Likes Chinese food, especially Sichuan']],
    );
  });

  it('memory diff against a restore point: a memory mem0 changed since shows as changed, a deleted one as removed', async () => {
    const core = new Core({ stateDir: path.join(ephemeral, 'state') });
    const spec = `mem0:${dir}`;
    const rp = await core.createRestorePoint({ target: `dir:${durable}`, stores: [spec], label: 'before' });
    const cap = rp.agent.find((a) => a.store === spec)!;
    assert.deepEqual(cap.files.map((f) => f.path).sort(), [
      'history.db',
      'qdrant/collection/mem0/storage.sqlite',
      'qdrant/meta.json',
    ]);
    // rewrite the point's text in place (same length, so the pickled PointStruct stays valid), as an UPDATE would
    const q = path.join(dir, 'qdrant', 'collection', 'mem0', 'storage.sqlite');
    const sql = (stmt: string): Promise<string> =>
      python(`import sqlite3\nc = sqlite3.connect(${JSON.stringify(q)})\n${stmt}\nc.commit()`);
    await sql(
      `raw = bytes(c.execute("SELECT point FROM points").fetchone()[0]).replace(b"Likes Chinese", b"Hates Chinese")\nc.execute("UPDATE points SET point = ?", (raw,))`,
    );
    let d = await core.diffMemory({ target: `dir:${durable}`, from: rp.id });
    assert.deepEqual(
      d.changed.map((c) => [c.before?.id, c.before?.text, c.after?.text]),
      [[MID, 'Likes Chinese food, especially Sichuan', 'Hates Chinese food, especially Sichuan']],
    );
    assert.deepEqual([d.added.length, d.removed.length], [0, 0]);
    await sql('c.execute("DELETE FROM points")');
    d = await core.diffMemory({ target: `dir:${durable}`, from: rp.id });
    assert.deepEqual(
      d.removed.map((c) => c.before?.id),
      [MID],
    );
  });

  it('helpers: ephemeral paths and mem0 times', async () => {
    assert.ok(isEphemeralPath('/tmp/qdrant'));
    assert.ok(isEphemeralPath('/dev/shm/x'));
    assert.ok(!isEphemeralPath('/tmpfoo/qdrant'));
    assert.ok(!isEphemeralPath('/var/tmp/qdrant'));
    assert.equal(mem0TimeToIso('2026-01-05T08:30:00+00:00'), '2026-01-05T08:30:00.000Z');
    assert.equal(mem0TimeToIso('2026-01-05 08:30:00'), '2026-01-05T08:30:00.000Z');
    assert.equal(mem0TimeToIso('soon'), undefined);
    assert.ok(await python('print(1)'));
  });
});
