/**
 * The streamed create of a one-shot process (sidecar/machine/dir/stream.ts, CoreOptions.oneShot,
 * issue 14's peak memory at 100,000 files): from the same tree and the same parent it makes the very
 * snapshot the in-memory create (scanTree + buildTrees) makes, manifest and tree objects byte for
 * byte, with the same size-cap bound; it writes trees only for the directories that changed and their
 * ancestors; and it keeps nothing of the snapshot in the manifest cache.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { ObjectStore } from '../../sidecar/core/objects';
import { readManifest, readManifestHead } from '../../sidecar/machine/dir/manifest';
import { describeTree, put, tempSetup } from './dir-fixtures';
import { manifestObjects } from './helpers/manifests';

describe('dir backend: the streamed create of a one-shot process', function () {
  this.timeout(60000);
  let s: ReturnType<typeof tempSetup>;
  // (a one-shot process streams when its lstat runs on the main thread, as the slim create's does)
  let workers: string | undefined;
  beforeEach(() => {
    workers = process.env.AGENTKEEP_STAT_WORKERS;
    process.env.AGENTKEEP_STAT_WORKERS = '0';
    s = tempSetup('ak-stream-');
    for (let i = 0; i < 90; i++) put(s.tree, `p${i % 3}/m${i % 5}/deep/f${i}.txt`, `content ${i}\n`);
    put(s.tree, 'top.txt', 'top\n');
    put(s.tree, 'p0/secret.txt', 'secret\n', 0o600);
    put(s.tree, 'gone/a/b/c.txt', 'to be removed\n');
    fs.mkdirSync(path.join(s.tree, 'empty'));
    fs.symlinkSync('p0/m0', path.join(s.tree, 'link'));
    fs.symlinkSync('../../top.txt', path.join(s.tree, 'p1/m1/up'));
    fs.linkSync(path.join(s.tree, 'top.txt'), path.join(s.tree, 'p2/hardlink.txt'));
    put(s.tree, 'p1/m2/.ak-tmp-0123456789ab', 'a stray temp file of a restore\n');
    execFileSync('mkfifo', [path.join(s.tree, 'p2/m3/fifo')]);
    fs.chmodSync(path.join(s.tree, 'p2/m4'), 0o700);
  });
  afterEach(() => {
    if (workers === undefined) delete process.env.AGENTKEEP_STAT_WORKERS;
    else process.env.AGENTKEEP_STAT_WORKERS = workers;
    s.cleanup();
  });
  /** Whether the create of `id` kept its entries in this process's manifest cache (the in-memory create does, the streamed one not). */
  const cached = async (state: string, id: string): Promise<boolean> =>
    !!(await readManifestHead(path.join(manifestDir(state), `${id}.json`)))?.entries;

  const manifestDir = (state: string): string => path.join(state, 'dir', fs.readdirSync(path.join(state, 'dir'))[0]);
  /** A manifest's file without what differs between two creates of the same tree (id, times). */
  const head = (state: string, id: string): Record<string, unknown> => {
    const m = JSON.parse(fs.readFileSync(path.join(manifestDir(state), `${id}.json`), 'utf8')) as Record<
      string,
      unknown
    >;
    delete m.id;
    delete m.createdAt;
    delete m.scanStartMs;
    return m;
  };
  /**
   * The size-cap record of snapshot `id` (parent, bytes added to it, bytes named): its line in
   * `.held.log` (one appended per create), else its record in `.held.json` (where the log is folded).
   */
  const held = (state: string, id: string): unknown => {
    const read = (name: string): string => {
      try {
        return fs.readFileSync(path.join(manifestDir(state), name), 'utf8');
      } catch {
        return '';
      }
    };
    for (const line of read('.held.log').split('\n').reverse()) {
      const r = line ? (JSON.parse(line) as unknown[]) : [];
      if (r[0] === id) return r.slice(1);
    }
    const summary = read('.held.json');
    return summary ? (JSON.parse(summary) as { m: Record<string, unknown> }).m[id] : undefined;
  };

  /** The bytes of every tree object a manifest names, by directory. */
  const treeBytes = (state: string, id: string): Map<string, string> => {
    const out = new Map<string, string>();
    for (const o of manifestObjects(state, path.join(manifestDir(state), `${id}.json`)))
      if (o.what.startsWith('tree of')) out.set(o.what, o.hash);
    return out;
  };

  it('makes the snapshot the in-memory create makes, byte for byte, after nested changes and removals', async () => {
    const first = await new Core({ stateDir: s.state }).createRestorePoint({ target: s.target, stores: [] });
    await new Promise((r) => setTimeout(r, 120)); // past the racy window
    put(s.tree, 'p0/m0/deep/f0.txt', 'edited\n'); // a change three levels down
    put(s.tree, 'p1/m1/deep/new/n.txt', 'a new directory\n');
    fs.rmSync(path.join(s.tree, 'gone'), { recursive: true }); // a whole subtree removed
    fs.rmSync(path.join(s.tree, 'p2/m2/deep/f2.txt'));
    fs.chmodSync(path.join(s.tree, 'p0/m3'), 0o750); // a directory's mode alone
    fs.chmodSync(path.join(s.tree, 'p1/m4/deep/f4.txt'), 0o640); // a file's mode alone
    fs.rmSync(path.join(s.tree, 'p1/m2/.ak-tmp-0123456789ab')); // the temp is gone: its directory is no longer partial
    fs.rmSync(path.join(s.tree, 'link'));
    fs.symlinkSync('p1', path.join(s.tree, 'link')); // a link's target
    put(s.tree, 'p0/m0/deep/f1.txt', 'content 0\n'); // a content another path had (counted once)
    // the same parent in two copies of the state dir: one create each way
    const other = path.join(s.base, 'state2');
    fs.cpSync(s.state, other, { recursive: true });
    const kept = await new Core({ stateDir: s.state }).createRestorePoint({ target: s.target, stores: [] });
    const streamed = await new Core({ stateDir: other, oneShot: true }).createRestorePoint({
      target: s.target,
      stores: [],
    });
    assert.equal(await cached(s.state, kept.id), true);
    assert.equal(await cached(other, streamed.id), false); // (it was streamed)
    assert.deepEqual(head(other, streamed.id), head(s.state, kept.id));
    assert.deepEqual([...treeBytes(other, streamed.id)], [...treeBytes(s.state, kept.id)]);
    assert.equal(treeBytes(other, streamed.id).has('tree of gone'), false);
    assert.notEqual(held(other, streamed.id), undefined);
    assert.deepEqual(held(other, streamed.id), held(s.state, kept.id)); // the size-cap bound: same parent, same bytes
    assert.equal(streamed.machine.files, kept.machine.files);
    assert.equal(streamed.machine.bytes, kept.machine.bytes);
    assert.equal(streamed.machine.skipped, 1); // the FIFO
    assert.equal(kept.machine.skipped, 1);
    assert.notEqual(head(other, streamed.id).tree, head(s.state, first.id).tree);
    // every object it names is in its store, and it restores the tree it captured
    const objects = new ObjectStore(path.join(other, 'objects'));
    for (const o of manifestObjects(other, path.join(manifestDir(other), `${streamed.id}.json`)))
      assert.ok(objects.verifySync(o.hash), `${o.what} is in the store`);
    const now = describeTree(s.tree);
    put(s.tree, 'p0/m0/deep/f0.txt', 'changed again\n');
    await new Core({ stateDir: other, oneShot: true }).restoreRestorePoint({
      target: s.target,
      id: streamed.id,
      scope: 'machine',
    });
    assert.deepEqual(describeTree(s.tree), now);
  });

  it('a first create (no parent) and one after no change match the in-memory create too', async () => {
    const other = path.join(s.base, 'state2');
    const a = await new Core({ stateDir: s.state }).createRestorePoint({ target: s.target, stores: [] });
    const b = await new Core({ stateDir: other, oneShot: true }).createRestorePoint({ target: s.target, stores: [] });
    assert.deepEqual(head(other, b.id), head(s.state, a.id));
    await new Promise((r) => setTimeout(r, 120));
    const a2 = await new Core({ stateDir: s.state }).createRestorePoint({ target: s.target, stores: [] });
    const b2 = await new Core({ stateDir: other, oneShot: true }).createRestorePoint({ target: s.target, stores: [] });
    assert.deepEqual(head(other, b2.id), head(s.state, a2.id));
    assert.equal(head(other, b2.id).tree, head(other, b.id).tree);
    // (parents of other ids: the bytes added to them and the bytes named)
    assert.deepEqual((held(other, b2.id) as unknown[]).slice(1), (held(s.state, a2.id) as unknown[]).slice(1));
  });

  it('writes trees only for the changed directory and its ancestors; keeps none of its entries cached', async () => {
    // (two creates: the first one's directories were written within its racy window, so the second
    // lists them all again, and directories holding left-out entries are listed again every time;
    // the third is the one after a small change)
    await new Core({ stateDir: s.state }).createRestorePoint({ target: s.target, stores: [] });
    fs.rmSync(path.join(s.tree, 'p2/m3/fifo'));
    fs.rmSync(path.join(s.tree, 'p1/m2/.ak-tmp-0123456789ab'));
    await new Promise((r) => setTimeout(r, 120));
    await new Core({ stateDir: s.state }).createRestorePoint({ target: s.target, stores: [] });
    await new Promise((r) => setTimeout(r, 120));
    put(s.tree, 'p2/m2/deep/f2.txt', 'edited\n');
    const puts: string[] = [];
    const orig = ObjectStore.prototype.putBuffer;
    ObjectStore.prototype.putBuffer = function (this: ObjectStore, buf: Uint8Array, pack?: never) {
      const text = Buffer.from(buf).toString('utf8');
      if (text.startsWith('[[')) puts.push((JSON.parse(text) as Array<[string]>).map((r) => r[0]).join(','));
      return orig.call(this, buf, pack);
    } as typeof orig;
    let rp;
    try {
      rp = await new Core({ stateDir: s.state, oneShot: true }).createRestorePoint({ target: s.target, stores: [] });
    } finally {
      ObjectStore.prototype.putBuffer = orig;
    }
    // deep (the file), m2, p2, and the root, each once, deepest first; no other directory re-serialised
    assert.equal(puts.length, 4, `trees written: ${puts.join(' | ')}`);
    assert.match(puts[0], /(^|,)f2\.txt(,|$)/);
    assert.match(puts[1], /^deep$/);
    assert.match(puts[2], /(^|,)m2(,|$)/);
    assert.match(puts[3], /(^|,)top\.txt(,|$)/);
    const trees = treeBytes(s.state, rp.id);
    assert.equal(trees.size, 1 + 3 + 3 * 5 + 3 * 5 + 3 + 1); // root, p*, p*/m*, p*/m*/deep, gone/a/b, empty
    assert.equal(await cached(s.state, rp.id), false);
    // the manifest in the cache is not this create's object: a read in this process reads the trees
    const m = await readManifest(path.join(manifestDir(s.state), `${rp.id}.json`));
    assert.ok(m);
    assert.equal(m.entries.find((e) => e.p === 'p2/m2/deep/f2.txt')?.s, 'edited\n'.length);
    assert.equal(m.entries.length, rp.machine.files);
  });

  it('matches the in-memory create over seeded random edits, moves, chmods, links and removals', async () => {
    let seed = 20261202;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const dirs = (): string[] => {
      const out = [''];
      const walk = (rel: string): void => {
        for (const e of fs.readdirSync(path.join(s.tree, rel), { withFileTypes: true }))
          if (e.isDirectory()) {
            const r = rel ? `${rel}/${e.name}` : e.name;
            out.push(r);
            walk(r);
          }
      };
      walk('');
      return out;
    };
    const other = path.join(s.base, 'state2');
    let a = await new Core({ stateDir: s.state }).createRestorePoint({ target: s.target, stores: [] });
    for (let round = 0; round < 8; round++) {
      for (let k = 0; k < 6; k++) {
        const ds = dirs();
        const d = path.join(s.tree, ds[rand(ds.length)]);
        const names = fs.readdirSync(d);
        const pick = names.length ? path.join(d, names[rand(names.length)]) : undefined;
        const st = pick ? fs.lstatSync(pick) : undefined;
        switch (rand(7)) {
          case 0:
            fs.writeFileSync(path.join(d, `n${round}-${k}.txt`), `new ${round} ${k}\n`);
            break;
          case 1:
            if (st?.isFile()) fs.appendFileSync(pick as string, `edit ${round}\n`);
            break;
          case 2:
            if (pick && d !== s.tree) fs.rmSync(pick, { recursive: true, force: true });
            break;
          case 3:
            if (st?.isDirectory()) fs.chmodSync(pick as string, 0o700 + rand(2) * 0o55);
            else if (st?.isFile()) fs.chmodSync(pick as string, 0o600 + rand(2) * 0o44);
            break;
          case 4:
            fs.mkdirSync(path.join(d, `d${round}-${k}`, 'inner'), { recursive: true });
            fs.writeFileSync(path.join(d, `d${round}-${k}`, 'inner', 'x.txt'), `${round}\n`);
            break;
          case 5:
            if (pick) fs.renameSync(pick, path.join(d, `moved-${round}-${k}`));
            break;
          default:
            fs.symlinkSync(`target-${rand(5)}`, path.join(d, `l${round}-${k}`));
        }
      }
      if (round % 2) await new Promise((r) => setTimeout(r, 60)); // (every other round within the racy window)
      fs.rmSync(other, { recursive: true, force: true });
      fs.cpSync(s.state, other, { recursive: true });
      const kept = await new Core({ stateDir: s.state }).createRestorePoint({ target: s.target, stores: [] });
      const streamed = await new Core({ stateDir: other, oneShot: true }).createRestorePoint({
        target: s.target,
        stores: [],
      });
      assert.equal(await cached(other, streamed.id), false);
      assert.deepEqual(head(other, streamed.id), head(s.state, kept.id), `round ${round}`);
      assert.deepEqual(
        (held(other, streamed.id) as unknown[]).slice(1),
        (held(s.state, kept.id) as unknown[]).slice(1),
      );
      assert.equal(streamed.machine.files, kept.machine.files);
      a = kept;
    }
    assert.ok(a);
  });

  it('AGENTKEEP_DIR_STREAM is read as the other switches: "true" streams, a bad value warns and keeps the default', async () => {
    const was = process.env.AGENTKEEP_DIR_STREAM;
    const realWrite = process.stderr.write.bind(process.stderr);
    let err = '';
    (process.stderr as { write: unknown }).write = (c: string | Uint8Array): boolean => ((err += String(c)), true);
    try {
      process.env.AGENTKEEP_DIR_STREAM = 'true';
      const on = await new Core({ stateDir: s.state }).createRestorePoint({ target: s.target, stores: [] });
      assert.equal(await cached(s.state, on.id), false, 'streamed (a long-running Core does not by default)');
      process.env.AGENTKEEP_DIR_STREAM = 'sometimes';
      const dflt = await new Core({ stateDir: s.state }).createRestorePoint({ target: s.target, stores: [] });
      assert.equal(await cached(s.state, dflt.id), true, 'the default: in memory');
      assert.match(err, /AGENTKEEP_DIR_STREAM="sometimes" is not .*the streamed create off/);
    } finally {
      (process.stderr as { write: unknown }).write = realWrite;
      if (was === undefined) delete process.env.AGENTKEEP_DIR_STREAM;
      else process.env.AGENTKEEP_DIR_STREAM = was;
    }
  });

  it('a one-shot process with the stat workers on keeps the in-memory create (AGENTKEEP_STAT_WORKERS=1)', async () => {
    process.env.AGENTKEEP_STAT_WORKERS = '1';
    const rp = await new Core({ stateDir: s.state, oneShot: true }).createRestorePoint({
      target: s.target,
      stores: [],
    });
    assert.equal(await cached(s.state, rp.id), true);
    process.env.AGENTKEEP_STAT_WORKERS = '0';
    const again = await new Core({ stateDir: s.state, oneShot: true }).createRestorePoint({
      target: s.target,
      stores: [],
    });
    assert.equal(await cached(s.state, again.id), false);
    assert.equal(head(s.state, again.id).tree, head(s.state, rp.id).tree);
  });
});
