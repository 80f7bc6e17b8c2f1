/**
 * mem0 edits through mem0's own REST API (issue 12 item 7), against a contract stub of mem0's server
 * (test/unit/helpers/mem0-stub.ts, written from mem0ai/mem0 server/main.py and server/auth.py) that
 * keeps the memories in a real history.db as mem0 does. Without a URL the store is read-only and says why.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { describeStore, openStore } from '../../sidecar/memory';
import { expectAgentKeepError as expectError } from './helpers/errors';
import { startMem0Stub, type Mem0Stub } from './helpers/mem0-stub';

const A = '0a1b2c3d-0000-4000-8000-00000000000a';
const B = '9f8e7d6c-0000-4000-8000-00000000000b';

/** history.db with two memories, as mem0's storage.py writes it (python3 sqlite3). */
function historyDb(file: string): void {
  execFileSync('python3', [
    '-c',
    String.raw`
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute('''CREATE TABLE history (id TEXT PRIMARY KEY, memory_id TEXT, old_memory TEXT, new_memory TEXT, event TEXT,
  created_at DATETIME, updated_at DATETIME, is_deleted INTEGER, actor_id TEXT, role TEXT)''')
c.execute("INSERT INTO history VALUES ('h1', ?, NULL, 'Likes Sichuan food', 'ADD', '2026-01-01T10:00:00+00:00', NULL, 0, NULL, 'user')", (sys.argv[2],))
c.execute("INSERT INTO history VALUES ('h2', ?, NULL, 'Works in Berlin', 'ADD', '2026-01-02T10:00:00+00:00', NULL, 0, NULL, 'user')", (sys.argv[3],))
c.commit()
`,
    file,
    A,
    B,
  ]);
}

