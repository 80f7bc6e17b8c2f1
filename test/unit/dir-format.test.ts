/**
 * Manifest formats (issue 14): restore points written by older versions (format 1: every entry in
 * the manifest file) still restore, serve as the stat cache of the next create, and keep their
 * objects through a garbage collection; format 2 stores one tree object per directory and a create
 * stores new trees only for the directories that changed.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import nodeFs from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { forgetManifest, manifestJson, readManifest, type Manifest } from '../../sidecar/machine/dir/manifest';
import { describeTree, put, tempSetup } from './dir-fixtures';
import { manifestObjects } from './helpers/manifests';
import { looseObjects } from './helpers/loose';

describe('dir manifest formats (issue 14)', function () {
  this.timeout(60000);
  let s: ReturnType<typeof tempSetup>;
  beforeEach(() => {
    s = tempSetup('ak-format-');
    for (let i = 0; i < 60; i++) put(s.tree, `d${i % 6}/sub${i % 2}/file-${i}.txt`, `content ${i}\n`);
    put(s.tree, 'top.txt', 'top\n');
    fs.symlinkSync('d0', path.join(s.tree, 'link'));
  });
  afterEach(() => s.cleanup());
  const mf = (id: string): string =>
    path.join(s.state, 'dir', fs.readdirSync(path.join(s.state, 'dir'))[0], `${id}.json`);

  /** Rewrite restore point `id`'s manifest in format 1, as a version before issue 14 wrote it. */
  async function toFormat1(id: string): Promise<void> {
    const m = (await readManifest(mf(id))) as Manifest;
    const old = {
      v: 1 as const,
      backend: m.backend,
      target: m.target,
      id: m.id,
      createdAt: m.createdAt,
      scanStartMs: m.scanStartMs,
      rootMode: m.rootMode,
      bytes: m.bytes,
      entries: m.entries.map(({ h, z: _z, ...e }) => (e.t === 'f' ? { ...e, h } : e)),
    };
    fs.writeFileSync(mf(id), manifestJson(old as Manifest), { mode: 0o600 });
    forgetManifest(mf(id));
    const back = JSON.parse(fs.readFileSync(mf(id), 'utf8')) as { v: number; entries: unknown[]; tree?: string };
    assert.equal(back.v, 1);
    assert.equal(back.tree, undefined);
    assert.equal(back.entries.length, 6 + 6 + 60 + 2);
  }

  it('a restore point in the old format (1) restores byte for byte, also from a fresh process and after a GC', async () => {
    const original = describeTree(s.tree);
    const core = new Core({ stateDir: s.state });
    const old = await core.createRestorePoint({ target: s.target, stores: [] });
    await toFormat1(old.id);
    // changes, then a create whose parent (stat cache) is the format-1 manifest
    put(s.tree, 'd1/sub1/file-1.txt', 'changed\n');
    fs.rmSync(path.join(s.tree, 'd2'), { recursive: true });
    put(s.tree, 'new/dir/n.txt', 'new\n');
    const fresh = new Core({ stateDir: s.state });
    const next = await fresh.createRestorePoint({ target: s.target, stores: [] });
    assert.equal(JSON.parse(fs.readFileSync(mf(next.id), 'utf8')).v, 2, 'new restore points are format 2');
    const afterChanges = describeTree(s.tree);
    // a collection keeps the objects of both formats
    await fresh.pruneRestorePoints({ target: s.target });
    const r = await new Core({ stateDir: s.state }).restoreRestorePoint({
      target: s.target,
      id: old.id,
      scope: 'both',
    });
    assert.deepEqual(describeTree(s.tree), original, 'the format-1 restore point restored byte for byte');
    // (changes since the restore point: what the restore took away and brought back)
    assert.ok(r.changes.removed.includes('d2/sub0/file-2.txt'), JSON.stringify(r.changes));
    assert.ok(r.changes.added.includes('new/dir/n.txt'));
    await new Core({ stateDir: s.state }).restoreRestorePoint({ target: s.target, id: next.id, scope: 'both' });
    assert.deepEqual(describeTree(s.tree), afterChanges, 'the format-2 one made from it too');
    // usage and compare read both formats
    const u = await new Core({ stateDir: s.state }).usageRestorePoints({ target: s.target });
    assert.ok(u.points.every((p) => p.bytes > 0));
    const c = await new Core({ stateDir: s.state }).compareRestorePoints({
      target: s.target,
      from: old.id,
      to: next.id,
    });
    assert.ok(c.changed.includes('d1/sub1/file-1.txt'), JSON.stringify(c));
    assert.ok(c.added.includes('new/dir/n.txt') && c.removed.includes('d2/sub0/file-2.txt'), JSON.stringify(c));
  });

  it('a create after a small change stores trees only for the changed directory and its ancestors', async () => {
    const core = new Core({ stateDir: s.state });
    const a = await core.createRestorePoint({ target: s.target, stores: [] });
    await new Promise((r) => setTimeout(r, 120)); // past the racy window
    put(s.tree, 'd3/sub1/file-3.txt', 'edited\n'); // i = 3: d3/sub1
    const b = await core.createRestorePoint({ target: s.target, stores: [] });
    const trees = (id: string): Map<string, string> =>
      new Map(
        manifestObjects(s.state, mf(id))
          .filter((o) => o.what.startsWith('tree of'))
          .map((o) => [o.what, o.hash]),
      );
    const ta = trees(a.id);
    const tb = trees(b.id);
    assert.equal(ta.size, 1 + 6 + 6);
    const changed = [...tb].filter(([dir, h]) => ta.get(dir) !== h).map(([dir]) => dir);
    assert.deepEqual(changed.sort(), ['tree of /', 'tree of d3', 'tree of d3/sub1']);
    // and both read back to the same entries a scan gives
    forgetManifest(mf(b.id));
    const m = (await readManifest(mf(b.id))) as Manifest;
    assert.equal(m.entries.find((e) => e.p === 'd3/sub1/file-3.txt')?.s, 7);
    assert.equal(m.entries.find((e) => e.p === 'link')?.l, 'd0');
  });

  it('a restore reads and compares only the trees of directories that differ', async () => {
    const core = new Core({ stateDir: s.state });
    const a = await core.createRestorePoint({ target: s.target, stores: [] });
    const original = describeTree(s.tree);
    await new Promise((r) => setTimeout(r, 120)); // past the racy window
    put(s.tree, 'd3/sub1/file-3.txt', 'edited\n');
    put(s.tree, 'd3/sub1/new.txt', 'new\n');
    fs.rmSync(path.join(s.tree, 'd5'), { recursive: true });
    const objects = path.join(s.state, 'objects');
    const reads: string[] = [];
    const orig = nodeFs.readFileSync;
    nodeFs.readFileSync = ((p: fs.PathOrFileDescriptor, ...rest: unknown[]) => {
      if (String(p).startsWith(objects)) reads.push(path.basename(String(p)));
      return (orig as (...x: unknown[]) => unknown)(p, ...rest);
    }) as typeof fs.readFileSync;
    let r;
    try {
      r = await core.restoreRestorePoint({ target: s.target, id: a.id, scope: 'machine' });
    } finally {
      nodeFs.readFileSync = orig;
    }
    assert.deepEqual(describeTree(s.tree), original);
    const trees = new Map(
      manifestObjects(s.state, mf(a.id))
        .filter((o) => o.what.startsWith('tree of'))
        .map((o) => [o.hash, o.what]),
    );
    // the root, d3 and d3/sub1 (changed), d5 and d5/sub1 (gone: all of it comes back); not d0-d2, d4
    assert.deepEqual(reads.map((h) => trees.get(h) ?? h).sort(), [
      'tree of /',
      'tree of d3',
      'tree of d3/sub1',
      'tree of d5',
      'tree of d5/sub1',
    ]);
    assert.deepEqual(r.changes.changed, ['d3/sub1/file-3.txt']);
    assert.deepEqual(r.changes.added, ['d3/sub1/new.txt']);
    assert.equal(r.changes.removed.length, 2 + 10);
  });

  describe('(object files of their own)', () => {
    looseObjects();
    it('a restore of a snapshot read from disk reads each of its trees once (the check before the undo point, not again to compare)', async () => {
      const a = await new Core({ stateDir: s.state }).createRestorePoint({ target: s.target, stores: [] });
      const original = describeTree(s.tree);
      await new Promise((r) => setTimeout(r, 120)); // past the racy window
      put(s.tree, 'd3/sub1/file-3.txt', 'edited\n');
      fs.rmSync(path.join(s.tree, 'd5'), { recursive: true });
      forgetManifest(mf(a.id)); // as a restore point this process did not make, or one the cache dropped
      const trees = new Set(
        manifestObjects(s.state, mf(a.id))
          .filter((o) => o.what.startsWith('tree of'))
          .map((o) => o.hash),
      );
      const reads = new Map<string, number>();
      const orig = nodeFs.readFileSync;
      nodeFs.readFileSync = ((p: fs.PathOrFileDescriptor, ...rest: unknown[]) => {
        const h = path.basename(String(p));
        if (trees.has(h)) reads.set(h, (reads.get(h) ?? 0) + 1);
        return (orig as (...x: unknown[]) => unknown)(p, ...rest);
      }) as typeof fs.readFileSync;
      try {
        await new Core({ stateDir: s.state }).restoreRestorePoint({ target: s.target, id: a.id, scope: 'machine' });
      } finally {
        nodeFs.readFileSync = orig;
      }
      assert.deepEqual(describeTree(s.tree), original);
      assert.equal(reads.size, trees.size, 'every tree is read (the check before the undo point)');
      assert.deepEqual(
        [...reads.values()].filter((n) => n > 1),
        [],
        'no tree is read twice',
      );
    });
    it('a missing tree object gives CorruptSnapshot and leaves the tree untouched', async () => {
      const core = new Core({ stateDir: s.state });
      const a = await core.createRestorePoint({ target: s.target, stores: [] });
      const sub = manifestObjects(s.state, mf(a.id)).find((o) => o.what === 'tree of d4/sub0');
      assert.ok(sub);
      const obj = path.join(s.state, 'objects', sub.hash.slice(0, 2), sub.hash);
      fs.chmodSync(obj, 0o600);
      fs.rmSync(obj);
      forgetManifest(mf(a.id));
      put(s.tree, 'd4/sub0/extra.txt', 'extra\n'); // so the undo point does not store that same tree again
      const before = describeTree(s.tree);
      await assert.rejects(
        new Core({ stateDir: s.state }).restoreRestorePoint({ target: s.target, id: a.id, scope: 'machine' }),
        /damaged \(tree object [0-9a-f]{12}… is missing\)/,
      );
      assert.deepEqual(describeTree(s.tree), before);
    });
  });
});
