/**
 * Broken stores are reported as broken, never as empty or clean, and never written (issue 13 #5):
 * Hermes MEMORY.md that is a directory, a dangling symlink or not valid UTF-8, a state.db with a
 * damaged middle; Agent Zero index.pkl / index.faiss / embedding.json missing or damaged; mem0
 * history.db and Qdrant storage.sqlite damaged. Real files (copies of the fixtures, real SQLite read
 * through node-sqlite3-wasm, real damaged bytes), through the real CLI bundle where a user would
 * meet them.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Database } from 'node-sqlite3-wasm';
import { createHash } from 'node:crypto';
import { firstInvalidUtf8 } from '../../sidecar/memory/broken';
import { AgentZeroStore } from '../../sidecar/memory/agent-zero';
import { buildSidecar, cliRunner } from './helpers/sidecar';
import { startA0Stub, type A0Stub } from './helpers/agent-zero-stub';
import { expectAgentKeepError } from './helpers/errors';
import { copyFixture, hashTree } from './helpers/hermes-db';
import { damagePages } from './helpers/damage';
import { FIXTURES } from './helpers/paths';

const HERMES = path.join(FIXTURES, 'memory', 'hermes');

/** What node-sqlite3-wasm's PRAGMA integrity_check says about a database: "ok", or the damage it found. */
function integrity(file: string): string {
  const db = new Database(file, { readOnly: true, fileMustExist: true });
  try {
    return String((db.get('PRAGMA integrity_check') as { integrity_check: unknown }).integrity_check);
  } catch (e) {
    return (e as Error).message;
  } finally {
    db.close();
  }
}