describe('mem0 edits through its REST API (contract stub of mem0ai/mem0 server/main.py)', function () {
  this.timeout(60_000);
  let tmp: string;
  let dir: string;
  let stub: Mem0Stub | undefined;
  let core: Core;
  const env = { url: process.env.AGENTKEEP_MEM0_URL, key: process.env.AGENTKEEP_MEM0_API_KEY };

  beforeEach(async () => {
    delete process.env.AGENTKEEP_MEM0_URL;
    delete process.env.AGENTKEEP_MEM0_API_KEY;
    tmp = await fs.mkdtemp(path.join('/var/tmp', 'ak-mem0api-'));
    dir = path.join(tmp, '.mem0');
    await fs.mkdir(dir);
    historyDb(path.join(dir, 'history.db'));
    core = new Core({ stateDir: path.join(tmp, 'state') });
  });
  afterEach(async () => {
    await stub?.close();
    stub = undefined;
    await fs.rm(tmp, { recursive: true, force: true });
    if (env.url === undefined) delete process.env.AGENTKEEP_MEM0_URL;
    else process.env.AGENTKEEP_MEM0_URL = env.url;
    if (env.key === undefined) delete process.env.AGENTKEEP_MEM0_API_KEY;
    else process.env.AGENTKEEP_MEM0_API_KEY = env.key;
  });
  const texts = async (spec: string): Promise<string[]> =>
    (await openStore(spec).list()).flatMap((f) => f.entries.map((e) => e.text)).sort();

  it('without a URL: read-only, the reason says how to enable edits; nothing is sent anywhere', async () => {
    const spec = `mem0:${dir}`;
    const [f] = await openStore(spec).list();
    assert.match(f.readOnly ?? '', /only through its own API \(Memory\.update \/ Memory\.delete.*AGENTKEEP_MEM0_URL/);
    assert.equal(describeStore(spec).capabilities.edit, true, 'the kind can edit; this store says why it does not');
    await expectError(core.editMemory({ store: spec, entry: A, text: 'x' }), 'Unsupported', /\?api=http/);
    await expectError(openStore(spec).remove!(A), 'Unsupported', /AGENTKEEP_MEM0_URL/);
    assert.deepEqual(await texts(spec), ['Likes Sichuan food', 'Works in Berlin']);
  });

  it('edit, remove and add (its undo) go through PUT / DELETE / POST /memories; the directory shows them', async () => {
    stub = await startMem0Stub(path.join(dir, 'history.db'));
    const spec = `mem0:${dir}?api=${stub.url}`;
    const [f] = await openStore(spec).list();
    assert.equal(f.readOnly, undefined, 'editable with a URL');
    const shown = await core.showMemory({ stores: [spec], entry: A.slice(0, 8) });
    const edited = await core.editMemory({
      store: spec,
      entry: A,
      text: 'Likes Cantonese food',
      expectedHash: shown.contentHash,
    });
    assert.equal(edited.entry.text, 'Likes Cantonese food');
    assert.equal(edited.entry.id, A, 'mem0 keeps the id');
    assert.equal(edited.previous.text, 'Likes Sichuan food');
    // compare-and-swap as far as mem0 allows: re-read the memory right before the write
    assert.deepEqual(stub.log.slice(-3), [`GET /memories/${A}`, `PUT /memories/${A}`, `GET /memories/${A}`]);
    const removed = await core.removeMemory({ store: spec, entry: B, expectedHash: edited.contentHash });
    assert.equal(removed.removed.text, 'Works in Berlin');
    assert.deepEqual(await texts(spec), ['Likes Cantonese food']);
    // the undo of a remove needs an owner: mem0 requires user_id, agent_id or run_id
    await expectError(core.addMemory(removed.undo), 'InvalidParams', /user_id=NAME/);
    const back = await core.addMemory({ ...removed.undo, file: 'user_id=alice' });
    assert.equal(back.entry.text, 'Works in Berlin');
    assert.notEqual(back.entry.id, B, 'mem0 gives an added memory a new id');
    assert.deepEqual(await texts(spec), ['Likes Cantonese food', 'Works in Berlin']);
    // history.db has mem0's own rows for each change (provenance reads them)
    const prov = await openStore(spec).provenance!(edited.entry);
    assert.deepEqual(
      prov.traces.map((t) => t.action),
      ['add', 'update'],
    );
  });

  it('refuses when the memory changed since it was read (locally or on the server): nothing written', async () => {
    stub = await startMem0Stub(path.join(dir, 'history.db'));
    const spec = `mem0:${dir}?api=${stub.url}`;
    const { contentHash } = await core.showMemory({ stores: [spec], entry: A });
    // the agent changes memory B meanwhile: the store's hash moved on
    await openStore(spec).edit!(B, 'Works in Munich');
    const before = stub.log.length;
    await expectError(
      core.editMemory({ store: spec, entry: A, text: 'x', expectedHash: contentHash }),
      'Conflict',
      /changed since they were read/,
    );
    assert.equal(stub.log.length, before, 'not one request: refused on the local read');
    // the server's copy differs from what AgentKeep read (a write not in history.db yet)
    stub.drift(A, 'Likes Hunan food');
    await expectError(core.editMemory({ store: spec, entry: A, text: 'y' }), 'Conflict', /mem0 has "Likes Hunan food"/);
    await expectError(core.removeMemory({ store: spec, entry: A }), 'Conflict', /changed since it was read/);
    assert.ok(!stub.log.some((l) => l.startsWith('PUT') && l.includes(A) && stub!.log.indexOf(l) >= before));
    assert.ok(!stub.log.some((l) => l.startsWith('DELETE')), 'no DELETE sent');
    assert.deepEqual(await texts(`mem0:${dir}`), ['Likes Sichuan food', 'Works in Munich']);
  });

  it('auth: the key from AGENTKEEP_MEM0_API_KEY as X-API-Key; without it AuthFailed naming the fix', async () => {
    stub = await startMem0Stub(path.join(dir, 'history.db'), { apiKey: 'm0sk_test_key_1234567890' });
    const spec = `mem0:${dir}?api=${stub.url}`;
    await expectError(core.editMemory({ store: spec, entry: A, text: 'x' }), 'AuthFailed', /AGENTKEEP_MEM0_API_KEY/);
    process.env.AGENTKEEP_MEM0_API_KEY = 'wrong';
    await expectError(core.editMemory({ store: spec, entry: A, text: 'x' }), 'AuthFailed', /Invalid API key/);
    process.env.AGENTKEEP_MEM0_API_KEY = 'm0sk_test_key_1234567890';
    const r = await core.editMemory({ store: spec, entry: A, text: 'Likes dim sum' });
    assert.equal(r.entry.text, 'Likes dim sum');
  });

  it('older servers that do not store the text as given are caught, and an unreachable one changes nothing', async () => {
    stub = await startMem0Stub(path.join(dir, 'history.db'), { legacyPut: true, ignoresInfer: true });
    const spec = `mem0:${dir}?api=${stub.url}&user_id=alice`;
    await expectError(
      core.editMemory({ store: spec, entry: A, text: 'Likes tea' }),
      'Conflict',
      /did not store the text as given/,
    );
    await expectError(core.addMemory({ store: spec, text: 'Has a cat' }), 'Conflict', /Extracted: Has a cat/);
    await stub.close();
    stub = undefined;
    const spec2 = `mem0:${dir}?api=http://127.0.0.1:9`;
    await expectError(
      core.removeMemory({ store: spec2, entry: B }),
      'Internal',
      /Cannot reach mem0.*Nothing was changed/,
    );
    await expectError(
      Promise.resolve().then(() => openStore(`mem0:${dir}?api=ftp://x`)),
      'BadStore',
      /http\(s\)/,
    );
  });

  it('AGENTKEEP_MEM0_URL enables edits for a store string without ?api=', async () => {
    stub = await startMem0Stub(path.join(dir, 'history.db'));
    process.env.AGENTKEEP_MEM0_URL = stub.url;
    const r = await core.removeMemory({ store: `mem0:${dir}`, entry: A });
    assert.equal(r.removed.id, A);
    assert.deepEqual(await texts(`mem0:${dir}`), ['Works in Berlin']);
  });
});
