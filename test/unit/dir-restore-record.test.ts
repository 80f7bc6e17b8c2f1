/**
 * The restore record (sidecar/machine/dir/index.ts, restoreRecordHash): a restore records the stat
 * of every file it writes, so the next create does not read and hash them again; git's racy rule
 * keeps a change made right after the restore (same size, same second, even with the old mtime put
 * back) from being missed. Also: files the restore creates where nothing was are made in place.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { ObjectStore } from '../../sidecar/core/objects';
import { closeJournals } from '../../sidecar/machine/dir/journal';
import { describeTree, put, tempLeftovers, tempSetup } from './dir-fixtures';

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('dir backend: the restore record', function () {
  let s: ReturnType<typeof tempSetup>;
  let read: string[];
  const putFile = ObjectStore.prototype.putFile;

  beforeEach(() => {
    s = tempSetup('ak-restore-record-');
    read = [];
    // counts the files a create reads and hashes (the real store still does the work)
    ObjectStore.prototype.putFile = function (this: ObjectStore, file: string, ...rest: never[]) {
      read.push(path.relative(s.tree, file));
      return putFile.call(this, file, ...rest);
    } as typeof putFile;
  });
  afterEach(() => {
    ObjectStore.prototype.putFile = putFile;
    closeJournals();
    s.cleanup();
  });

  /** 400 files in 4 directories, a restore point A of them, then 60 edited, 10 removed, 10 added. */
  async function atB(core: Core): Promise<{ a: string; treeA: ReturnType<typeof describeTree> }> {
    for (let i = 0; i < 400; i++) put(s.tree, `d${i % 4}/f${i}.txt`, `file ${i}\n`.repeat(1 + (i % 5)));
    await pause(120); // older than the stat cache's racy window
    const a = (await core.createRestorePoint({ target: s.target, stores: [] })).id;
    const treeA = describeTree(s.tree);
    for (let i = 0; i < 10; i++) put(s.tree, `d${i % 4}/f${i}.txt`, `edited ${i}\n`);
    for (let i = 100; i < 150; i++) put(s.tree, `d${i % 4}/f${i}.txt`, `edited ${i}\n`);
    for (let i = 10; i < 20; i++) fs.rmSync(path.join(s.tree, `d${i % 4}/f${i}.txt`));
    for (let i = 0; i < 10; i++) put(s.tree, `d${i % 4}/new${i}.txt`, `new ${i}\n`);
    await pause(120);
    return { a, treeA };
  }

  for (const changeJournal of [true, false]) {
    it(`the create after a restore reads none of the files the restore wrote (changeJournal ${changeJournal})`, async () => {
      const core = new Core({ stateDir: s.state, changeJournal });
      const { a, treeA } = await atB(core);
      const r = await core.restoreRestorePoint({ target: s.target, id: a, scope: 'machine' });
      assert.deepEqual(describeTree(s.tree), treeA, 'restored byte for byte');
      // the record's stamp is the root's ctime at the end of the restore: a written file whose ctime
      // is not older (the same clock tick) is read again, every other one is not
      const stamp = fs.lstatSync(s.tree).ctimeMs;
      const written = [...r.changes.changed, ...r.changes.removed]; // (removed: since A, so made again)
      const racy = written.filter((p) => fs.lstatSync(path.join(s.tree, p)).ctimeMs >= stamp);
      assert.ok(racy.length < written.length, `some written files are older than the stamp (${racy.length} racy)`);
      await pause(20);
      read = [];
      put(s.tree, 'd0/after.txt', 'made after the restore\n');
      const c = await core.createRestorePoint({ target: s.target, stores: [] });
      assert.deepEqual(
        read.sort(),
        ['d0/after.txt', ...racy].sort(),
        'only the file made after the restore (and racy ones) is read',
      );
      // and what it holds is right: restore it from elsewhere, byte for byte
      const treeC = describeTree(s.tree);
      await core.restoreRestorePoint({ target: s.target, id: a, scope: 'machine' });
      await core.restoreRestorePoint({ target: s.target, id: c.id, scope: 'machine' });
      assert.deepEqual(describeTree(s.tree), treeC);
    });
  }

  it('a file changed right after the restore (same size, at once, even with its mtime put back) is read and captured', async () => {
    const core = new Core({ stateDir: s.state, changeJournal: true });
    const { a } = await atB(core);
    await core.restoreRestorePoint({ target: s.target, id: a, scope: 'machine' });
    // at once, no pause: f0 was written by the restore (edited at B), f11 re-created (removed at B)
    const changed = new Map<string, string>();
    for (const rel of ['d0/f0.txt', 'd3/f11.txt']) {
      const f = path.join(s.tree, rel);
      const st = fs.statSync(f);
      const old = fs.readFileSync(f, 'utf8');
      const now = old.replace(/file/g, 'FILE'); // same size, other bytes
      assert.equal(now.length, old.length);
      fs.writeFileSync(f, now);
      if (rel === 'd3/f11.txt') fs.utimesSync(f, st.atime, st.mtime); // the restored mtime back (touch -r)
      changed.set(rel, now);
    }
    // a plain same-size write, with no time passing
    const c = await core.createRestorePoint({ target: s.target, stores: [] });
    for (const rel of changed.keys()) assert.ok(read.includes(rel), `${rel} is read again`);
    const treeC = describeTree(s.tree);
    await core.restoreRestorePoint({ target: s.target, id: a, scope: 'machine' });
    assert.equal(fs.readFileSync(path.join(s.tree, 'd0/f0.txt'), 'utf8'), 'file 0\n');
    await core.restoreRestorePoint({ target: s.target, id: c.id, scope: 'machine' });
    assert.deepEqual(describeTree(s.tree), treeC);
    for (const [rel, want] of changed) assert.equal(fs.readFileSync(path.join(s.tree, rel), 'utf8'), want);
  });

  it('the record is for one create: a change after that create is seen by the stat cache as before', async () => {
    const core = new Core({ stateDir: s.state, changeJournal: true });
    const { a } = await atB(core);
    await core.restoreRestorePoint({ target: s.target, id: a, scope: 'machine' });
    await pause(20);
    await core.createRestorePoint({ target: s.target, stores: [] });
    put(s.tree, 'd1/f1.txt', 'FILE 1\nFILE 1\n'); // same size as the restored 'file 1\n' x 2
    read = [];
    const d = await core.createRestorePoint({ target: s.target, stores: [] });
    assert.deepEqual(read, ['d1/f1.txt']);
    await core.restoreRestorePoint({ target: s.target, id: a, scope: 'machine' });
    await core.restoreRestorePoint({ target: s.target, id: d.id, scope: 'machine' });
    assert.equal(fs.readFileSync(path.join(s.tree, 'd1/f1.txt'), 'utf8'), 'FILE 1\nFILE 1\n');
  });

  it('files made where nothing was are created in place (no temp file); a FIFO in the way is replaced', async () => {
    const core = new Core({ stateDir: s.state });
    const { a, treeA } = await atB(core);
    const fifo = path.join(s.tree, 'd2/f14.txt'); // removed at B; a FIFO there now (never captured)
    execFileSync('mkfifo', [fifo]);
    const renamed: string[] = [];
    // (the module object itself: the backend's `fs` namespace reads its functions from it)
    const cjsFs = createRequire(__filename)('node:fs') as { renameSync: typeof fs.renameSync };
    const rename = cjsFs.renameSync;
    cjsFs.renameSync = (from: fs.PathLike, to: fs.PathLike): void => {
      renamed.push(path.relative(s.tree, String(to)));
      rename(from, to);
    };
    try {
      await core.restoreRestorePoint({ target: s.target, id: a, scope: 'machine' });
    } finally {
      cjsFs.renameSync = rename;
    }
    assert.deepEqual(describeTree(s.tree), treeA);
    const inTree = renamed.filter((p) => !p.startsWith('..')).sort();
    // the 60 edited files replace content (temp + rename), and so does the file where the FIFO was
    const edited = [...Array(10).keys(), ...Array.from({ length: 50 }, (_, k) => 100 + k)];
    assert.deepEqual(inTree, [...edited.map((i) => `d${i % 4}/f${i}.txt`), 'd2/f14.txt'].sort());
  });
  it('the synchronous writes of small files still see an abort: stopped part-way, no temp file left, finishing it is byte for byte', async () => {
    for (let i = 0; i < 3000; i++) put(s.tree, `big/d${i % 30}/f${i}.txt`, `content ${i}\n`.repeat(20));
    const plain = new Core({ stateDir: s.state });
    const a = (await plain.createRestorePoint({ target: s.target, stores: [] })).id;
    const treeA = describeTree(s.tree);
    fs.rmSync(path.join(s.tree, 'big'), { recursive: true }); // the restore makes 3,000 files again
    const stop = new AbortController();
    let abortedAt = 0;
    let scheduled = false;
    const core = new Core({
      stateDir: s.state,
      signal: stop.signal,
      // once the writing of the tree has begun, abort from a timer: it fires only when the synchronous
      // write loop yields to the event loop (every 8 ms)
      onProgress: (p) => {
        if (p.stage !== 'restore' || !p.done || scheduled) return;
        scheduled = true;
        setTimeout(() => {
          abortedAt = Date.now();
          stop.abort();
        }, 0);
      },
    });
    await assert.rejects(
      core.restoreRestorePoint({ target: s.target, id: a, scope: 'machine', progressToken: 't' }),
      (e: Error) => {
        assert.match(e.message, /stopped part-way/);
        return true;
      },
    );
    const seenMs = Date.now() - abortedAt;
    assert.ok(seenMs < 1000, `the abort was seen within a slice (${seenMs} ms)`);
    const made = Object.keys(describeTree(s.tree)).filter((p) => p.startsWith('big/') && p.endsWith('.txt')).length;
    assert.ok(made > 0 && made < 3000, `stopped part-way (${made} of 3,000 files made)`);
    assert.deepEqual(tempLeftovers(s.tree), []);
    await plain.restoreRestorePoint({ target: s.target, id: a, scope: 'machine' });
    assert.deepEqual(describeTree(s.tree), treeA);
  });
});
