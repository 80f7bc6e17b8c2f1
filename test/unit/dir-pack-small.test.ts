/**
 * Packs of every create (issue 14, the fixed costs at 1,000 files): a create (and a restore's undo
 * point) with two or more new small objects writes them into one pack, and the small packs this
 * leaves are merged geometrically (ObjectStore.consolidatePacks). Real files, real processes:
 * small creates packed, lookups across many packs (also from a fresh process), merges that keep
 * every object readable, SIGKILL of a real child process at each step of a merge leaving every
 * restore point restorable byte for byte, the garbage collection reclaiming space in merged
 * packs, an older store of object files still read, and a Core that stays open reading a pack
 * another process wrote.
 */
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { ObjectStore } from '../../sidecar/core/objects';
import { geometricSplit, PACK_MERGE_AT, packEntries, packSetOf, readPackIndex } from '../../sidecar/core/packs';
import { buildSidecar, runSidecar } from './helpers/sidecar';
import { describeTree, put, REPO_ROOT, tempSetup } from './dir-fixtures';
import { referencedObjects, storedObjects } from './helpers/tmpfs';

const sha = (b: string | Buffer): string => createHash('sha256').update(b).digest('hex');

describe('dir backend: every create packed, small packs merged (issue 14)', function () {
  this.timeout(120000);
  before(() => buildSidecar());
  let s: ReturnType<typeof tempSetup>;
  beforeEach(() => {
    s = tempSetup('ak-packsmall-');
    for (let i = 0; i < 60; i++) put(s.tree, `d${i % 6}/sub${i % 2}/f${i}.txt`, `file ${i}\n`);
    put(s.tree, 'top.txt', 'top\n');
  });
  afterEach(() => s.cleanup());
  const objects = (): string => path.join(s.state, 'objects');
  const packDir = (): string => path.join(objects(), 'pack');
  const packs = (): string[] =>
    fs.existsSync(packDir()) ? fs.readdirSync(packDir()).map((n) => path.join(packDir(), n)) : [];
  const packed = (): Map<string, number> => {
    const out = new Map<string, number>();
    for (const f of packs())
      for (const o of packEntries(readPackIndex(f)!)) out.set(o.hash, (out.get(o.hash) ?? 0) + 1);
    return out;
  };
  /** Change `k` files (round `r`) so the next create stores k contents and their directories' trees. */
  const change = (r: number, k = 3): void => {
    for (let j = 0; j < k; j++)
      put(s.tree, `d${(r + j) % 6}/sub${j % 2}/f${(r * 7 + j) % 60}.txt`, `round ${r} ${j}\n`);
  };
  /** Every object a restore point names is in a pack or a file of its own. */
  const assertAllStored = (): void => {
    const inPacks = packed();
    const loose = new Set(storedObjects(s.state));
    for (const h of referencedObjects(s.state)) assert.ok(inPacks.has(h) || loose.has(h), `object ${h.slice(0, 8)}`);
  };

  it('a create after a small change writes one pack and no object file; one new object stays a file of its own', async () => {
    const core = new Core({ stateDir: s.state });
    await core.createRestorePoint({ target: s.target, stores: [] });
    assert.equal(packs().length, 1);
    change(1);
    await core.createRestorePoint({ target: s.target, stores: [] });
    assert.equal(packs().length, 2, 'the small create made a pack');
    assert.deepEqual(storedObjects(s.state), [], 'no object file');
    assert.ok(packed().has(sha('round 1 0\n')));
    // only the root tree changes (a mode): one new object, a file of its own, no pack
    fs.chmodSync(path.join(s.tree, 'top.txt'), 0o600);
    await core.createRestorePoint({ target: s.target, stores: [] });
    assert.equal(packs().length, 2);
    assert.equal(storedObjects(s.state).length, 1);
    assert.deepEqual(fs.readdirSync(path.join(objects(), 'tmp')), [], 'no temp left');
    assertAllStored();
    // the undo point of a restore is packed the same way
    change(2);
    const list = await core.listRestorePoints({ target: s.target });
    await core.restoreRestorePoint({ target: s.target, id: list[list.length - 1].id, scope: 'machine' });
    assert.equal(packs().length, 3, 'the undo point made a pack');
    assertAllStored();
  });

  it('lookups across many packs, in this process and a fresh one; a merge keeps every object readable', async () => {
    const store = new ObjectStore(objects());
    await store.init();
    const bodies: string[] = [];
    for (let p = 0; p < 24; p++) {
      const w = await store.openPack();
      for (let k = 0; k < 3 + (p % 4); k++) {
        const b = `pack ${p} object ${k}\n`;
        bodies.push(b);
        await store.putBuffer(Buffer.from(b), w);
      }
      assert.equal((await store.commitPack(w)).packed, true);
    }
    assert.equal(packs().length, 24);
    for (const b of bodies) assert.equal((await store.read(sha(b))).toString(), b);
    const child = await runTs(
      `import { ObjectStore } from ${JSON.stringify(path.join(REPO_ROOT, 'sidecar/core/objects.ts'))};
       const st = new ObjectStore(${JSON.stringify(objects())});
       const hashes = ${JSON.stringify(bodies.map(sha))};
       (async () => { let ok = 0; for (const h of hashes) if ((await st.read(h)).length) ok++; console.log('read ' + ok); })();`,
    );
    assert.match(child.out, new RegExp(`read ${bodies.length}`), child.out);
    const r = await store.consolidatePacks();
    assert.ok(r && r.merged >= PACK_MERGE_AT, JSON.stringify(r));
    const after = packs();
    assert.ok(after.length <= 2, `${after.length} packs left`);
    const counts = after.map((f) => readPackIndex(f)!.count).sort((a, b) => a - b);
    assert.equal(geometricSplit(counts), 0, `a geometric progression: ${counts.join(', ')}`);
    for (const b of bodies) assert.equal((await store.read(sha(b))).toString(), b);
    for (const [h, n] of packed()) assert.equal(n, 1, `${h.slice(0, 8)} once`);
  });

  it('many creates: the packs stay few (merged), every restore point restores byte-identical; gc reclaims pack space', async () => {
    const core = new Core({ stateDir: s.state });
    const points: Array<{ id: string; tree: ReturnType<typeof describeTree> }> = [];
    for (let r = 0; r < 30; r++) {
      change(r, 2 + (r % 3));
      if (r % 5 === 4) fs.rmSync(path.join(s.tree, `d${r % 6}/sub1`), { recursive: true, force: true });
      const rp = await core.createRestorePoint({ target: s.target, stores: [] });
      points.push({ id: rp.id, tree: describeTree(s.tree) });
      assert.ok(packs().length < PACK_MERGE_AT + 4, `${packs().length} packs after create ${r + 1}`);
    }
    assertAllStored();
    const before = packs().reduce((n, f) => n + fs.statSync(f).size, 0);
    for (const p of [points[3], points[17], points[29]]) {
      put(s.tree, 'junk.txt', 'junk');
      await new Core({ stateDir: s.state }).restoreRestorePoint({ target: s.target, id: p.id, scope: 'machine' });
      assert.deepEqual(describeTree(s.tree), p.tree);
    }
    // delete all but the last two (and the undo points): the collection rewrites the merged packs
    for (const rp of await core.listRestorePoints({ target: s.target }))
      if (rp.id !== points[28].id && rp.id !== points[29].id)
        await core.deleteRestorePoint({ target: s.target, id: rp.id });
    const after = packs().reduce((n, f) => n + fs.statSync(f).size, 0);
    assert.ok(after < before, `pack bytes ${before} -> ${after}`);
    const refs = referencedObjects(s.state);
    for (const [h] of packed()) assert.ok(refs.has(h), `no garbage left in the packs: ${h.slice(0, 8)}`);
    assertAllStored();
    for (const p of [points[28], points[29]]) {
      put(s.tree, 'junk.txt', 'junk');
      await new Core({ stateDir: s.state }).restoreRestorePoint({ target: s.target, id: p.id, scope: 'machine' });
      assert.deepEqual(describeTree(s.tree), p.tree);
    }
  });

  for (const [step, n] of [
    ['read', 0],
    ['written', 0],
    ['renamed', 0],
    ['removed', 1],
    ['removed', 5],
  ] as const) {
    it(`SIGKILL of a real process during a merge (after ${step}${n ? ` ${n}` : ''}): every restore point restores byte-identical`, async () => {
      // 12 small creates: more packs than the merge threshold (AGENTKEEP_PACK_MERGE off in this process: no merge yet)
      const points: Array<{ id: string; tree: ReturnType<typeof describeTree> }> = [];
      const store = new ObjectStore(objects());
      const core = new Core({ stateDir: s.state });
      for (let r = 0; r < 7; r++) {
        change(r);
        const rp = await core.createRestorePoint({ target: s.target, stores: [] });
        points.push({ id: rp.id, tree: describeTree(s.tree) });
      }
      // more small packs, written directly, so a merge has many sources
      for (let p = 0; p < 6; p++) {
        const w = await store.openPack();
        for (let k = 0; k < 2; k++) await store.putBuffer(Buffer.from(`extra ${p} ${k}`), w);
        await store.commitPack(w);
      }
      const had = new Set(packed().keys());
      const child = await runTs(
        `import { ObjectStore } from ${JSON.stringify(path.join(REPO_ROOT, 'sidecar/core/objects.ts'))};
         const st = new ObjectStore(${JSON.stringify(objects())});
         st.consolidatePacks({ force: true, onStep: (s, n) => {
           if (s === ${JSON.stringify(step)} && n === ${n}) process.kill(process.pid, 'SIGKILL');
         } }).then((r) => console.log('ended ' + JSON.stringify(r)));`,
      );
      assert.equal(child.signal, 'SIGKILL', child.out);
      // every object that was in a pack still is (in its old pack or the merged one)
      const now = packed();
      for (const h of had) assert.ok(now.has(h), `object ${h.slice(0, 8)} kept`);
      if (step === 'renamed' || step === 'removed')
        assert.ok(
          [...now.values()].some((c) => c > 1),
          'duplicates',
        );
      for (const p of [points[0], points[3], points[6]]) {
        put(s.tree, 'junk.txt', 'junk');
        await new Core({ stateDir: s.state }).restoreRestorePoint({ target: s.target, id: p.id, scope: 'machine' });
        assert.deepEqual(describeTree(s.tree), p.tree);
      }
      // the dead writer's temp is swept by the next create; the next collection leaves one copy of each object
      await new Core({ stateDir: s.state }).deleteRestorePoint({ target: s.target, id: points[1].id });
      for (const [h, c] of packed()) assert.equal(c, 1, `${h.slice(0, 8)} in ${c} packs`);
      assert.deepEqual(fs.readdirSync(path.join(objects(), 'tmp')), []);
      assertAllStored();
      put(s.tree, 'junk.txt', 'junk');
      await new Core({ stateDir: s.state }).restoreRestorePoint({
        target: s.target,
        id: points[6].id,
        scope: 'machine',
      });
      assert.deepEqual(describeTree(s.tree), points[6].tree);
    });
  }

  it('a pack renamed in within the same mtime tick as the last listing is still found (a miss lists again)', async () => {
    const a = new ObjectStore(objects());
    const w = await a.openPack();
    for (const b of ['one', 'two']) await a.putBuffer(Buffer.from(b), w);
    await a.commitPack(w);
    const reader = packSetOf(objects());
    const tick = Math.floor(Date.now() / 1000) - 5; // whole seconds: set back exactly below
    fs.utimesSync(packDir(), tick, tick);
    reader.refresh(); // lists it at that mtime
    assert.ok(reader.locate(sha('one')), 'listed');
    // another process's pack, and the directory's mtime put back as the listing saw it (same tick)
    const child = await runTs(
      `import { ObjectStore } from ${JSON.stringify(path.join(REPO_ROOT, 'sidecar/core/objects.ts'))};
       const st = new ObjectStore(${JSON.stringify(objects())});
       (async () => { const w = await st.openPack(); for (const b of ['three', 'four']) await st.putBuffer(Buffer.from(b), w);
         await st.commitPack(w); console.log('done'); })();`,
    );
    assert.match(child.out, /done/);
    fs.utimesSync(packDir(), tick, tick);
    assert.equal(fs.statSync(packDir()).mtimeMs, tick * 1000);
    assert.equal(reader.readSync(sha('three'))?.toString(), 'three');
  });

  it('an older store of object files (no packs) is still read, and new creates on it pack', async () => {
    const saved = process.env.AGENTKEEP_PACK_MIN_OBJECTS;
    process.env.AGENTKEEP_PACK_MIN_OBJECTS = '1000000'; // as before packs: every object a file of its own
    const points: Array<{ id: string; tree: ReturnType<typeof describeTree> }> = [];
    try {
      const core = new Core({ stateDir: s.state });
      for (let r = 0; r < 3; r++) {
        change(r);
        points.push({
          id: (await core.createRestorePoint({ target: s.target, stores: [] })).id,
          tree: describeTree(s.tree),
        });
      }
      assert.deepEqual(packs(), []);
    } finally {
      if (saved === undefined) delete process.env.AGENTKEEP_PACK_MIN_OBJECTS;
      else process.env.AGENTKEEP_PACK_MIN_OBJECTS = saved;
    }
    const loose = storedObjects(s.state).length;
    change(9);
    const core = new Core({ stateDir: s.state });
    points.push({
      id: (await core.createRestorePoint({ target: s.target, stores: [] })).id,
      tree: describeTree(s.tree),
    });
    assert.equal(packs().length, 1);
    assert.equal(storedObjects(s.state).length, loose, 'the new create wrote no object file');
    for (const p of points) {
      put(s.tree, 'junk.txt', 'junk');
      await new Core({ stateDir: s.state }).restoreRestorePoint({ target: s.target, id: p.id, scope: 'machine' });
      assert.deepEqual(describeTree(s.tree), p.tree);
    }
  });

  it('a Core that stays open reads the packs another process (the CLI) wrote, also after that process merged them', async () => {
    const core = new Core({ stateDir: s.state });
    await core.createRestorePoint({ target: s.target, stores: [] });
    const trees: Array<{ id: string; tree: ReturnType<typeof describeTree> }> = [];
    for (let r = 0; r < PACK_MERGE_AT + 2; r++) {
      change(r);
      const out = await runSidecar(['restore-point', 'create', '--target', s.target, '--state-dir', s.state, '--json']);
      assert.equal(out.code, 0, out.stdout + out.stderr);
      trees.push({ id: (JSON.parse(out.stdout) as { id: string }).id, tree: describeTree(s.tree) });
    }
    // the CLI merged its small packs once they reached the threshold (a pack this Core listed is gone)
    assert.ok(packs().length < PACK_MERGE_AT, `${packs().length} packs`);
    for (const t of [trees[0], trees[trees.length - 1]]) {
      put(s.tree, 'junk.txt', 'junk');
      await core.restoreRestorePoint({ target: s.target, id: t.id, scope: 'machine' });
      assert.deepEqual(describeTree(s.tree), t.tree);
    }
    const f = await core.readRestorePointFile({ target: s.target, id: trees[0].id, path: 'd0/sub0/f0.txt' });
    assert.equal(f.content, 'round 0 0\n');
  });
});

/** Run TypeScript `code` in a child node process (tsx); how it ended and what it printed. */
function runTs(code: string): Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string }> {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ak-packsmall-child-')), 'child.ts');
  fs.writeFileSync(file, code);
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', file], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
    proc.on('error', reject);
    proc.on('exit', (c, sig) => {
      fs.rmSync(path.dirname(file), { recursive: true, force: true });
      resolve({ code: c, signal: sig, out });
    });
  });
}
