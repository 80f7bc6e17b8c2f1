/**
 * Packs (issue 14, the initial create): a create with at least PACK_MIN_OBJECTS files to store puts
 * its small objects (contents and trees) into one pack file, `objects/pack/<hex>.pack`. Real files,
 * real processes: restore from a pack byte for byte (also from a fresh process), reading a file of
 * a restore point, the garbage collection deleting a pack no restore point uses and rewriting one
 * that is partly used, a damaged pack making its restore point CorruptSnapshot (never empty), and a
 * pack temp file of a dead writer swept.
 */
import * as assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { resolveTarget } from '../../sidecar/core/target';
import { PACK_MIN_OBJECTS, packMinObjects, SMALL_FILE_LIMIT } from '../../sidecar/core/objects';
import { packEntries, readPackIndex } from '../../sidecar/core/packs';
import { buildSidecar, runSidecar } from './helpers/sidecar';
import { describeTree, pseudoRandom, put, tempSetup } from './dir-fixtures';
import { referencedObjects, storedObjects } from './helpers/tmpfs';

const N = PACK_MIN_OBJECTS + 88;
const sha = (b: string | Buffer): string => createHash('sha256').update(b).digest('hex');

describe('dir backend: packs of small objects (issue 14)', function () {
  this.timeout(60000);
  before(() => buildSidecar());
  let s: ReturnType<typeof tempSetup>;
  beforeEach(() => {
    s = tempSetup('ak-pack-');
    for (let i = 0; i < N; i++) put(s.tree, `d${i % 12}/f${i}.txt`, `file ${i}\n`.repeat(1 + (i % 5)));
    put(s.tree, 'big.bin', pseudoRandom(SMALL_FILE_LIMIT + 10, 3)); // larger than 1 MiB: a file of its own
    fs.symlinkSync('d0', path.join(s.tree, 'link'));
  });
  afterEach(() => s.cleanup());
  const packDir = (): string => path.join(s.state, 'objects', 'pack');
  const packs = (): string[] =>
    fs.existsSync(packDir()) ? fs.readdirSync(packDir()).map((n) => path.join(packDir(), n)) : [];
  const packed = (): Set<string> => {
    const out = new Set<string>();
    for (const f of packs()) for (const o of packEntries(readPackIndex(f)!)) out.add(o.hash);
    return out;
  };

  it('a first create packs its small objects; restore from the pack is byte-identical, also in a fresh process', async () => {
    const original = describeTree(s.tree);
    const core = new Core({ stateDir: s.state });
    const rp = await core.createRestorePoint({ target: s.target, stores: [] });
    assert.equal(packs().length, 1, 'one pack');
    const inPack = packed();
    // every small content and every tree is in the pack; the large file is its own object file
    assert.ok(inPack.has(sha('file 0\n')));
    assert.ok(inPack.size >= 5 * 1 + 13, `${inPack.size} objects in the pack`);
    assert.deepEqual(storedObjects(s.state), [sha(fs.readFileSync(path.join(s.tree, 'big.bin')))]);
    for (const h of referencedObjects(s.state)) assert.ok(inPack.has(h) || storedObjects(s.state).includes(h), h);
    assert.equal(fs.statSync(packs()[0]).mode & 0o777, 0o400);
    assert.deepEqual(fs.readdirSync(path.join(s.state, 'objects', 'tmp')), []);
    // change, delete and add, then restore from a fresh process (no in-memory cache of anything)
    for (let i = 0; i < N; i += 7) fs.writeFileSync(path.join(s.tree, `d${i % 12}/f${i}.txt`), 'changed\n');
    fs.rmSync(path.join(s.tree, 'd3'), { recursive: true });
    put(s.tree, 'new/x.txt', 'x');
    const fresh = new Core({ stateDir: s.state });
    await fresh.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'both' });
    assert.deepEqual(describeTree(s.tree), original);
    const f = await new Core({ stateDir: s.state }).readRestorePointFile({
      target: s.target,
      id: rp.id,
      path: 'd1/f1.txt',
    });
    assert.equal(f.content, 'file 1\nfile 1\n');
  });

  it('the same contents again are not stored again (the pack counts as stored)', async () => {
    const core = new Core({ stateDir: s.state });
    await core.createRestorePoint({ target: s.target, stores: [] });
    const before = packed();
    // a second tree with the same contents under other names: nothing new but its trees
    fs.renameSync(s.tree, `${s.tree}-moved`);
    fs.mkdirSync(s.tree);
    fs.renameSync(`${s.tree}-moved`, path.join(s.tree, 'inner'));
    const again = await new Core({ stateDir: s.state }).createRestorePoint({ target: s.target, stores: [] });
    assert.equal(again.machine.newBytes, 0, 'file contents: all in the first pack (or the large object)');
    const loose = storedObjects(s.state).filter((h) => before.has(h));
    assert.deepEqual(loose, [], 'no packed object written again as a file');
  });

  it('gc: a pack no restore point uses is deleted; one partly used is rewritten with what is used', async () => {
    const core = new Core({ stateDir: s.state });
    const first = await core.createRestorePoint({ target: s.target, stores: [] });
    // the second create changes 600 files: its objects go into a second pack
    for (let i = 0; i < N; i++)
      if (i % 12 !== 0) fs.writeFileSync(path.join(s.tree, `d${i % 12}/f${i}.txt`), `v2 ${i}\n`);
    const second = await core.createRestorePoint({ target: s.target, stores: [] });
    assert.equal(packs().length, 2);
    const v2 = describeTree(s.tree);
    // deleting the first: its pack holds d0's files, which the second still uses -> rewritten
    const del = await core.deleteRestorePoint({ target: s.target, id: first.id });
    assert.ok(del.freedBytes > 0, `${del.freedBytes}`);
    const kept = packed();
    const refs = referencedObjects(s.state);
    for (const h of refs) assert.ok(kept.has(h) || storedObjects(s.state).includes(h), `kept ${h.slice(0, 8)}`);
    for (const h of kept) assert.ok(refs.has(h), `no garbage left in the packs: ${h.slice(0, 8)}`);
    put(s.tree, 'junk.txt', 'junk');
    await new Core({ stateDir: s.state }).restoreRestorePoint({ target: s.target, id: second.id, scope: 'both' });
    assert.deepEqual(describeTree(s.tree), v2);
    // deleting every restore point leaves no pack and no object
    const all = await core.listRestorePoints({ target: s.target });
    for (const rp of all) await core.deleteRestorePoint({ target: s.target, id: rp.id });
    assert.deepEqual(packs(), []);
    assert.deepEqual(storedObjects(s.state), []);
  });

  /** `restore-point restore <id> --scope both --yes` of the target in a fresh CLI process. */
  const restoreElsewhere = (id: string): ReturnType<typeof runSidecar> =>
    runSidecar([
      'restore-point',
      'restore',
      id,
      '--target',
      s.target,
      '--state-dir',
      s.state,
      '--scope',
      'both',
      '--yes',
    ]);

  it('a damaged pack makes its restore point CorruptSnapshot and leaves the tree untouched', async () => {
    const core = new Core({ stateDir: s.state });
    const rp = await core.createRestorePoint({ target: s.target, stores: [] });
    fs.writeFileSync(path.join(s.tree, 'd1/f1.txt'), 'changed\n');
    const [p] = packs();
    fs.chmodSync(p, 0o600);
    fs.truncateSync(p, fs.statSync(p).size - 10); // the trailer no longer checks
    const before = describeTree(s.tree);
    // another process (this one keeps the pack's index it read before the damage)
    const r = await restoreElsewhere(rp.id);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stderr, /missing|damaged/);
    assert.deepEqual(describeTree(s.tree), before);
  });

  it('a pack whose header is damaged (index and trailer intact) makes its restore point CorruptSnapshot, tree untouched', async () => {
    const core = new Core({ stateDir: s.state });
    const rp = await core.createRestorePoint({ target: s.target, stores: [] });
    fs.writeFileSync(path.join(s.tree, 'd1/f1.txt'), 'changed\n');
    const [p] = packs();
    fs.chmodSync(p, 0o600);
    const fd = fs.openSync(p, 'r+');
    fs.writeSync(fd, Buffer.from('X'), 0, 1, 3); // "AKPXCK01": found by QA, the pack was still used
    fs.closeSync(fd);
    assert.equal(readPackIndex(p), undefined, 'a pack with a damaged header does not check');
    const before = describeTree(s.tree);
    const r = await restoreElsewhere(rp.id);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stderr, /missing|damaged/);
    assert.deepEqual(describeTree(s.tree), before);
    assert.ok(fs.existsSync(p), 'the damaged pack is kept (reported, never deleted)');
  });

  it('bytes flipped inside a pack’s object area (index and trailer intact) make the restore CorruptSnapshot, tree untouched', async () => {
    const core = new Core({ stateDir: s.state });
    const rp = await core.createRestorePoint({ target: s.target, stores: [] });
    const [p] = packs();
    // the object holding d1/f1.txt's content: flip its first byte (the index still checks)
    const slot = packEntries(readPackIndex(p)!).find((o) => o.hash === sha('file 1\nfile 1\n'))!;
    fs.chmodSync(p, 0o600);
    const fd = fs.openSync(p, 'r+');
    fs.writeSync(fd, Buffer.from([('f'.charCodeAt(0) ^ 0xff) & 0xff]), 0, 1, slot.offset);
    fs.closeSync(fd);
    assert.ok(readPackIndex(p), 'trailer and index still check');
    fs.rmSync(path.join(s.tree, 'd1'), { recursive: true });
    fs.writeFileSync(path.join(s.tree, 'd2/f2.txt'), 'changed\n');
    const before = describeTree(s.tree);
    // in this process and in a fresh one: never exit 0 with the wrong bytes written
    await assert.rejects(
      new Core({ stateDir: s.state }).restoreRestorePoint({ target: s.target, id: rp.id, scope: 'both' }),
      (e: Error & { kind?: string }) => e.kind === 'CorruptSnapshot' && /damaged/.test(e.message),
    );
    assert.deepEqual(describeTree(s.tree), before);
    const r = await restoreElsewhere(rp.id);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stderr, /damaged/);
    assert.deepEqual(describeTree(s.tree), before);
    // reading that file of the restore point fails the same way (never the flipped bytes)
    await assert.rejects(
      new Core({ stateDir: s.state }).readRestorePointFile({ target: s.target, id: rp.id, path: 'd1/f1.txt' }),
      (e: Error & { kind?: string }) => e.kind === 'CorruptSnapshot',
    );
  });

  it('gc: a pack left twice (a rewrite killed before the old pack was removed) is reduced to one copy', async () => {
    const core = new Core({ stateDir: s.state });
    const first = await core.createRestorePoint({ target: s.target, stores: [] });
    const v1 = describeTree(s.tree);
    for (let i = 0; i < N; i++)
      if (i % 12 !== 0) fs.writeFileSync(path.join(s.tree, `d${i % 12}/f${i}.txt`), `v2 ${i}\n`);
    const second = await core.createRestorePoint({ target: s.target, stores: [] });
    const v2 = describeTree(s.tree);
    assert.equal(packs().length, 2);
    // the state a killed rewrite leaves: the same objects in a second pack under another name
    // (copies named by their place in the list: two packs whose names start with the same hex digit
    // made the same copy name, one in 16 runs, and the second copy replaced the first)
    packs().forEach((p, k) => fs.copyFileSync(p, path.join(packDir(), `${'0'.repeat(31)}${k}.pack`)));
    assert.equal(packs().length, 4);
    const third = await core.createRestorePoint({ target: s.target, stores: [] }); // nothing new: no pack
    assert.equal(packs().length, 4);
    // a prune that deletes nothing still collects: each object is kept exactly once
    await new Core({ stateDir: s.state }).deleteRestorePoint({ target: s.target, id: third.id });
    const count = new Map<string, number>();
    for (const f of packs())
      for (const o of packEntries(readPackIndex(f)!)) count.set(o.hash, (count.get(o.hash) ?? 0) + 1);
    for (const [h, n] of count) assert.equal(n, 1, `object ${h.slice(0, 8)} is in ${n} packs`);
    const refs = referencedObjects(s.state);
    for (const h of refs) assert.ok(count.has(h) || storedObjects(s.state).includes(h), `kept ${h.slice(0, 8)}`);
    assert.equal(packs().length, 2, 'the two copies are gone');
    for (const [rp, tree] of [
      [first, v1],
      [second, v2],
    ] as const) {
      put(s.tree, 'junk.txt', 'junk');
      await new Core({ stateDir: s.state }).restoreRestorePoint({ target: s.target, id: rp.id, scope: 'both' });
      assert.deepEqual(describeTree(s.tree), tree);
    }
    // a later collection (deleting the first) keeps one copy still, and the second restores as it was
    await new Core({ stateDir: s.state }).deleteRestorePoint({ target: s.target, id: first.id });
    const again = new Map<string, number>();
    for (const f of packs())
      for (const o of packEntries(readPackIndex(f)!)) again.set(o.hash, (again.get(o.hash) ?? 0) + 1);
    for (const [h, n] of again) assert.equal(n, 1, `object ${h.slice(0, 8)} is in ${n} packs`);
    put(s.tree, 'junk.txt', 'junk');
    await new Core({ stateDir: s.state }).restoreRestorePoint({ target: s.target, id: second.id, scope: 'both' });
    assert.deepEqual(describeTree(s.tree), v2);
  });

  it('AGENTKEEP_PACK_MIN_OBJECTS: a whole number >= 1 is used; any other value warns once on stderr and the default is used', () => {
    const saved = process.env.AGENTKEEP_PACK_MIN_OBJECTS;
    const write = process.stderr.write.bind(process.stderr);
    const said: string[] = [];
    process.stderr.write = ((chunk: string | Uint8Array) => (said.push(String(chunk)), true)) as typeof write;
    try {
      process.env.AGENTKEEP_PACK_MIN_OBJECTS = '7';
      assert.equal(packMinObjects(), 7);
      delete process.env.AGENTKEEP_PACK_MIN_OBJECTS;
      assert.equal(packMinObjects(), PACK_MIN_OBJECTS);
      assert.equal(said.length, 0, said.join(''));
      for (const v of ['0', '-1', 'abc', '1e3', ' 5']) {
        process.env.AGENTKEEP_PACK_MIN_OBJECTS = v;
        assert.equal(packMinObjects(), PACK_MIN_OBJECTS, v);
        assert.equal(packMinObjects(), PACK_MIN_OBJECTS, v);
      }
    } finally {
      process.stderr.write = write;
      if (saved === undefined) delete process.env.AGENTKEEP_PACK_MIN_OBJECTS;
      else process.env.AGENTKEEP_PACK_MIN_OBJECTS = saved;
    }
    assert.equal(said.length, 5, said.join(''));
    for (const [k, v] of ['0', '-1', 'abc', '1e3', ' 5'].entries()) {
      assert.match(said[k], /AGENTKEEP_PACK_MIN_OBJECTS/);
      assert.ok(said[k].includes(JSON.stringify(v)), said[k]);
      assert.match(said[k], new RegExp(`default ${PACK_MIN_OBJECTS}`));
    }
  });

  it('a pack temp of a dead writer is swept; a create failing after its pack leaves neither pack nor temp', async () => {
    const tmp = path.join(s.state, 'objects', 'tmp');
    fs.mkdirSync(tmp, { recursive: true });
    fs.writeFileSync(path.join(tmp, '999999-0123456789ab'), 'AKPACK01 half a pack');
    // the manifest cannot be written (its directory is a file): the create fails after the pack is in place
    const key = (await resolveTarget(s.target)).key;
    fs.mkdirSync(path.join(s.state, 'dir'), { recursive: true });
    fs.writeFileSync(path.join(s.state, 'dir', key), 'in the way');
    await assert.rejects(new Core({ stateDir: s.state }).createRestorePoint({ target: s.target, stores: [] }));
    assert.deepEqual(fs.readdirSync(tmp), [], 'the dead writer’s temp is gone, and no pack temp is left');
    assert.deepEqual(packs(), [], 'the failed create’s pack was collected at once');
    fs.rmSync(path.join(s.state, 'dir', key));
    await new Core({ stateDir: s.state }).createRestorePoint({ target: s.target, stores: [] });
    assert.equal(packs().length, 1);
  });
});
