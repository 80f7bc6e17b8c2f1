/**
 * Issue 13 #4: usage and the size cap count everything the state dir holds (manifests, their
 * index, the journal), and a create does not read every earlier manifest (it stayed 0.44 s -> 1.21 s
 * over 50 restore points because the size-cap check parsed all of them).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { forgetManifest } from '../../sidecar/machine/dir/manifest';
import { put, tempSetup } from './dir-fixtures';
import { ageRestorePoint } from './helpers/sidecar';
import { looseObjects } from './helpers/loose';

/** Bytes of every file directly in `dir`. */
function filesBytes(dir: string): number {
  return fs.readdirSync(dir).reduce((n, f) => n + fs.lstatSync(path.join(dir, f)).size, 0);
}

describe('usage counts the manifests; create stays flat (issue 13 #4)', function () {
  this.timeout(120000);
  let s: ReturnType<typeof tempSetup>;
  let core: Core;
  beforeEach(() => {
    s = tempSetup('ak-usage-');
    core = new Core({ stateDir: s.state });
    for (let i = 0; i < 300; i++) put(s.tree, `d${i % 10}/file-${i}.txt`, `${i}\n`);
  });
  afterEach(() => s.cleanup());
  const key = (): string => fs.readdirSync(path.join(s.state, 'dir'))[0];

  describe('(object files of their own)', () => {
    looseObjects();
    it('bytes = distinct objects + manifests (and their index) + journal; stateDirBytes is the whole state dir', async () => {
      await core.createRestorePoint({ target: s.target, stores: [] });
      put(s.tree, 'new.txt', 'new\n');
      await core.createRestorePoint({ target: s.target, stores: [] });
      const u = await core.usageRestorePoints({ target: s.target });
      const manifests = filesBytes(path.join(s.state, 'dir', key()));
      const journal = filesBytes(path.join(s.state, 'journal', key()));
      assert.equal(u.metaBytes, manifests + journal, 'manifests, index and journal, to the byte');
      const objects = fs
        .readdirSync(path.join(s.state, 'objects'))
        .filter((d) => d !== 'tmp')
        .flatMap((d) =>
          fs.readdirSync(path.join(s.state, 'objects', d)).map((n) => path.join(s.state, 'objects', d, n)),
        );
      const objectBytes = objects.reduce((n, f) => n + fs.statSync(f).size, 0);
      assert.equal(u.bytes, objectBytes + u.metaBytes);
      // format 2 (issue 14): a manifest is a small head, the directory listings are tree objects
      for (const n of fs.readdirSync(path.join(s.state, 'dir', key())).filter((f) => f.startsWith('ak_')))
        assert.ok(fs.statSync(path.join(s.state, 'dir', key(), n)).size < 1024, `${n} is a head`);
      assert.ok(
        u.stateDirBytes >= u.bytes && u.stateDirBytes < u.bytes + 200 * 1024,
        `${u.stateDirBytes} vs ${u.bytes}`,
      );
    });
  });

  it('the size cap after a create counts the manifests and trees too, from the index (rebuilt when damaged)', async () => {
    await core.createRestorePoint({ target: s.target, stores: [] });
    const u = await core.usageRestorePoints({ target: s.target });
    const fileBytes = 300 * 4; // the 300 files' contents ("<i>\n")
    // a cap the file contents alone would never reach, but contents + trees + manifests pass after one more create
    const indexBytes = fs.statSync(path.join(s.state, 'dir', key(), '.index.json')).size; // damaged below
    const cap = Math.round((u.bytes - indexBytes) * 1.05);
    assert.ok(fileBytes < 0.9 * cap);
    fs.writeFileSync(path.join(s.state, 'config.json'), JSON.stringify({ sizeCapBytes: cap }));
    fs.writeFileSync(path.join(s.state, 'dir', key(), '.index.json'), '{ damaged');
    put(s.tree, 'more.txt', 'more\n');
    const rp = await core.createRestorePoint({ target: s.target, stores: [] });
    assert.match((rp.warnings ?? []).join(' '), /use [\d.]+ KiB, \d+% of the [\d.]+ KiB size cap/);
    const again = await core.usageRestorePoints({ target: s.target });
    const idx = JSON.parse(fs.readFileSync(path.join(s.state, 'dir', key(), '.index.json'), 'utf8')) as {
      manifests: Record<string, number>;
    };
    assert.deepEqual(
      Object.keys(idx.manifests).sort(),
      again.points.map((p) => p.id).sort(),
      'the index was rebuilt and covers both',
    );
  });

  it('a create reads no earlier manifest but its parent (size cap from the index, pair comparisons cached on disk)', async () => {
    // 6 pre/post pairs (as snapshot & run makes them), older than an hour
    for (let i = 0; i < 6; i++) {
      const pre = await core.createRestorePoint({ target: s.target, stores: [], kind: 'pre' });
      put(s.tree, `run-${i}.txt`, `${i}\n`);
      const post = await core.createRestorePoint({ target: s.target, stores: [], kind: 'post', pairOf: pre.id });
      await ageRestorePoint(s.state, pre.id, 30 - i);
      await ageRestorePoint(s.state, post.id, 30 - i);
    }
    const reads: string[] = [];
    const orig = fs.promises.readFile;
    const spy = (async (p: Parameters<typeof orig>[0], ...rest: unknown[]) => {
      const f = String(p);
      if (f.startsWith(path.join(s.state, 'dir')) && /\/ak_\w+\.json$/.test(f)) reads.push(path.basename(f));
      return (orig as (...a: unknown[]) => Promise<unknown>)(p, ...rest);
    }) as typeof orig;
    const fresh = (): Core => {
      // a new CLI process: no manifest in memory
      for (const n of fs.readdirSync(path.join(s.state, 'dir', key())))
        forgetManifest(path.join(s.state, 'dir', key(), n));
      return new Core({ stateDir: s.state });
    };
    await fresh().createRestorePoint({ target: s.target, stores: [], retention: { keep: 50 } }); // compares the pairs once, caches them
    fs.promises.readFile = spy;
    try {
      put(s.tree, 'later.txt', 'later\n');
      await fresh().createRestorePoint({ target: s.target, stores: [], retention: { keep: 50 } });
    } finally {
      fs.promises.readFile = orig;
    }
    assert.ok(reads.length <= 1, `read ${reads.length} manifests: ${reads.join(', ')}`);
    assert.ok(fs.existsSync(path.join(s.state, 'journal', key(), '.pairs.json')));
  });
});
