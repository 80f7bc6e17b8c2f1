/**
 * The dir backend's scan and stat cache on real trees: changes are found even when size and mtime
 * are kept, directory-name reuse notices added and removed entries, the worker-thread lstat path
 * (large trees) gives the same result, and manifests round-trip through their JSON.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { forgetManifest, manifestJson, readManifest, type Manifest } from '../../sidecar/machine/dir/manifest';
import { scanTree, STAT_CHUNK, statCacheOf } from '../../sidecar/machine/dir/scan';
import { PARALLEL_MIN } from '../../sidecar/machine/dir/statpool';
import { put, tempSetup } from './dir-fixtures';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('dir backend: scan and stat cache', function () {
  let s: ReturnType<typeof tempSetup>;
  let core: Core;
  beforeEach(() => {
    s = tempSetup();
    core = new Core({ stateDir: s.state });
  });
  afterEach(() => s.cleanup());

  it('finds a same-size change whose mtime was put back (ctime differs)', async () => {
    put(s.tree, 'dir/a.txt', 'AAAA');
    const p = path.join(s.tree, 'dir/a.txt');
    fs.utimesSync(p, 1_700_000_000, 1_700_000_000);
    const rp = await core.createRestorePoint({ target: s.target });
    await sleep(20);
    fs.writeFileSync(p, 'BBBB');
    fs.utimesSync(p, 1_700_000_000, 1_700_000_000);
    assert.equal(fs.statSync(p).mtimeMs, 1_700_000_000_000);
    const d = await core.diffRestorePoint({ target: s.target, id: rp.id });
    assert.deepEqual(d.changed, ['dir/a.txt']);
    const second = await core.createRestorePoint({ target: s.target });
    assert.equal(second.machine.newBytes, 4, 'the new content was stored');
  });

  it('a file renamed away and back during the walk (mv f f.tmp && mv f.tmp f) is captured, not an error', async () => {
    put(s.tree, 'x/f', 'kept\n');
    put(s.tree, 'x/g', 'other\n');
    const f = path.join(s.tree, 'x/f');
    // the walk's lstat and its first retry see f away (renamed); the fresh listing holds it again
    // the module object itself (an `import * as` namespace has getters only)
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const nodeFs = require('node:fs') as { lstatSync: typeof fs.lstatSync };
    const real = nodeFs.lstatSync;
    let away = 2;
    nodeFs.lstatSync = ((p: fs.PathLike, o?: fs.StatSyncOptions) => {
      if (String(p) === f && away > 0) {
        away--;
        if (o?.throwIfNoEntry === false) return undefined;
        throw Object.assign(new Error(`ENOENT: no such file or directory, lstat '${f}'`), { code: 'ENOENT' });
      }
      return real(p, o as fs.StatSyncOptions);
    }) as typeof fs.lstatSync;
    let rp;
    try {
      rp = await core.createRestorePoint({ target: s.target });
    } finally {
      nodeFs.lstatSync = real;
    }
    assert.equal(away, 0, 'both simulated misses were hit');
    const m = await readManifest(
      path.join(s.state, 'dir', fs.readdirSync(path.join(s.state, 'dir'))[0], `${rp.id}.json`),
    );
    assert.ok(
      m?.entries.some((e) => e.p === 'x/f' && e.t === 'f'),
      'x/f is in the restore point',
    );
  });

  it('notices entries added to and removed from directories whose names were reused', async () => {
    for (let i = 0; i < 20; i++) put(s.tree, `d${i % 4}/f${i}.txt`, `v${i}`);
    await sleep(80);
    const a = await core.createRestorePoint({ target: s.target });
    await sleep(80);
    const b = await core.createRestorePoint({ target: s.target }); // names reused from a
    assert.equal(b.machine.files, a.machine.files);
    put(s.tree, 'd1/new.txt', 'new');
    fs.rmSync(path.join(s.tree, 'd2/f2.txt'));
    fs.renameSync(path.join(s.tree, 'd3/f3.txt'), path.join(s.tree, 'd3/f3-renamed.txt'));
    const c = await core.createRestorePoint({ target: s.target });
    assert.equal(c.machine.files, a.machine.files);
    const d = await core.diffRestorePoint({ target: s.target, id: b.id });
    assert.deepEqual(d.added, ['d1/new.txt', 'd3/f3-renamed.txt']);
    assert.deepEqual(d.removed, ['d2/f2.txt', 'd3/f3.txt']);
    await core.restoreRestorePoint({ target: s.target, id: b.id, scope: 'both' });
    assert.ok(!fs.existsSync(path.join(s.tree, 'd1/new.txt')));
    assert.ok(fs.existsSync(path.join(s.tree, 'd3/f3.txt')));
  });

  it('large trees (worker-thread lstat) give the same entries as the main thread alone', async () => {
    const n = PARALLEL_MIN + 600;
    for (let i = 0; i < n; i++) put(s.tree, `p${i % 7}/q${i % 13}/f${i}.txt`, `file ${i}`);
    fs.symlinkSync('p0', path.join(s.tree, 'link'));
    const hashFile = async (abs: string): Promise<{ hash: string; newBytes: number }> => ({
      hash: 'h:' + fs.readFileSync(abs, 'utf8'),
      newBytes: 0,
    });
    const withWorkers = await scanTree(s.tree, { hashFile });
    process.env.AGENTKEEP_STAT_WORKERS = '0';
    try {
      const mainOnly = await scanTree(s.tree, { hashFile });
      assert.deepEqual(withWorkers.entries, mainOnly.entries);
    } finally {
      delete process.env.AGENTKEEP_STAT_WORKERS;
    }
    assert.equal(withWorkers.entries.filter((e) => e.t === 'f').length, n);
    assert.equal(withWorkers.entries.find((e) => e.p === 'link')?.l, 'p0');
    // and with a stat cache: nothing is re-hashed, unchanged entries are the cached objects
    await sleep(80);
    const m: Manifest = {
      v: 1,
      backend: 'dir',
      target: 'x',
      id: 'x',
      createdAt: '',
      scanStartMs: Date.now(),
      rootMode: 0o755,
      bytes: 0,
      entries: withWorkers.entries,
    };
    const again = await scanTree(s.tree, { hashFile, caches: statCacheOf(m) });
    assert.equal(again.hashed, 0);
    assert.equal(again.entries.length, withWorkers.entries.length);
  });

  it('a level larger than one lstat chunk: every path gets its own stat (changes on both sides of a chunk border are found)', async () => {
    const n = STAT_CHUNK + 300;
    const name = (i: number): string => `f${String(i).padStart(6, '0')}.txt`; // sorted as numbered
    for (let i = 0; i < n; i++) fs.writeFileSync(path.join(s.tree, name(i)), `file ${i}`);
    const hashFile = async (abs: string): Promise<{ hash: string; newBytes: number }> => ({
      hash: 'h:' + fs.readFileSync(abs, 'utf8'),
      newBytes: 0,
    });
    const first = await scanTree(s.tree, { hashFile });
    assert.equal(first.entries.length, n);
    process.env.AGENTKEEP_STAT_WORKERS = '0';
    try {
      assert.deepEqual((await scanTree(s.tree, { hashFile })).entries, first.entries);
    } finally {
      delete process.env.AGENTKEEP_STAT_WORKERS;
    }
    await sleep(80);
    const m: Manifest = {
      v: 1,
      backend: 'dir',
      target: 'x',
      id: 'x',
      createdAt: '',
      scanStartMs: Date.now(),
      rootMode: 0o755,
      bytes: 0,
      entries: first.entries,
    };
    // the last path of the first chunk, the first of the second, and one near the end
    const edited = [STAT_CHUNK - 1, STAT_CHUNK, n - 2];
    for (const i of edited) fs.appendFileSync(path.join(s.tree, name(i)), ' edited');
    const again = await scanTree(s.tree, { hashFile, caches: statCacheOf(m) });
    assert.equal(again.entries.length, n);
    assert.deepEqual(
      again.fresh.map((e) => e.p),
      edited.map(name),
    );
    for (const i of edited) assert.equal(again.entries[i].h, `h:file ${i} edited`);
    assert.equal(again.entries[0], first.entries[0]); // unchanged: the cached object itself
  });

  it('manifests round-trip through their JSON and their trees', async () => {
    put(s.tree, 'a "quoted" ✓.txt', 'x');
    fs.symlinkSync('a "quoted" ✓.txt', path.join(s.tree, 'l'));
    const rp = await core.createRestorePoint({ target: s.target });
    const dir = path.join(s.state, 'dir');
    const file = path.join(dir, fs.readdirSync(dir)[0], `${rp.id}.json`);
    const m = (await readManifest(file)) as Manifest;
    assert.deepEqual(JSON.parse(manifestJson(m)), JSON.parse(JSON.stringify(m)));
    // format 2: the file is the head, the entries live in the root tree object
    const { entries: _e, ...head } = m;
    assert.equal(m.v, 2);
    assert.deepEqual(JSON.parse(fs.readFileSync(file, 'utf8')), JSON.parse(JSON.stringify(head)));
    forgetManifest(file);
    assert.deepEqual(await readManifest(file), JSON.parse(JSON.stringify(m)), 'read back from its trees');
    assert.deepEqual(
      m.entries.map((e) => [e.p, e.t]),
      [
        ['a "quoted" ✓.txt', 'f'],
        ['l', 'l'],
      ],
    );
  });
});
