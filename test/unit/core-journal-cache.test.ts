/**
 * The journal's in-process cache of parsed entries (sidecar/core/journal.ts readEntry): an entry is
 * served from it only while its file is unchanged (size, mtime, ctime, inode), so an entry another
 * process rewrote, damaged or removed is read again; what callers get is their own copy.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { Journal } from '../../sidecar/core/journal';
import { tempSetup } from './dir-fixtures';

describe('core: journal entry cache', function () {
  this.timeout(20_000);
  let s: ReturnType<typeof tempSetup>;
  let core: Core;

  beforeEach(() => {
    s = tempSetup('ak-jcache-');
    core = new Core({ stateDir: s.state });
    fs.writeFileSync(path.join(s.tree, 'a.txt'), 'a\n');
  });
  afterEach(() => s.cleanup());

  /** The journal of the test's target, and the file of entry `id`, made old enough to be cached. */
  async function journalWith(id: string): Promise<{ journal: Journal; file: string }> {
    const dir = path.join(s.state, 'journal');
    const [key] = fs.readdirSync(dir);
    const journal = new Journal(path.join(dir, key), s.target);
    const file = path.join(dir, key, `${id}.json`);
    const old = new Date(Date.now() - 60_000);
    fs.utimesSync(file, old, old);
    await new Promise((r) => setTimeout(r, 1100)); // its ctime too older than the cache's racy window (1 s)
    assert.equal((await journal.get(id)).id, id); // read once: cached from here on
    return { journal, file };
  }

  it('re-reads an entry rewritten in place with the same size and mtime (its ctime changed)', async () => {
    const rp = await core.createRestorePoint({ target: s.target, stores: [], label: 'AAAA' });
    const { journal, file } = await journalWith(rp.id);
    const st = fs.statSync(file);
    const text = fs.readFileSync(file, 'utf8');
    assert.ok(text.includes('"AAAA"'));
    await new Promise((r) => setTimeout(r, 20)); // a later ctime even on a coarse clock
    fs.writeFileSync(file, text.replace('"AAAA"', '"BBBB"')); // same inode, same size
    fs.utimesSync(file, st.atime, st.mtime);
    assert.equal(fs.statSync(file).size, st.size);
    assert.equal(fs.statSync(file).mtimeMs, st.mtimeMs);
    assert.equal((await journal.get(rp.id)).label, 'BBBB');
    assert.equal((await journal.list()).find((r) => r.id === rp.id)?.label, 'BBBB');
  });

  it('an entry replaced, damaged or removed after it was cached is read again', async () => {
    const rp = await core.createRestorePoint({ target: s.target, stores: [], label: 'first' });
    const { journal, file } = await journalWith(rp.id);
    // replaced (a new file renamed over it, as another process's put does), then backdated
    const tmp = `${file}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify({ ...(await journal.get(rp.id)), label: 'second' }));
    fs.renameSync(tmp, file);
    const old = new Date(Date.now() - 60_000);
    fs.utimesSync(file, old, old);
    assert.equal((await journal.get(rp.id)).label, 'second');
    // damaged
    fs.writeFileSync(file, '{ not json');
    await assert.rejects(journal.get(rp.id), (e: Error & { kind?: string }) => e.kind === 'CorruptSnapshot');
    assert.deepEqual(
      (await journal.list()).map((r) => r.id),
      [],
    );
    assert.equal((await journal.damaged()).length, 1);
    // removed
    fs.rmSync(file);
    await assert.rejects(journal.get(rp.id), (e: Error & { kind?: string }) => e.kind === 'RestorePointNotFound');
  });

  it('callers get their own copy: changing a listed entry does not change the next read', async () => {
    const rp = await core.createRestorePoint({ target: s.target, stores: [], label: 'mine' });
    const { journal } = await journalWith(rp.id);
    const got = await journal.get(rp.id);
    got.label = 'changed by a caller';
    got.machine.files = -1;
    const [listed] = await journal.list();
    listed.label = 'changed too';
    const again = await journal.get(rp.id);
    assert.equal(again.label, 'mine');
    assert.equal(again.machine.files, rp.machine.files);
  });

  it('an entry too new for its times to be trusted: its parse is reused only while its text is the same', async () => {
    const rp = await core.createRestorePoint({ target: s.target, stores: [], label: 'CCCC' });
    const dir = path.join(s.state, 'journal');
    const [key] = fs.readdirSync(dir);
    const journal = new Journal(path.join(dir, key), s.target);
    const file = path.join(dir, key, `${rp.id}.json`);
    const text = fs.readFileSync(file, 'utf8');
    const first = await journal.get(rp.id);
    assert.equal(first.label, 'CCCC');
    first.label = 'changed by a caller';
    assert.equal((await journal.get(rp.id)).label, 'CCCC', 'the same text: the kept parse, a copy of it');
    // rewritten at once (the same second: its times are not trusted), same size, then another text
    fs.writeFileSync(file, text.replace('"CCCC"', '"DDDD"'));
    assert.equal((await journal.get(rp.id)).label, 'DDDD');
    assert.equal((await journal.list()).find((r) => r.id === rp.id)?.label, 'DDDD');
    fs.writeFileSync(file, text.replace('"CCCC"', '"CC'));
    await assert.rejects(journal.get(rp.id), /damaged/);
    fs.writeFileSync(file, text);
    assert.equal((await journal.get(rp.id)).label, 'CCCC');
    fs.rmSync(file);
    await assert.rejects(journal.get(rp.id), /No restore point/);
  });
});
