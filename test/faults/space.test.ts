/**
 * ENOSPC: the state dir on a small real tmpfs of a random size (2-24 MiB) while the tree holds
 * 16 MiB that does not compress. Per run: a create either fits or fails with DiskFull naming the
 * file system and leaves nothing behind; a restore whose undo point does not fit changes nothing
 * and says so; `--no-undo-point --yes` then restores byte for byte; prune works even when the
 * file system is filled to the last byte by something else.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { AgentKeepError } from '../../sidecar/core/errors';
import {
  assertSameTree,
  buildSidecar,
  checkState,
  describeTree,
  fillUp,
  mountTmpfs,
  N,
  orphanObjects,
  pseudoRandom,
  put,
  report,
  rng,
  runSidecar,
  SEED,
  tempObjects,
  tempSetup,
} from './harness';

const MiB = 1024 * 1024;

describe(`ENOSPC on a small tmpfs (${Math.max(3, Math.ceil(N / 3))} sizes, seed ${SEED})`, function () {
  this.timeout(0);
  before(() => buildSidecar());

  it('create, restore and prune on a state dir that fills up: nothing half-written, nothing lost', async () => {
    const r = rng(SEED + 3);
    const runs = Math.max(3, Math.ceil(N / 3));
    const counts = {
      creates: 0,
      createDiskFull: 0,
      restoresRefused: 0,
      restoredWithoutUndo: 0,
      restoredWithUndo: 0,
      prunesOnFullFs: 0,
    };
    for (let i = 0; i < runs; i++) {
      const s = tempSetup('ak-faults-space-');
      // sizes in bins around what the 16 MiB change needs, so both outcomes occur: 4, 9, 14, 20, 28 MiB (+ up to 1 MiB)
      const size = Math.round(([4, 9, 14, 20, 28][i % 5] + r()) * MiB);
      const small = mountTmpfs(size);
      try {
        const state = path.join(small.mnt, 'state');
        const core = new Core({ stateDir: state, lockTimeoutMs: 5000 });
        put(s.tree, 'notes.md', 'small start\n');
        const a = await core.createRestorePoint({ target: s.target, stores: [] });
        const treeA = describeTree(s.tree);
        for (let k = 0; k < 16; k++) put(s.tree, `blobs/${k}.bin`, pseudoRandom(MiB, i * 100 + k + 1));
        const treeB = describeTree(s.tree);
        counts.creates++;
        const created = await core.createRestorePoint({ target: s.target, stores: [] }).catch((e: unknown) => e);
        if (created instanceof AgentKeepError) {
          assert.equal(created.kind, 'DiskFull', created.message);
          assert.ok(created.message.includes(small.mnt) && /free of/.test(created.message), created.message);
          assert.doesNotMatch(`${created.message} ${created.hint}`, /permission/i);
          counts.createDiskFull++;
        } else assert.ok(!(created instanceof Error), String(created));
        checkState(state);
        assert.deepEqual(orphanObjects(state), [], `size ${size}: nothing left by the create`);
        assert.deepEqual(tempObjects(state), []);
        assertSameTree(describeTree(s.tree), treeB, 'a create never changes the tree');

        // restore A: its undo point (16 MiB) may not fit
        const res = await core
          .restoreRestorePoint({ target: s.target, id: a.id, scope: 'both' })
          .catch((e: unknown) => e);
        if (res instanceof AgentKeepError) {
          assert.equal(res.kind, 'DiskFull', res.message);
          assert.match(res.hint ?? '', /--no-undo-point --yes/);
          assertSameTree(describeTree(s.tree), treeB, 'a refused restore changes nothing');
          assert.deepEqual(orphanObjects(state), []);
          counts.restoresRefused++;
          const cli = await runSidecar([
            '--state-dir',
            state,
            'restore-point',
            'restore',
            a.id,
            '--target',
            s.target,
            '--scope',
            'both',
            '--no-undo-point',
            '--yes',
          ]);
          assert.equal(cli.code, 0, cli.stderr);
          counts.restoredWithoutUndo++;
        } else {
          assert.ok(!(res instanceof Error), String(res));
          counts.restoredWithUndo++;
        }
        assertSameTree(describeTree(s.tree), treeA, 'restored byte for byte');

        // something else fills the file system to the last byte: prune still works
        fillUp(small.mnt);
        const p = await core.pruneRestorePoints({ target: s.target, keep: 1, minAgeMs: 0 });
        assert.ok(p.deleted.length >= 0);
        counts.prunesOnFullFs++;
        checkState(state);
        assert.deepEqual(orphanObjects(state), []);
      } finally {
        small.cleanup();
        s.cleanup();
      }
    }
    report('ENOSPC on a small tmpfs', { runs, ...counts, lost: 0 });
    assert.equal(counts.creates, runs);
  });

  it('the CLI says disk_full (exit 1) naming the tmpfs and the prune command, and leaves nothing', async () => {
    const s = tempSetup('ak-faults-space-cli-');
    const small = mountTmpfs(3 * MiB);
    try {
      for (let k = 0; k < 6; k++) put(s.tree, `blobs/${k}.bin`, pseudoRandom(MiB, k + 7));
      const state = path.join(small.mnt, 'state');
      const res = await runSidecar(['--state-dir', state, 'restore-point', 'create', '--target', s.target, '--json']);
      assert.equal(res.code, 1);
      const err = JSON.parse(res.stdout || res.stderr).error;
      assert.equal(err.code, 'disk_full');
      assert.match(err.message, new RegExp(`${small.mnt} \\(tmpfs\\)`));
      assert.ok(
        err.actions.some((a: { method: string }) => a.method === 'agentkeep/restorePoint.prune'),
        JSON.stringify(err),
      );
      assert.deepEqual(orphanObjects(state), []);
      assert.ok(
        !fs.existsSync(path.join(state, 'journal')) ||
          fs
            .readdirSync(path.join(state, 'journal'))
            .every((k) => fs.readdirSync(path.join(state, 'journal', k)).every((n) => !n.startsWith('ak_'))),
      );
    } finally {
      small.cleanup();
      s.cleanup();
    }
  });
});
