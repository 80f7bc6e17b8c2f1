/**
 * agent.status reports a broken store as broken (issue 13 #5), never as `ok`: per store which file is
 * broken, what, the fix, and whether the rest can be read; from one memory.list read and one history
 * read (no lint). Real files: copies of the fixtures, MEMORY.md made a directory, real damaged SQLite
 * pages; the core in-process, and `agentkeep agent status` through the real CLI bundle.
 */
import * as assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import type { ResultOf } from '../../sidecar/protocol';
import { damagePages } from './helpers/damage';
import { copyFixture } from './helpers/hermes-db';
import { FIXTURES } from './helpers/paths';
import { buildSidecar, cliRunner } from './helpers/sidecar';

type StoreStatus = ResultOf<'agentStatus'>['stores'][number];

describe('agent.status: broken stores (real files)', function () {
  this.timeout(60000);
  let tmp: string;
  let home: string;
  let core: Core;
  const hermes = (): string => `hermes:${home}`;
  const mem = (): string => path.join(home, 'memories', 'MEMORY.md');
  const statusOf = async (...stores: string[]): Promise<StoreStatus[]> =>
    (await core.agentStatus({ target: `dir:${tmp}`, stores })).stores;

  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join('/var/tmp', 'ak-status-broken-')); // not under /tmp: no mem0 durability notes
    home = path.join(tmp, 'hermes');
    await copyFixture(path.join(FIXTURES, 'memory', 'hermes'), home);
    core = new Core({ stateDir: path.join(tmp, 'state') });
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('a healthy store is ok with no `broken`; a missing one is not ok and not called broken', async () => {
    const [ok, missing] = await statusOf(hermes(), `hermes:${tmp}/nope`);
    assert.equal(ok.ok, true);
    assert.equal(ok.broken, undefined);
    assert.equal(ok.message, undefined);
    assert.equal(missing.ok, false);
    assert.equal(missing.broken, undefined, 'a store that does not exist is missing, not broken');
    assert.match(missing.message ?? '', /does not exist/);
  });

  it('MEMORY.md that is a directory: not ok, broken (file, what, fix), the rest readable', async () => {
    await fs.rm(mem());
    await fs.mkdir(mem());
    await fs.writeFile(path.join(mem(), 'stray.txt'), 'not an entry');
    const [st] = await statusOf(hermes());
    assert.equal(st.ok, false);
    assert.ok(st.broken, JSON.stringify(st));
    assert.equal(st.broken.readable, 'partial', 'USER.md is still readable');
    assert.equal(st.broken.parts.length, 1, JSON.stringify(st.broken));
    const [p] = st.broken.parts;
    assert.equal(p.part, 'entries');
    assert.equal(p.file, mem());
    assert.equal(p.kind, 'hermes-memory');
    assert.equal(p.entries, 0, 'its entries are unknown');
    assert.equal(p.code, 'file_error');
    assert.match(p.message, /is a directory, not a file/);
    assert.match(p.hint ?? '', /mv .*MEMORY\.md/);
    assert.ok(st.message?.includes(mem()), st.message);
    assert.equal(st.description?.kind, 'hermes', 'the description stays');
  });

  it('state.db with a damaged middle: the history part (state.db, .recover fix), entries readable', async () => {
    const db = path.join(home, 'state.db');
    await damagePages(db, 3, 7);
    const [st] = await statusOf(hermes());
    assert.equal(st.ok, false);
    assert.equal(st.broken?.readable, 'partial');
    assert.deepEqual(
      st.broken?.parts.map((p) => [p.part, p.file]),
      [['history', db]],
    );
    const [p] = st.broken!.parts;
    assert.match(p.message, /state\.db is damaged: database disk image is malformed/);
    assert.match(p.hint ?? '', /sqlite3 .*state\.db "\.recover"/);
  });

  it('every file broken: readable none; several parts are all listed, memory files first', async () => {
    for (const f of ['MEMORY.md', 'USER.md']) {
      await fs.rm(path.join(home, 'memories', f));
      await fs.mkdir(path.join(home, 'memories', f));
    }
    await fs.rm(path.join(home, 'skills'), { recursive: true });
    await damagePages(path.join(home, 'state.db'), 3, 7);
    const [st] = await statusOf(hermes());
    assert.equal(st.ok, false);
    assert.equal(st.broken?.readable, 'none', JSON.stringify(st.broken));
    assert.deepEqual(
      st.broken?.parts.map((p) => p.part),
      ['entries', 'history'],
    );
    assert.match(st.message ?? '', /^Nothing in this store can be read: .*is a directory.* \(and 1 more\)$/);
  });

  it('Agent Zero index.faiss missing: one part for the subdir, with the entries still readable', async () => {
    const root = path.join(tmp, 'a0');
    await fs.cp(path.join(FIXTURES, 'memory', 'agent-zero'), root, { recursive: true });
    await fs.rm(path.join(root, 'usr', 'memory', 'default', 'index.faiss'));
    const [st] = await statusOf(`agent-zero:${root}`);
    assert.equal(st.ok, false);
    assert.equal(st.broken?.readable, 'partial');
    assert.equal(st.broken?.parts.length, 1, 'the subdir once, not once per area file');
    assert.equal(st.broken?.parts[0].entries, 4, 'the texts in index.pkl are still read');
    assert.match(st.broken?.parts[0].message ?? '', /index\.faiss is missing/);
  });

  it('mem0: damaged history.db with Qdrant entries: the history part; without Qdrant: nothing readable', async () => {
    const dir = path.join(tmp, '.mem0');
    await fs.cp(path.join(FIXTURES, 'memory', 'mem0'), dir, { recursive: true });
    const db = path.join(dir, 'history.db');
    await damagePages(db, 1, 2);
    let [st] = await statusOf(`mem0:${dir}`);
    assert.equal(st.broken?.readable, 'partial');
    assert.deepEqual(
      st.broken?.parts.map((p) => [p.part, p.file]),
      [['history', db]],
    );
    await fs.rm(path.join(dir, 'qdrant'), { recursive: true });
    [st] = await statusOf(`mem0:${dir}`);
    assert.equal(st.broken?.readable, 'none');
    assert.equal(st.broken?.parts.length, 1, 'history.db holds the entries: one problem, said once');
    assert.equal(st.broken?.parts[0].file, db, 'with its file');
    assert.match(st.broken?.parts[0].message ?? '', /history\.db is damaged/);
  });

  describe('agentkeep agent status (real CLI)', () => {
    const { ak, json } = cliRunner(() => path.join(tmp, 'state'));
    before(() => buildSidecar());

    it('prints ok, or BROKEN with the file, what and the fix; --json is the agent.status result', async () => {
      let text = (await ak('agent', 'status', '--target', `dir:${tmp}`, '--store', hermes())).stdout;
      assert.match(text, new RegExp(`store ${hermes().replace(/[/.]/g, '\\$&')}: ok`));
      await fs.rm(mem());
      await fs.mkdir(mem());
      await fs.writeFile(path.join(mem(), 'stray.txt'), 'x');
      const r = await ak('agent', 'status', '--target', `dir:${tmp}`, '--store', hermes());
      assert.equal(r.code, 0, r.stderr);
      text = r.stdout;
      assert.match(text, /store hermes:.*: BROKEN \(the rest is readable; writes to the broken files refused\)/);
      assert.ok(text.includes(`\n    error (entries unknown): ${mem()} is a directory, not a file`), text);
      assert.match(text, /\n {6}fix: Move it away/);
      assert.doesNotMatch(text, /: ok\b/);
      const j = await json('agent', 'status', '--target', `dir:${tmp}`, '--store', hermes());
      assert.equal(j.stores[0].ok, false);
      assert.equal(j.stores[0].broken.parts[0].file, mem());
    });
  });
});