describe('broken stores: Hermes (real files, real CLI)', function () {
  this.timeout(60000);
  let tmp: string;
  let home: string;
  let store: string;
  const { ak, json } = cliRunner(() => path.join(tmp, 'state'));
  const mem = (): string => path.join(home, 'memories', 'MEMORY.md');
  const errOf = (r: { stdout: string; stderr: string }): { code: string; message: string; hint?: string } =>
    JSON.parse(r.stdout || r.stderr).error;

  before(() => buildSidecar());
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-broken-'));
    home = path.join(tmp, 'hermes');
    await copyFixture(HERMES, home);
    store = `hermes:${home}`;
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('MEMORY.md that is a directory: broken (path, fix) in list/lint/show; add refused; USER.md works', async () => {
    await fs.rm(mem());
    await fs.mkdir(mem());
    await fs.writeFile(path.join(mem(), 'stray.txt'), 'not an entry');
    const files = (await json('memory', 'list', '--store', store)).stores;
    const m = files.find((f: any) => f.kind === 'hermes-memory');
    assert.deepEqual(m.entries, []);
    assert.equal(m.usage, undefined, 'no "0/2200 chars": the usage is unknown');
    assert.equal(m.broken.code, 'file_error');
    assert.ok(m.broken.message.includes(mem()), m.broken.message);
    assert.match(m.broken.message, /is a directory, not a file/);
    assert.match(m.broken.hint, /mv .*MEMORY\.md .*MEMORY\.md\.dir/);
    const listed = await ak('memory', 'list', '--store', store);
    assert.equal(listed.code, 1, 'a broken file: the listing is printed and the exit code says broken');
    const text = listed.stdout;
    assert.match(text, /MEMORY\.md \(hermes-memory\): BROKEN \(entries unknown; writes refused\)/);
    assert.doesNotMatch(text, /MEMORY\.md \(hermes-memory\): 0 entries/);
    assert.match(text, /\n {2}fix: Move it away/);

    const before = await hashTree(home);
    const add = await ak('memory', 'add', '--store', store, '--text', 'A new fact.', '--json');
    assert.equal(add.code, 1, add.stdout + add.stderr);
    assert.equal(errOf(add).code, 'file_error');
    assert.match(errOf(add).message, /is a directory, not a file/);
    assert.deepEqual(await hashTree(home), before, 'nothing written');
    assert.deepEqual(
      await fs.readdir(path.join(home, 'memories')).then((n) => n.filter((x) => x.includes('ak-tmp'))),
      [],
      'no temp file left',
    );

    const lint = (await json('memory', 'lint', '--store', store)).findings;
    const broken = lint.find((f: any) => f.kind === 'store' && f.severity === 'error');
    assert.ok(broken, JSON.stringify(lint));
    assert.match(
      broken.message,
      /MEMORY\.md is broken, so its entries could not be read or checked \(the file is not empty\)/,
    );
    assert.deepEqual(broken.evidence, [mem()]);
    assert.match(broken.suggestion, /mv /);
    assert.equal(
      lint.filter((f: any) => f.message.includes('is a directory')).length,
      1,
      'said once, not again as a warning',
    );

    // the other file of the home is not affected: shown and editable
    const user = files.find((f: any) => f.kind === 'hermes-user');
    assert.ok(user.entries.length > 0 && !user.broken);
    const shown = await json('memory', 'show', '--store', store, '--entry', user.entries[0].id);
    assert.equal(shown.entry.text, user.entries[0].text);
    await json('memory', 'add', '--store', store, '--file', 'user', '--text', 'Works on weekends.');
    assert.match(await fs.readFile(path.join(home, 'memories', 'USER.md'), 'utf8'), /\n§\nWorks on weekends\.$/);
  });

  it('MEMORY.md that is a dangling symlink: broken, and add does not replace the link', async () => {
    await fs.rm(mem());
    await fs.symlink(path.join(tmp, 'gone', 'MEMORY.md'), mem());
    const m = (await json('memory', 'list', '--store', store)).stores.find((f: any) => f.kind === 'hermes-memory');
    assert.match(m.broken.message, /is a symbolic link to .*gone\/MEMORY\.md, which does not exist/);
    const add = await ak('memory', 'add', '--store', store, '--text', 'A new fact.', '--json');
    assert.equal(add.code, 1);
    assert.ok((await fs.lstat(mem())).isSymbolicLink(), 'the link is still a link');
  });

  it('MEMORY.md with invalid UTF-8: broken with the byte offset; adds refused, the bytes never rewritten', async () => {
    const good = Buffer.from('Staging listens on port 2222.\n§\nUses pnpm, not npm.\n§\nCaf', 'utf8');
    const raw = Buffer.concat([
      good,
      Buffer.from([0xe9]),
      Buffer.from(' au lait every morning (Latin-1 byte).', 'utf8'),
    ]);
    await fs.writeFile(mem(), raw);
    // what Hermes' reader does with it: Python's strict utf-8 decoder fails at the same offset
    const py = execFileSync('python3', [
      '-c',
      'import sys\ntry:\n  open(sys.argv[1], encoding="utf-8").read()\n' +
        'except UnicodeDecodeError as e:\n  print(e.start)',
      mem(),
    ])
      .toString()
      .trim();
    assert.equal(py, String(good.length));

    const m = (await json('memory', 'list', '--store', store)).stores.find((f: any) => f.kind === 'hermes-memory');
    assert.deepEqual(m.entries, [], 'no entries decoded with U+FFFD');
    assert.match(
      m.broken.message,
      new RegExp(
        `is not valid UTF-8: the first bad byte sequence is at byte offset ${good.length} ` +
          '\\(line 5, bytes e9 20 61 75\\)',
      ),
    );
    assert.match(m.broken.message, /Hermes reads this file as strict UTF-8/);
    assert.match(m.broken.hint, /iconv -f UTF-8 -t UTF-8 /);
    assert.doesNotMatch(JSON.stringify(m), /\uFFFD/);

    for (const args of [
      ['memory', 'add', '--store', store, '--text', 'One more fact.'],
      ['memory', 'add', '--store', store, '--file', 'memory', '--text', 'Another fact.'],
    ]) {
      const r = await ak(...args, '--json');
      assert.equal(r.code, 1, r.stdout + r.stderr);
      assert.match(errOf(r).message, /not valid UTF-8/);
      assert.equal(errOf(r).code, 'file_error');
    }
    assert.deepEqual(await fs.readFile(mem()), raw, 'byte-identical: no U+FFFD written back');
    assert.deepEqual(
      (await fs.readdir(path.join(home, 'memories'))).filter((n) => n.startsWith('MEMORY.md.bak')),
      [],
      'no drift backup either',
    );

    const lint = (await json('memory', 'lint', '--store', store)).findings;
    assert.ok(
      lint.some(
        (f: any) =>
          f.kind === 'store' && f.severity === 'error' && /MEMORY\.md is broken.*not valid UTF-8/.test(f.message),
      ),
      JSON.stringify(lint),
    );
    assert.ok(!lint.some((f: any) => f.kind === 'drift'), 'the bad bytes are not reported as a drift of U+FFFD text');
  });

  it('memory diff leaves a broken file out instead of calling its entries removed, and says so', async () => {
    const rp = await json('restore-point', 'create', '--target', `dir:${home}`, '--store', store, '--label', 'before');
    const raw = Buffer.concat([await fs.readFile(mem()), Buffer.from([0xc3, 0x28])]);
    await fs.writeFile(mem(), raw);
    const d = await json('memory', 'diff', '--target', `dir:${home}`, '--store', store, '--from', rp.id);
    assert.deepEqual(d.removed, [], 'the entries of the broken MEMORY.md are not "removed"');
    assert.equal(d.warnings.length, 1, JSON.stringify(d.warnings));
    assert.match(d.warnings[0], /MEMORY\.md is broken \(now\), so its entries were not compared: .*not valid UTF-8/);
    const text = (await ak('memory', 'diff', '--target', `dir:${home}`, '--store', store, '--from', rp.id)).stdout;
    assert.match(text, /warning: .*MEMORY\.md is broken \(now\)/);
    assert.match(text, /No entry changed in the files compared\./);
    assert.deepEqual(await fs.readFile(mem()), raw);
  });

  it('state.db with a damaged middle: lint keeps findings not needing provenance, says what did not run', async () => {
    const intact = (await json('memory', 'lint', '--store', store)).findings;
    const db = path.join(home, 'state.db');
    await damagePages(db, 3, 7);
    assert.match(
      integrity(db),
      /error code 11|malformed/,
      'the copy is really damaged for SQLite (11 = SQLITE_CORRUPT)',
    );
    const damaged = (await json('memory', 'lint', '--store', store)).findings;

    const needsHistory = (f: any): boolean => f.kind === 'untraceable' || f.kind === 'age';
    assert.ok(intact.filter(needsHistory).length >= 2, 'the intact store has findings that need state.db');
    const historyError = damaged.filter((f: any) => f.kind === 'store' && f.severity === 'error');
    assert.equal(historyError.length, 1, JSON.stringify(damaged));
    const h = historyError[0];
    assert.ok(h.message.includes(db), h.message);
    assert.match(h.message, /state\.db is damaged: database disk image is malformed/);
    assert.match(h.message, /Provenance is unavailable for \d+ entries/);
    assert.match(h.message, /did not run for them: untraceable .*; age of MEMORY\.md and USER\.md entries/);
    assert.match(h.suggestion, /sqlite3 .*state\.db "\.recover" \| sqlite3 .*state\.db\.recovered/);
    assert.match(h.suggestion, /restore the store from a restore point \(scope agent\)/);
    // everything that does not depend on provenance is still there, unchanged
    assert.deepEqual(
      damaged.filter((f: any) => f !== h),
      intact.filter((f: any) => !needsHistory(f)),
    );
    assert.equal(
      damaged.filter(needsHistory).length,
      0,
      'no entry is called untraceable on a history that could not be read',
    );

    const id = (await json('memory', 'list', '--store', store)).stores[0].entries[0].id;
    const shown = await ak('memory', 'show', '--store', store, '--entry', id, '--json');
    assert.equal(shown.code, 0, shown.stdout + shown.stderr);
    const s = JSON.parse(shown.stdout);
    assert.deepEqual(s.provenance.traces, []);
    assert.equal(s.provenance.unavailable.code, 'file_error');
    assert.ok(s.provenance.unavailable.message.includes(db));
    assert.match(s.provenance.unavailable.hint, /\.recover/);
    assert.match(
      s.provenance.note,
      /Provenance unavailable: .*Which session wrote this entry is unknown \(not "edited by hand"\)/,
    );
    assert.ok(
      s.file.warnings.some((w: string) => w.includes(db) && /Fix: .*\.recover/.test(w)),
      JSON.stringify(s.file.warnings),
    );
    const text = (await ak('memory', 'show', '--store', store, '--entry', id)).stdout;
    assert.match(text, /warning: Provenance unavailable: SQLite database .*state\.db is damaged/);
    assert.doesNotMatch(text, /probably edited by hand/);

    // what needs the history and cannot do without it fails with the file and the fix, never "internal"
    const rp = await json('restore-point', 'create', '--target', `dir:${home}`, '--store', store, '--label', 'before');
    const diff = await ak('memory', 'diff', '--target', `dir:${home}`, '--store', store, '--from', rp.id, '--json');
    assert.equal(diff.code, 1, diff.stdout + diff.stderr);
    assert.equal(errOf(diff).code, 'file_error');
    assert.ok(errOf(diff).message.includes(db));
    assert.match(errOf(diff).hint ?? '', /\.recover/);
  });
});

