/**
 * Issue 13 #2: a state dir on a small real file system (tmpfs) that fills up. A failed create
 * leaves nothing behind, errors name the full file system (mount point, free bytes) and the fix,
 * a restore explains its choice (free space, or --no-undo-point after a confirmation), and prune
 * and delete still work on a file system full to the last byte (the space reserve).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { describeTree, pseudoRandom, put, tempSetup } from './dir-fixtures';
import { expectAgentKeepError } from './helpers/errors';
import { bytesOnlyIn } from './helpers/manifests';
import { buildSidecar, runSidecar } from './helpers/sidecar';
import { fillUp, mountTmpfs, orphanObjects, storedObjects, tempObjects, type SmallFs } from './helpers/tmpfs';

const MiB = 1024 * 1024;

describe('a full state dir (issue 13 #2, real tmpfs)', function () {
  this.timeout(120000);
  let s: ReturnType<typeof tempSetup>;
  let small: SmallFs;
  let state: string;
  let core: Core;
  before(() => buildSidecar());
  beforeEach(() => {
    s = tempSetup('ak-space-');
    small = mountTmpfs(8 * MiB);
    state = path.join(small.mnt, 'state');
    core = new Core({ stateDir: state, lockTimeoutMs: 3000 });
    put(s.tree, 'notes.txt', 'small\n');
  });
  afterEach(() => {
    small.cleanup();
    s.cleanup();
  });
  const addBig = (n: number, seed = 1): void => {
    for (let i = 0; i < n; i++) put(s.tree, `big/${seed}-${i}.bin`, pseudoRandom(MiB, seed * 100 + i + 1));
  };
  const inflight = (): string[] => fs.readdirSync(path.join(state, 'locks', 'inflight'));

  it('a create that does not fit fails with DiskFull naming the file system, and leaves nothing behind', async () => {
    addBig(12);
    const e = await expectAgentKeepError(core.createRestorePoint({ target: s.target, stores: [] }), 'DiskFull');
    assert.ok(e.message.includes(small.mnt), e.message);
    assert.match(e.message, /\(tmpfs\), now [\d.]+ (MiB|KiB|B) free of 8\.0 MiB/);
    assert.match(e.message, /What this create had stored was removed/);
    assert.match(e.hint ?? '', new RegExp(`Free space on ${small.mnt}: prune or delete restore points`));
    assert.deepEqual(
      e.actions?.map((a) => [a.method, a.params?.target, a.params?.dryRun]),
      [
        ['agentkeep/restorePoint.prune', s.target, undefined],
        ['agentkeep/restorePoint.prune', s.target, true],
      ],
    );
    assert.doesNotMatch(`${e.message} ${e.hint}`, /permission/i);
    assert.deepEqual(storedObjects(state), [], 'the objects it stored were collected at once');
    assert.deepEqual(tempObjects(state), []);
    assert.deepEqual(inflight(), [], 'no marker left');
    assert.deepEqual(await core.listRestorePoints({ target: s.target }), []);
    const st = fs.statfsSync(small.mnt);
    assert.ok(st.bavail * st.bsize > 7 * MiB, 'the space is free again');
    // and the next create of what fits works
    fs.rmSync(path.join(s.tree, 'big'), { recursive: true });
    addBig(2);
    const rp = await core.createRestorePoint({ target: s.target, stores: [] });
    assert.equal(rp.machine.files, 4, 'notes.txt, big/ and its two files');
  });

  it('a restore whose undo point does not fit explains the choice; --no-undo-point needs a confirmation', async () => {
    const original = describeTree(s.tree);
    const rp = await core.createRestorePoint({ target: s.target, stores: [] });
    addBig(12); // the agent wrote 12 MiB since
    const now = describeTree(s.tree);
    const e = await expectAgentKeepError(
      core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'both' }),
      'DiskFull',
    );
    assert.match(
      e.message,
      new RegExp(`The restore of ${rp.id} did not start: its undo point .* does not fit in the state dir`),
    );
    assert.match(e.message, /Nothing in the target was changed/);
    assert.ok(e.message.includes(small.mnt));
    assert.match(
      e.hint ?? '',
      /free space on .* or restore without an undo point, so that the current state is lost for good/,
    );
    const noUndo = e.actions?.find((a) => a.params?.noUndoPoint);
    assert.deepEqual(noUndo?.params, {
      target: s.target,
      id: rp.id,
      scope: 'both',
      noUndoPoint: true,
      confirmed: true,
    });
    assert.ok(e.actions?.some((a) => a.method === 'agentkeep/restorePoint.prune'));
    // the CLI prints both choices as command lines
    const said = await runSidecar([
      '--state-dir',
      state,
      'restore-point',
      'restore',
      rp.id,
      '--target',
      s.target,
      '--scope',
      'both',
      '--yes',
    ]);
    assert.equal(said.code, 1);
    assert.match(
      said.stderr,
      new RegExp(`restore-point restore ${rp.id} --target \\S+ --state-dir \\S+ --scope both --no-undo-point --yes`),
    );
    assert.match(said.stderr, /restore-point prune --target \S+ --state-dir \S+ --keep 5/);
    assert.deepEqual(describeTree(s.tree), now, 'the tree is untouched');
    assert.deepEqual(orphanObjects(state), [], 'the partial undo point was collected');
    assert.deepEqual(
      (await core.listRestorePoints({ target: s.target })).map((r) => r.id),
      [rp.id],
    );

    await expectAgentKeepError(
      core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'both', noUndoPoint: true }),
      'ConfirmationRequired',
      /without an undo point/,
    );
    assert.deepEqual(describeTree(s.tree), now);
    const cli = await runSidecar([
      '--state-dir',
      state,
      'restore-point',
      'restore',
      rp.id,
      '--target',
      s.target,
      '--scope',
      'both',
      '--no-undo-point',
      '--json',
    ]);
    assert.equal(cli.code, 1);
    assert.equal(JSON.parse(cli.stdout || cli.stderr).error.code, 'confirmation_required');
    assert.deepEqual(describeTree(s.tree), now);

    const done = await runSidecar([
      '--state-dir',
      state,
      'restore-point',
      'restore',
      rp.id,
      '--target',
      s.target,
      '--scope',
      'both',
      '--no-undo-point',
      '--yes',
    ]);
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /Undo: none \(restored without an undo point\)/);
    assert.deepEqual(describeTree(s.tree), original, 'restored byte for byte');
    assert.equal((await core.listRestorePoints({ target: s.target })).length, 1, 'no pre-restore point');
  });

  it('on a file system full to the last byte: prune still frees space (the reserve); a create says DiskFull and leaves no lock', async () => {
    put(s.tree, 'only-in-a.bin', pseudoRandom(MiB, 5));
    const a = await core.createRestorePoint({ target: s.target, stores: [] });
    fs.rmSync(path.join(s.tree, 'only-in-a.bin'));
    addBig(3);
    const b = await core.createRestorePoint({ target: s.target, stores: [] });
    assert.ok(fs.existsSync(path.join(state, 'space-reserve')), 'the reserve was written while there was room');
    const mf = (id: string): string =>
      path.join(state, 'dir', fs.readdirSync(path.join(state, 'dir'))[0], `${id}.json`);
    const only = bytesOnlyIn(state, mf(a.id), [mf(b.id)]); // 1 MiB of content, and its root tree (format 2)
    assert.ok(only > MiB && only < MiB + 1024, `${only}`);
    fillUp(small.mnt);
    const pruned = await core.pruneRestorePoints({ target: s.target, keep: 1, minAgeMs: 0 });
    assert.deepEqual(
      pruned.deleted.map((d) => d.id),
      [a.id],
    );
    assert.equal(pruned.freedBytes, only);
    assert.ok(fs.existsSync(path.join(state, 'space-reserve')), 'the reserve is back once there is room');

    fillUp(small.mnt, path.join(small.mnt, 'ballast2'));
    put(s.tree, 'more.bin', pseudoRandom(256 * 1024, 77)); // more than the reserve gives back
    const e = await expectAgentKeepError(
      core.createRestorePoint({ target: s.target, stores: [] }),
      'DiskFull',
      new RegExp(small.mnt),
    );
    assert.doesNotMatch(`${e.message} ${e.hint}`, /permission/i);
    assert.deepEqual(
      fs.readdirSync(path.join(state, 'locks')).filter((n) => n.endsWith('.lock')),
      [],
      'no lock file left',
    );
    assert.deepEqual(inflight(), []);
    assert.deepEqual(orphanObjects(state), []);
    assert.deepEqual(tempObjects(state), []);
    fs.rmSync(path.join(small.mnt, 'ballast'));
    fs.rmSync(path.join(small.mnt, 'ballast2'));
    const del = await core.deleteRestorePoint({ target: s.target, id: b.id });
    assert.ok(del.freedBytes >= 3 * MiB, `freed ${del.freedBytes}`);
    assert.deepEqual(storedObjects(state), []);
  });

  it('a restore into a full target file system says the target is full and names the undo point', async () => {
    const t = mountTmpfs(4 * MiB, 'ak-tmpfs-target-');
    try {
      const tree = path.join(t.mnt, 'tree');
      const target = `dir:${tree}`;
      const c = new Core({ stateDir: path.join(s.base, 'state2') });
      put(tree, 'big.bin', pseudoRandom(2 * MiB, 11));
      const rp = await c.createRestorePoint({ target, stores: [] });
      fs.rmSync(path.join(tree, 'big.bin'));
      fillUp(t.mnt, path.join(t.mnt, 'outside-the-target.bin')); // something else fills that file system
      const e = await expectAgentKeepError(c.restoreRestorePoint({ target, id: rp.id, scope: 'both' }), 'DiskFull');
      assert.match(
        e.message,
        new RegExp(
          `Restore of ${rp.id} stopped: Cannot restore files into ${tree}: the file system ${t.mnt} \\(tmpfs\\) is full`,
        ),
      );
      assert.match(e.message, /The state before the restore was saved as restore point ak_/);
      assert.equal(e.actions?.[0]?.title, 'Undo');
      assert.match(String(e.actions?.[0]?.params?.id), /^ak_/);
      assert.deepEqual(
        fs.readdirSync(tree).filter((n) => n.startsWith('.ak-tmp-')),
        [],
        'no temp left in the target',
      );
    } finally {
      t.cleanup();
    }
  });

  it('prune frees what a failed create left when its collection could not run (another create in flight)', async () => {
    // A failed create's objects stay while another operation runs; its marker says "collect me".
    const marker = path.join(state, 'locks', 'inflight');
    await core.createRestorePoint({ target: s.target, stores: [] });
    fs.mkdirSync(path.join(state, 'objects', 'ab'), { recursive: true });
    fs.writeFileSync(path.join(state, 'objects', 'ab', 'ab'.padEnd(64, '0')), pseudoRandom(MiB, 9));
    fs.writeFileSync(path.join(marker, `failed-${process.pid}-0123456789ab`), '{}');
    const r = await core.pruneRestorePoints({ target: s.target });
    assert.equal(r.deleted.length, 0);
    assert.equal(r.freedBytes, MiB);
    assert.deepEqual(orphanObjects(state), []);
    assert.deepEqual(inflight(), []);
  });
});
