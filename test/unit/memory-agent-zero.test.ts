/**
 * Agent Zero store on the real fixture files (test/fixtures/memory/agent-zero, copied from
 * shared/fixtures/memory) and variants written with real Python pickle; edits against a contract
 * stub of Agent Zero's HTTP API (helpers/agent-zero-stub.ts: Agent Zero itself cannot run here).
 */
import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { AgentKeepError } from '../../sidecar/core/errors';
import { openStore, AgentZeroStore } from '../../sidecar/memory';
import { a0TimeToIso } from '../../sidecar/memory/agent-zero';
import { a0Pickle, startA0Stub, type A0Stub } from './helpers/agent-zero-stub';
import { expectAgentKeepError as expectError } from './helpers/errors';
import { FIXTURES } from './helpers/paths';
import { buildSidecar, runSidecar } from './helpers/sidecar';
import { restoreEnv } from './helpers/env';

const FIXTURE = path.join(FIXTURES, 'memory', 'agent-zero');

function python(code: string): Promise<void> {
  return new Promise((resolve, reject) =>
    execFile('python3', ['-c', code], (err, _o, stderr) => (err ? reject(new Error(stderr)) : resolve())),
  );
}

describe('agent-zero memory store', function () {
  this.timeout(60_000);
  let tmp: string;
  let root: string;
  let stub: A0Stub | undefined;
  const savedEnv = { ...process.env };

  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-a0-'));
    root = path.join(tmp, 'a0');
    await fs.cp(FIXTURE, root, { recursive: true });
    delete process.env.AGENTKEEP_A0_URL;
    delete process.env.AGENTKEEP_A0_USER;
    delete process.env.AGENTKEEP_A0_PASSWORD;
  });
  afterEach(async () => {
    await stub?.close();
    stub = undefined;
    restoreEnv(savedEnv);
    await fs.rm(tmp, { recursive: true, force: true });
  });

  const pkl = (): string => path.join(root, 'usr', 'memory', 'default', 'index.pkl');

  it('reads the fixture index.pkl: ids, areas, time, knowledge source, consolidation metadata', async () => {
    const s = openStore(`agent-zero:${root}`);
    assert.ok(s instanceof AgentZeroStore);
    const files = await s.list();
    assert.deepEqual(
      files.map((f) => f.kind),
      ['agent-zero-main', 'agent-zero-fragments', 'agent-zero-solutions'],
    );
    const all = files.flatMap((f) => f.entries);
    assert.deepEqual(all.map((e) => e.id).sort(), ['Q0r8TtY6uE', 'Xk3P9aQ2mZ', 'b7Lq2Wv0cN', 'kN5sH1jD3f']);
    const ssh = all.find((e) => e.id === 'Xk3P9aQ2mZ')!;
    assert.equal(ssh.text, "User's staging server listens for SSH on port 2222 (not 22).");
    assert.equal(ssh.area, 'main');
    assert.equal(ssh.createdAt, '2026-01-01T10:15:42.000Z');
    assert.equal(ssh.source, 'conversation');
    const sol = all.find((e) => e.id === 'b7Lq2Wv0cN')!;
    assert.equal(sol.area, 'solutions');
    assert.equal(sol.meta?.consolidation_action, 'merge');
    assert.deepEqual(sol.meta?.consolidated_from, ['aa11bb22cc', 'dd33ee44ff']);
    const kn = all.find((e) => e.id === 'kN5sH1jD3f')!;
    assert.equal(kn.source, 'knowledge:/a0/knowledge/main/about/configuration.md');
    assert.deepEqual(all.find((e) => e.id === 'Q0r8TtY6uE')!.meta?.tags, ['preference']);
    // main entries oldest first; every file names the pickle and says why it is read-only
    assert.deepEqual(
      files[0].entries.map((e) => e.id),
      ['kN5sH1jD3f', 'Xk3P9aQ2mZ'],
    );
    for (const f of files) {
      assert.equal(f.file, pkl());
      assert.match(f.readOnly ?? '', /FAISS index.*only through Agent Zero's own API: set AGENTKEEP_A0_URL/);
    }
    // fixture embedding.json = Agent Zero's default model, knowledge ids present: no warnings
    assert.equal(files[0].warnings, undefined);
    assert.deepEqual(await s.agentStateFiles(), [
      'usr/memory/default/embedding.json',
      'usr/memory/default/index.faiss',
      'usr/memory/default/index.pkl',
      'usr/memory/default/knowledge_import.json',
    ]);
    assert.ok(s.isAgentStatePath('memory/default/index.pkl'));
    assert.ok(!s.isAgentStatePath('usr/memory/embeddings/index.pkl'));
    assert.ok(!s.isAgentStatePath('usr/settings.json'));
    const prov = await s.provenance!(sol);
    assert.deepEqual(
      prov.traces.map((t) => t.action),
      ['add', 'consolidate'],
    );
    assert.match(prov.traces[1].message ?? '', /merge of aa11bb22cc, dd33ee44ff/);
    assert.match(prov.note ?? '', /no history/);
  });

  it('lists the older memory/<subdir> layout too, with the instruments area and a leftover warning', async () => {
    const legacy = path.join(root, 'memory', 'default');
    await fs.mkdir(legacy, { recursive: true });
    await fs.mkdir(path.join(root, 'memory', 'embeddings'), { recursive: true }); // old cache dir: not a subdir
    await fs.copyFile(
      path.join(FIXTURE, 'usr', 'memory', 'default', 'embedding.json'),
      path.join(legacy, 'embedding.json'),
    );
    // Agent Zero saves index.faiss with index.pkl
    await fs.copyFile(path.join(FIXTURE, 'usr', 'memory', 'default', 'index.faiss'), path.join(legacy, 'index.faiss'));
    await python(`
import sys; sys.path.insert(0, ${JSON.stringify(path.join(FIXTURES, 'memory'))})
import a0_pickle as a
import uuid
d = {"5d2c0a3e-1111-4a3b-8c2d-000000000001": a.Document("Use the snake tool in instruments/snake.md", {"area": "instruments", "id": "5d2c0a3e-1111-4a3b-8c2d-000000000001", "timestamp": "2024-06-01 08:00:00"})}
a.save(${JSON.stringify(path.join(legacy, 'index.pkl'))}, a.InMemoryDocstore(d), {0: list(d)[0]})
a.resize_faiss(${JSON.stringify(path.join(legacy, 'index.faiss'))}, 1)  # one row for its one document
`);
    const s = openStore(`agent-zero:${root}`);
    const files = await s.list();
    const old = files.filter((f) => f.file === path.join(legacy, 'index.pkl'));
    assert.equal(old.length, 1);
    assert.equal(old[0].kind, 'agent-zero-instruments');
    assert.equal(old[0].entries[0].area, 'instruments');
    assert.equal(old[0].entries[0].createdAt, '2024-06-01T08:00:00.000Z');
    assert.match(old[0].warnings?.join('\n') ?? '', /Both usr\/memory\/default and the older memory\/default exist/);
    assert.ok((await s.agentStateFiles()).includes('memory/default/index.pkl'));
    // only the older layout: still a store
    await fs.rm(path.join(root, 'usr'), { recursive: true });
    const only = await openStore(`agent-zero:${root}`).list();
    assert.deepEqual(
      only.flatMap((f) => f.entries.map((e) => e.id)),
      ['5d2c0a3e-1111-4a3b-8c2d-000000000001'],
    );
    assert.equal(only[0].warnings, undefined);
    assert.equal(only[0].broken, undefined);
  });

  it('lists project memory (usr/projects/<p>/.a0proj/memory = subdir projects/<p>) and edits it through the API', async () => {
    const proj = path.join(root, 'usr', 'projects', 'web', '.a0proj', 'memory');
    await fs.mkdir(proj, { recursive: true });
    await fs.copyFile(
      path.join(FIXTURE, 'usr', 'memory', 'default', 'embedding.json'),
      path.join(proj, 'embedding.json'),
    );
    // Agent Zero saves index.faiss with index.pkl; without it the subdir is broken (Agent Zero would
    // save an empty index over index.pkl)
    await fs.copyFile(path.join(FIXTURE, 'usr', 'memory', 'default', 'index.faiss'), path.join(proj, 'index.faiss'));
    await python(`
import sys; sys.path.insert(0, ${JSON.stringify(path.join(FIXTURES, 'memory'))})
import a0_pickle as a
d = {"pW1eb00001": a.Document("The web project deploys with pnpm run deploy.", {"area": "main", "id": "pW1eb00001", "timestamp": "2026-02-01 12:00:00"})}
a.save(${JSON.stringify(path.join(proj, 'index.pkl'))}, a.InMemoryDocstore(d), {0: "pW1eb00001"})
a.resize_faiss(${JSON.stringify(path.join(proj, 'index.faiss'))}, 1)  # one row for its one document
`);
    stub = await startA0Stub(path.join(root, 'usr', 'memory'));
    const s = new AgentZeroStore(root, undefined, { url: stub.url });
    const files = await s.list();
    const pf = files.filter((f) => f.file === path.join(proj, 'index.pkl'));
    assert.equal(pf.length, 1);
    assert.equal(pf[0].entries[0].meta?.subdir, 'projects/web');
    assert.ok((await s.agentStateFiles()).includes('usr/projects/web/.a0proj/memory/index.pkl'));
    assert.ok(s.isAgentStatePath('usr/projects/web/.a0proj/memory/index.faiss'));
    assert.ok(!s.isAgentStatePath('usr/projects/web/.a0proj/project.json'));
    const rm = await s.remove!('pW1eb00001');
    assert.equal(rm.file, 'projects/web/main');
    const back = await s.add!(rm.removed.text, rm.file);
    assert.equal(back.entry.meta?.subdir, 'projects/web');
    assert.equal(back.entry.file, path.join(proj, 'index.pkl'));
  });

  it('reports an embedding model mismatch (plugin config and older settings.json)', async () => {
    const cfg = path.join(root, 'usr', 'plugins', '_model_config', 'config.json');
    await fs.mkdir(path.dirname(cfg), { recursive: true });
    await fs.writeFile(
      cfg,
      JSON.stringify({ embedding_model: { provider: 'openai', name: 'text-embedding-3-small' } }),
    );
    let w = (await openStore(`agent-zero:${root}`).list())[0].warnings ?? [];
    assert.equal(w.length, 1);
    assert.match(
      w[0],
      /Embedding model mismatch in usr\/memory\/default: the index was built with huggingface\/sentence-transformers\/all-MiniLM-L6-v2 but Agent Zero is configured for openai\/text-embedding-3-small/,
    );
    assert.ok(w[0].includes(cfg));
    await fs.rm(cfg);
    await fs.writeFile(
      path.join(root, 'usr', 'settings.json'),
      JSON.stringify({ embed_model_provider: 'ollama', embed_model_name: 'nomic-embed-text' }),
    );
    w = (await openStore(`agent-zero:${root}`).list())[0].warnings ?? [];
    assert.match(w.join('\n'), /configured for ollama\/nomic-embed-text/);
    await fs.rm(path.join(root, 'usr', 'memory', 'default', 'embedding.json'));
    w = (await openStore(`agent-zero:${root}`).list())[0].warnings ?? [];
    assert.match(w.join('\n'), /embedding\.json is missing: Agent Zero will re-embed/);
  });

  it('is lenient about unknown class paths and reports them; a damaged pickle is a FileError with a fix', async () => {
    await python(`
import pickle, sys, types
def mod(n):
    parts = n.split(".")
    for i in range(1, len(parts)+1):
        sys.modules.setdefault(".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
    return sys.modules[n]
class Doc:
    def __init__(s, t, m): s.page_content = t; s.metadata = m
class Store:
    def __init__(s, d): s._dict = d
Doc.__module__ = "langchain.schema.vendored"; Doc.__qualname__ = "Doc"; mod("langchain.schema.vendored").Doc = Doc
Store.__module__ = "my_fork.docstore"; Store.__qualname__ = "Store"; mod("my_fork.docstore").Store = Store
d = {"a1": Doc("plain v1 style state", {"area": "main", "id": "a1"}), "b2": "not a document"}
pickle.dump((Store(d), {0: "a1", 1: "b2", 2: "gone"}), open(${JSON.stringify(pkl())}, "wb"))
`);
    const files = await openStore(`agent-zero:${root}`).list();
    assert.deepEqual(
      files.flatMap((f) => f.entries.map((e) => [e.id, e.text])),
      [['a1', 'plain v1 style state']],
    );
    const w = files[0].warnings!.join('\n');
    assert.match(w, /unknown docstore class my_fork\.docstore\.Store/);
    assert.match(w, /unknown document class langchain\.schema\.vendored\.Doc/);
    assert.match(w, /docstore entry b2 has no page_content/);
    assert.match(w, /2 FAISS row\(s\) point to ids missing from the docstore/);
    await fs.writeFile(pkl(), 'not a pickle at all');
    await expectError(
      openStore(`agent-zero:${root}`).list(),
      'FileError',
      /Cannot unpickle .*index\.pkl.*Restore it from a restore point/,
    );
  });

  it('an index.pkl that is a FIFO is a FileError at once, not a read that waits for a writer', async () => {
    await fs.rm(pkl());
    await new Promise<void>((resolve, reject) => execFile('mkfifo', [pkl()], (err) => (err ? reject(err) : resolve())));
    const t0 = Date.now();
    const err = await expectError(
      openStore(`agent-zero:${root}`).list(),
      'FileError',
      /Cannot read .*index\.pkl: .*index\.pkl is a FIFO, not a regular file/,
    );
    assert.match(err.hint ?? '', /restore it from a restore point/);
    assert.ok(Date.now() - t0 < 5000, 'refused at once');
  });

  it('names the problem and the fix for bad store names and missing roots', async () => {
    assert.throws(
      () => openStore('agent-zero:relative/a0'),
      (e: AgentKeepError) => e.kind === 'BadStore' && /not absolute/.test(e.message),
    );
    assert.throws(
      () => openStore(`agent-zero:${root}?uri=http://x`),
      (e: AgentKeepError) =>
        e.kind === 'BadStore' && /Unknown option "uri"/.test(e.message) && /\?url=/.test(e.hint ?? ''),
    );
    await expectError(openStore(`agent-zero:${path.join(tmp, 'nope')}`).list(), 'StoreNotFound', /does not exist/);
    await expectError(openStore(`agent-zero:${tmp}`).list(), 'StoreNotFound', /no usr\/memory\/ or memory\//);
    // read-only without a URL: edit names the setting, and the pickle is untouched
    const before = await fs.readFile(pkl());
    await expectError(openStore(`agent-zero:${root}`).edit!('Xk3P9aQ2mZ', 'x'), 'Unsupported', /AGENTKEEP_A0_URL/);
    assert.deepEqual(await fs.readFile(pkl()), before);
  });

  it('edits, removes and adds through the Agent Zero API (contract stub), keeping the id; CAS refusal leaves index.pkl byte-identical', async () => {
    stub = await startA0Stub(path.join(root, 'usr', 'memory'));
    const s = openStore(`agent-zero:${root}?url=${encodeURIComponent(stub.url)}`);
    assert.equal(await s.readOnlyReason!(), undefined);
    assert.equal((await s.list())[0].readOnly, undefined);
    const h0 = await s.contentHash!();
    // stale hash: Conflict, nothing sent, file unchanged
    const before = await fs.readFile(pkl());
    await expectError(s.edit!('Xk3P9aQ2mZ', 'new', 'f'.repeat(64)), 'Conflict', /changed since it was read/);
    assert.deepEqual(await fs.readFile(pkl()), before);
    assert.equal(stub.log.length, 0);
    await expectError(s.edit!('nope', 'x', h0), 'EntryNotFound', /No Agent Zero memory with id nope/);

    const r = await s.edit!('Xk3P9aQ2mZ', "User's staging server listens for SSH on port 2200.", h0);
    assert.equal(r.entry.id, 'Xk3P9aQ2mZ');
    assert.equal(r.entry.text, "User's staging server listens for SSH on port 2200.");
    assert.equal(r.entry.createdAt, '2026-01-01T10:15:42.000Z', 'metadata (timestamp) kept');
    assert.equal(r.previous.text, "User's staging server listens for SSH on port 2222 (not 22).");
    assert.notEqual(r.contentHash, h0);
    assert.equal(r.contentHash, await s.contentHash!());
    assert.deepEqual(stub.log, ['GET /api/csrf_token', 'POST /api/plugins/_memory/memory_dashboard update']);
    // the pickle Agent Zero wrote is what we read back
    assert.equal((await a0Pickle(['load', pkl()])).trim(), '4');

    const rm = await s.remove!('Q0r8TtY6uE', r.contentHash);
    assert.equal(rm.removed.text, 'User prefers concise answers and TypeScript examples.');
    assert.equal(rm.file, 'fragments');
    assert.ok(!(await s.list()).flatMap((f) => f.entries).some((e) => e.id === 'Q0r8TtY6uE'));
    // undo of the remove: add it back to its area (new id, as Agent Zero generates them)
    const ad = await s.add!(rm.removed.text, rm.file, rm.contentHash);
    assert.match(ad.entry.id, /^[A-Za-z0-9]{10}$/);
    assert.equal(ad.entry.area, 'fragments');
    assert.ok(
      (await s.list()).flatMap((f) => f.entries).some((e) => e.id === ad.entry.id && e.text === rm.removed.text),
    );
    // removed already: EntryNotFound, no request sent
    const n = stub.log.length;
    await expectError(s.remove!('Q0r8TtY6uE'), 'EntryNotFound');
    assert.equal(stub.log.length, n);
  });

  it('logs in when Agent Zero has AUTH_LOGIN, refuses with AuthFailed otherwise; falls back to the older routes', async () => {
    stub = await startA0Stub(path.join(root, 'usr', 'memory'), { user: 'dana', password: 's3cret' });
    const url = stub.url;
    const before = await fs.readFile(pkl());
    await expectError(
      new AgentZeroStore(root, undefined, { url }).remove!('Xk3P9aQ2mZ'),
      'AuthFailed',
      /set AGENTKEEP_A0_USER and AGENTKEEP_A0_PASSWORD/,
    );
    await expectError(
      new AgentZeroStore(root, undefined, { url, credentials: { user: 'dana', password: 'wrong' } }).remove!(
        'Xk3P9aQ2mZ',
      ),
      'AuthFailed',
      /Check AGENTKEEP_A0_USER/,
    );
    assert.deepEqual(await fs.readFile(pkl()), before);
    process.env.AGENTKEEP_A0_URL = url;
    process.env.AGENTKEEP_A0_USER = 'dana';
    process.env.AGENTKEEP_A0_PASSWORD = 's3cret';
    const r = await openStore(`agent-zero:${root}`).remove!('Xk3P9aQ2mZ');
    assert.equal(r.removed.id, 'Xk3P9aQ2mZ');
    await stub.close();

    delete process.env.AGENTKEEP_A0_USER;
    delete process.env.AGENTKEEP_A0_PASSWORD;
    stub = await startA0Stub(path.join(root, 'usr', 'memory'), undefined, true);
    const e = await new AgentZeroStore(root, undefined, { url: stub.url }).edit!('b7Lq2Wv0cN', 'Use nvm.');
    assert.equal(e.entry.text, 'Use nvm.');
    assert.deepEqual(stub.log, ['GET /csrf_token', 'POST /memory_dashboard update']);
  });

  it('refuses when the URL belongs to another instance (the API reports success but the root does not change)', async () => {
    const other = path.join(tmp, 'other');
    await fs.cp(path.join(root, 'usr', 'memory'), other, { recursive: true });
    stub = await startA0Stub(other);
    await expectError(
      new AgentZeroStore(root, undefined, { url: stub.url }).edit!('Xk3P9aQ2mZ', 'x'),
      'Conflict',
      /another Agent Zero instance/,
    );
    await expectError(
      new AgentZeroStore(root, undefined, { url: 'http://127.0.0.1:9' }).edit!('Xk3P9aQ2mZ', 'x'),
      'Internal',
      /Cannot reach Agent Zero/,
    );
  });

  it('lists through the core and the real CLI (agentkeep memory list --store agent-zero:... --json)', async () => {
    const spec = `agent-zero:${root}`;
    const core = new Core({ stateDir: path.join(tmp, 'state') });
    const r = await core.listMemory({ stores: [spec] });
    assert.equal(r.stores.flatMap((f) => f.entries).length, 4);
    assert.ok(r.stores.every((f) => f.store === spec));
    await buildSidecar();
    const cli = await runSidecar(['--state-dir', path.join(tmp, 'state'), 'memory', 'list', '--store', spec, '--json']);
    assert.equal(cli.code, 0, cli.stderr);
    const j = JSON.parse(cli.stdout) as {
      stores: Array<{ kind: string; entries: Array<{ id: string; area: string }> }>;
    };
    assert.deepEqual(
      j.stores.map((f) => f.kind),
      ['agent-zero-main', 'agent-zero-fragments', 'agent-zero-solutions'],
    );
    assert.deepEqual(j.stores.flatMap((f) => f.entries.map((e) => e.id)).sort(), [
      'Q0r8TtY6uE',
      'Xk3P9aQ2mZ',
      'b7Lq2Wv0cN',
      'kN5sH1jD3f',
    ]);
    // read-only without a URL: edit exits non-zero, names the setting, leaves index.pkl byte-identical
    const before = await fs.readFile(pkl());
    const ro = await runSidecar([
      '--state-dir',
      path.join(tmp, 'state'),
      'memory',
      'edit',
      '--store',
      spec,
      '--entry',
      'Xk3P',
      '--text',
      'x',
      '--json',
    ]);
    assert.notEqual(ro.code, 0);
    assert.match(ro.stdout + ro.stderr, /AGENTKEEP_A0_URL/);
    assert.deepEqual(await fs.readFile(pkl()), before);
    // with AGENTKEEP_A0_URL: the edit goes through the (stub) API
    stub = await startA0Stub(path.join(root, 'usr', 'memory'));
    const ok = await runSidecar(
      [
        '--state-dir',
        path.join(tmp, 'state'),
        'memory',
        'edit',
        '--store',
        spec,
        '--entry',
        'Xk3P',
        '--text',
        'SSH on 2200.',
        '--json',
      ],
      { AGENTKEEP_A0_URL: stub.url },
    );
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal((JSON.parse(ok.stdout) as { entry: { id: string; text: string } }).entry.text, 'SSH on 2200.');
    assert.deepEqual(stub.log, ['GET /api/csrf_token', 'POST /api/plugins/_memory/memory_dashboard update']);
  });

  it('through the core: show (prefix id), edit with a backup of index.pkl, and diff against a restore point', async () => {
    stub = await startA0Stub(path.join(root, 'usr', 'memory'));
    const state = path.join(tmp, 'state');
    const core = new Core({ stateDir: state });
    const spec = `agent-zero:${root}?url=${encodeURIComponent(stub.url)}`;
    const rp = await core.createRestorePoint({ target: `dir:${root}`, stores: [spec], label: 'before' });
    assert.deepEqual(rp.agent[0].files.map((f) => f.path).sort(), [
      'usr/memory/default/embedding.json',
      'usr/memory/default/index.faiss',
      'usr/memory/default/index.pkl',
      'usr/memory/default/knowledge_import.json',
    ]);
    const shown = await core.showMemory({ stores: [spec], entry: 'xk3p' });
    assert.equal(shown.entry.id, 'Xk3P9aQ2mZ');
    assert.deepEqual(
      shown.provenance.traces.map((t) => t.action),
      ['add'],
    );
    const before = await fs.readFile(pkl());
    const ed = await core.editMemory({
      store: spec,
      entry: 'Xk3P9aQ2mZ',
      text: 'Staging SSH is on port 2200.',
      expectedHash: shown.contentHash,
    });
    assert.equal(ed.entry.id, 'Xk3P9aQ2mZ');
    assert.deepEqual(ed.undo, {
      store: spec,
      entry: 'Xk3P9aQ2mZ',
      text: "User's staging server listens for SSH on port 2222 (not 22).",
    });
    // the core kept the replaced index.pkl bytes
    const bdir = path.join(state, 'memory-backups');
    const backups = (await fs.readdir(bdir, { recursive: true })).map(String).filter((f) => f.endsWith('index.pkl'));
    assert.equal(backups.length, 1);
    assert.deepEqual(await fs.readFile(path.join(bdir, backups[0])), before);
    const d = await core.diffMemory({ target: `dir:${root}`, from: rp.id });
    assert.deepEqual(
      d.changed.map((c) => [c.before?.id, c.before?.text, c.after?.text]),
      [['Xk3P9aQ2mZ', "User's staging server listens for SSH on port 2222 (not 22).", 'Staging SSH is on port 2200.']],
    );
    assert.deepEqual([d.added.length, d.removed.length], [0, 0]);
  });

  it('captures index.pkl untorn: a half-written pickle is retried until Agent Zero finished writing it', async () => {
    const s = openStore(`agent-zero:${root}`);
    const full = await fs.readFile(pkl());
    await fs.writeFile(pkl(), full.subarray(0, Math.floor(full.length / 2))); // save_local in progress
    const dest = path.join(tmp, 'cap.pkl');
    const finish = new Promise<void>((r) => setTimeout(() => void fs.writeFile(pkl(), full).then(() => r()), 60));
    assert.equal(await s.captureFile!('usr/memory/default/index.pkl', dest), true);
    await finish;
    assert.deepEqual(await fs.readFile(dest), full);
    // a pickle that stays damaged is captured as it is (the restore point keeps what is there)
    await fs.writeFile(pkl(), 'damaged');
    assert.equal(await s.captureFile!('usr/memory/default/index.pkl', dest), true);
    assert.equal(await fs.readFile(dest, 'utf8'), 'damaged');
  });

  it('reads Agent Zero timestamps as UTC and rejects junk', () => {
    assert.equal(a0TimeToIso('2026-01-02 09:01:13'), '2026-01-02T09:01:13.000Z');
    assert.equal(a0TimeToIso('yesterday'), undefined);
    assert.equal(a0TimeToIso(undefined), undefined);
  });
});