describe('broken stores: a damaged page no query reads (real SQLite)', function () {
  this.timeout(60_000);
  let tmp: string;
  let home: string;
  const { ak } = cliRunner(() => path.join(tmp, 'state'));
  before(() => buildSidecar());
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-broken-page-'));
    home = path.join(tmp, 'hermes');
    await copyFixture(HERMES, home);
  });
  afterEach(() => fs.rm(tmp, { recursive: true, force: true }));

  it('random bytes in one page of state.db: lint reports it damaged, never a clean history', async () => {
    const db = path.join(home, 'state.db');
    const buf = await fs.readFile(db);
    for (let i = 0; i < 3000; i++) buf[24576 + i] = (i * 131 + 7) & 0xff; // page 6 only (QA: seek=24576)
    await fs.writeFile(db, buf);
    assert.match(integrity(db), /error code 11|malformed|Page|Tree|\*\*\*/, 'SQLite itself calls it damaged');
    const r = await ak('memory', 'lint', '--store', `hermes:${home}`, '--json');
    assert.equal(r.code, 1, 'an error finding exits 1, like a linter');
    const findings = JSON.parse(r.stdout).findings;
    const err = findings.find((f: any) => f.kind === 'store' && f.severity === 'error');
    assert.ok(err, JSON.stringify(findings));
    assert.match(err.message, /state\.db is damaged: database disk image is malformed/);
  });
});

describe('broken stores: Agent Zero (real files; edits through the contract stub of its API)', function () {
  this.timeout(60000);
  let tmp: string;
  let root: string;
  let stub: A0Stub | undefined;
  const { ak, json } = cliRunner(() => path.join(tmp, 'state'));
  const dir = (): string => path.join(root, 'usr', 'memory', 'default');
  const spec = (): string => `agent-zero:${root}`;
  const subdirFiles = async (): Promise<any[]> => (await json('memory', 'list', '--store', spec())).stores;

  before(() => buildSidecar());
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-broken-a0-'));
    root = path.join(tmp, 'a0');
    await fs.cp(path.join(FIXTURES, 'memory', 'agent-zero'), root, { recursive: true });
  });
  afterEach(async () => {
    await stub?.close();
    stub = undefined;
    await fs.rm(tmp, { recursive: true, force: true });
  });

  /** The edit, remove and add the API would carry are refused before any request, and nothing changes. */
  async function refusesWrites(re: RegExp): Promise<void> {
    stub = await startA0Stub(path.join(root, 'usr', 'memory'));
    const s = new AgentZeroStore(root, undefined, { url: stub.url });
    const before = await hashTree(root);
    await expectAgentKeepError(s.edit!('Xk3P9aQ2mZ', 'changed'), 'FileError', re);
    await expectAgentKeepError(s.remove!('Xk3P9aQ2mZ'), 'FileError', re);
    await expectAgentKeepError(s.add!('A new memory.'), 'FileError', /nothing was sent to Agent Zero/);
    assert.deepEqual(stub.log, [], 'no request reached Agent Zero');
    assert.deepEqual(await hashTree(root), before);
  }

  it('index.faiss missing next to index.pkl: broken (A0 would empty it); entries shown, no writes', async () => {
    await fs.rm(path.join(dir(), 'index.faiss'));
    const files = await subdirFiles();
    assert.ok(
      files.every((f) => f.broken),
      'every area file of the subdir says it',
    );
    assert.match(
      files[0].broken.message,
      /index\.faiss is missing but index\.pkl holds the memories of "default": .*saves it over index\.pkl/,
    );
    assert.match(files[0].broken.hint, /cp -a .*default .*default\.bak/);
    assert.equal(files.flatMap((f) => f.entries).length, 4, 'the texts in index.pkl are still shown');
    const text = (await ak('memory', 'list', '--store', spec())).stdout;
    assert.match(text, /BROKEN \(\d+ entries readable; writes refused\)/);
    const lint = (await json('memory', 'lint', '--store', spec())).findings;
    assert.equal(
      lint.filter((f: any) => f.kind === 'store' && f.severity === 'error').length,
      1,
      'one finding for the subdir, not one per area',
    );
    await refusesWrites(/index\.faiss is missing/);
  });

  it('index.faiss damaged (not FAISS, truncated) or not matching index.faiss.sha256: broken, with fix', async () => {
    const faiss = path.join(dir(), 'index.faiss');
    const good = await fs.readFile(faiss);
    await fs.writeFile(faiss, good.subarray(0, 100));
    assert.match(
      (await subdirFiles())[0].broken.message,
      /index\.faiss is damaged: its header says 4 vectors of dimension 8 \(173 bytes\), but the file has 100 bytes/,
    );
    await fs.writeFile(faiss, Buffer.concat([Buffer.from('PK\x03\x04'), good.subarray(4)]));
    assert.match(
      (await subdirFiles())[0].broken.message,
      /does not start with a FAISS index type \(first bytes 504b0304\)/,
    );
    await fs.writeFile(faiss, good);
    assert.equal((await subdirFiles())[0].broken, undefined, 'the intact fixture is not broken');
    // newer Agent Zero writes index.faiss.sha256 after each save and discards a mismatching index
    await fs.writeFile(path.join(dir(), 'index.faiss.sha256'), createHash('sha256').update(good).digest('hex'));
    assert.equal((await subdirFiles())[0].broken, undefined);
    const changed = Buffer.from(good);
    changed[changed.length - 1] ^= 0xff; // one float changed: still a valid layout, but not what Agent Zero hashed
    await fs.writeFile(faiss, changed);
    const b = (await subdirFiles())[0].broken;
    assert.match(
      b.message,
      /index\.faiss does not match .*index\.faiss\.sha256: .*Agent Zero discards this index and saves an empty one/,
    );
    assert.match(b.hint, /delete the stale index\.faiss\.sha256/);
    await refusesWrites(/does not match/);
  });

  it('index.pkl missing (with index.faiss) or no pickle, bad embedding.json: broken, not "no memories"', async () => {
    const pkl = path.join(dir(), 'index.pkl');
    const saved = await fs.readFile(pkl);
    await fs.rm(pkl);
    const gone = await json('memory', 'list', '--store', spec());
    assert.match(
      gone.stores[0].broken.message,
      /index\.pkl is missing but .*index\.faiss exists: Agent Zero cannot load memory subdir "default"/,
    );
    assert.ok(!(gone.stores[0].warnings ?? []).some((w: string) => /no memories in/.test(w)), 'not called empty');
    await fs.writeFile(pkl, saved);
    await fs.writeFile(path.join(dir(), 'embedding.json'), '{"model_provider": "huggingface", ');
    const emb = (await subdirFiles())[0].broken;
    assert.match(
      emb.message,
      /embedding\.json is unreadable \(not JSON .*\): Agent Zero fails to load memory subdir "default"/,
    );
    assert.match(emb.hint, /Delete .*embedding\.json \(Agent Zero then re-embeds every memory/);
    await fs.writeFile(path.join(dir(), 'embedding.json'), '["huggingface"]');
    assert.match((await subdirFiles())[0].broken.message, /embedding\.json is not \{"model_provider"/);
    await refusesWrites(/embedding\.json/);
    // a damaged index.pkl in a second subdir: that subdir is broken, the first one is still listed
    await fs.writeFile(
      path.join(dir(), 'embedding.json'),
      '{"model_provider": "huggingface", "model_name": "sentence-transformers/all-MiniLM-L6-v2"}',
    );
    await fs.cp(dir(), path.join(root, 'usr', 'memory', 'work'), { recursive: true });
    await fs.writeFile(path.join(root, 'usr', 'memory', 'work', 'index.pkl'), saved.subarray(0, 200));
    const both = await subdirFiles();
    const work = both.filter((f) => f.file.includes('/work/'));
    assert.equal(work.length, 1);
    assert.match(work[0].broken.message, /Cannot unpickle .*work\/index\.pkl/);
    assert.deepEqual(work[0].entries, []);
    assert.ok(both.filter((f) => !f.file.includes('/work/')).every((f) => !f.broken && f.entries.length));
    // and when no subdir can be read at all, list fails with that error (kind file_error, not internal)
    await fs.rm(dir(), { recursive: true });
    const r = await ak('memory', 'list', '--store', spec(), '--json');
    assert.equal(r.code, 1);
    assert.equal(JSON.parse(r.stdout || r.stderr).error.code, 'file_error');
  });

  it('index.faiss.sha256 is agent state: restore points capture and restore it with index.faiss', async () => {
    await fs.writeFile(
      path.join(dir(), 'index.faiss.sha256'),
      createHash('sha256')
        .update(await fs.readFile(path.join(dir(), 'index.faiss')))
        .digest('hex'),
    );
    const s = new AgentZeroStore(root);
    assert.ok((await s.agentStateFiles()).includes('usr/memory/default/index.faiss.sha256'));
    assert.ok(s.isAgentStatePath('usr/memory/default/index.faiss.sha256'));
  });
});

describe('broken stores: mem0 (real SQLite, damaged pages)', function () {
  this.timeout(60000);
  let tmp: string;
  let dir: string;
  const { ak, json } = cliRunner(() => path.join(tmp, 'state'));
  const collection = (name = 'mem0'): string => path.join(dir, 'qdrant', 'collection', name, 'storage.sqlite');

  before(() => buildSidecar());
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join('/var/tmp', 'ak-broken-mem0-')); // not under /tmp: no durability warnings
    dir = path.join(tmp, '.mem0');
    await fs.cp(path.join(FIXTURES, 'memory', 'mem0'), dir, { recursive: true });
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('history.db damaged: Qdrant entries shown, warned; provenance unavailable; lint names file and fix', async () => {
    const db = path.join(dir, 'history.db');
    await damagePages(db, 1, 2);
    assert.match(integrity(db), /error code 11|malformed/);
    const list = await json('memory', 'list', '--store', `mem0:${dir}`);
    assert.equal(list.stores.length, 1);
    assert.ok(list.stores[0].entries.length > 0);
    assert.ok(
      list.stores[0].warnings.some(
        (w: string) =>
          w.includes(db) && /is damaged: database disk image is malformed\. mem0 cannot open it either/.test(w),
      ),
      JSON.stringify(list.stores[0].warnings),
    );
    const id = list.stores[0].entries[0].id;
    const shown = await json('memory', 'show', '--store', `mem0:${dir}`, '--entry', id);
    assert.equal(shown.provenance.unavailable.code, 'file_error');
    assert.match(shown.provenance.unavailable.hint, /sqlite3 .*history\.db "\.recover"/);
    const lint = (await json('memory', 'lint', '--store', `mem0:${dir}`)).findings;
    const errors = lint.filter((f: any) => f.severity === 'error');
    assert.equal(errors.length, 1, JSON.stringify(lint));
    assert.match(
      errors[0].message,
      /Provenance is unavailable for 1 entry of mem0:.*history\.db is damaged.*did not run for them: untraceable/,
    );
    assert.doesNotMatch(errors[0].message, /age of MEMORY\.md/);
    assert.ok(
      !lint.some((f: any) => f.severity === 'warning' && f.message.includes('history.db is damaged')),
      'said once',
    );
  });

  it('history.db damaged without Qdrant, or the only storage.sqlite damaged: error names file, fix', async () => {
    await damagePages(collection(), 1, 1);
    let r = await ak('memory', 'list', '--store', `mem0:${dir}`, '--json');
    assert.equal(r.code, 1);
    let err = JSON.parse(r.stdout || r.stderr).error;
    assert.equal(err.code, 'file_error');
    assert.match(
      err.message,
      /storage\.sqlite is damaged: database disk image is malformed\. .*cannot load collection "mem0"/,
    );
    assert.match(err.hint, /\.recover/);
    await fs.rm(path.join(dir, 'qdrant'), { recursive: true });
    await damagePages(path.join(dir, 'history.db'), 1, 2);
    r = await ak('memory', 'list', '--store', `mem0:${dir}`, '--json');
    assert.equal(r.code, 1);
    err = JSON.parse(r.stdout || r.stderr).error;
    assert.match(err.message, /history\.db is damaged/);
  });

  it('one damaged collection among two: listed as broken (not empty), the other one as usual', async () => {
    await fs.cp(path.dirname(collection()), path.dirname(collection('work')), { recursive: true });
    await damagePages(collection('work'), 1, 1);
    const files = (await json('memory', 'list', '--store', `mem0:${dir}`)).stores;
    const work = files.find((f: any) => f.file === collection('work'));
    assert.deepEqual(work.entries, []);
    assert.match(work.broken.message, /collection "work"/);
    const ok = files.find((f: any) => f.file === collection());
    assert.ok(ok.entries.length > 0 && !ok.broken);
    const text = (await ak('memory', 'list', '--store', `mem0:${dir}`)).stdout;
    assert.match(text, /work\/storage\.sqlite \(mem0\): BROKEN \(entries unknown; writes refused\)/);
    const lint = (await json('memory', 'lint', '--store', `mem0:${dir}`)).findings;
    assert.ok(
      lint.some(
        (f: any) => f.kind === 'store' && f.severity === 'error' && /storage\.sqlite is broken/.test(f.message),
      ),
    );
  });
});

describe("firstInvalidUtf8 (what Python's strict utf-8 codec rejects)", () => {
  it('finds the first ill-formed sequence: stray continuation, overlong, surrogate, above U+10FFFF, truncated', () => {
    const at = (...b: number[]): number | undefined => firstInvalidUtf8(Uint8Array.from(b));
    assert.equal(at(0x61, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80), undefined, 'a é € 😀');
    assert.equal(at(0x61, 0x80), 1);
    assert.equal(at(0xc0, 0x80), 0);
    assert.equal(at(0x61, 0xe0, 0x80, 0x80), 1);
    assert.equal(at(0xed, 0xa0, 0x80), 0);
    assert.equal(at(0xf4, 0x90, 0x80, 0x80), 0);
    assert.equal(at(0x61, 0x62, 0xe2, 0x82), 2);
    assert.equal(at(0xff), 0);
    for (const bytes of [
      [0x61, 0x80],
      [0xc0, 0x80],
      [0xed, 0xa0, 0x80],
      [0xf4, 0x90, 0x80, 0x80],
      [0x61, 0x62, 0xe2, 0x82],
    ]) {
      const py = execFileSync('python3', [
        '-c',
        'import sys\ntry:\n  bytes.fromhex(sys.argv[1]).decode("utf-8")\n' +
          'except UnicodeDecodeError as e:\n  print(e.start)',
        Buffer.from(bytes).toString('hex'),
      ])
        .toString()
        .trim();
      assert.equal(String(firstInvalidUtf8(Uint8Array.from(bytes))), py, Buffer.from(bytes).toString('hex'));
    }
  });
});
