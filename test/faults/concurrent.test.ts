/**
 * Concurrent CLI calls on one state dir: parallel creates of one target (they queue on its lock or
 * fail target_busy, never corrupt), creates of other targets that share contents with a target
 * whose restore points are deleted meanwhile (garbage collection next to deduplicating writers:
 * an object a create found already stored must never be collected under it), and a restore racing
 * creates of other targets. Every restore point that exists restores byte for byte.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import {
  assertSameTree,
  buildSidecar,
  checkState,
  describeTree,
  makeTree,
  mutateTree,
  N,
  orphanObjects,
  report,
  rng,
  runSidecar,
  SEED,
  tempSetup,
} from './harness';

describe(`concurrent CLI calls (${Math.max(2, Math.ceil(N / 5))} rounds, seed ${SEED})`, function () {
  this.timeout(0);
  before(() => buildSidecar());

  it('parallel creates, deletes (GC) and a restore on targets sharing objects: nothing lost, no orphan after', async () => {
    const r = rng(SEED + 4);
    const rounds = Math.max(2, Math.ceil(N / 5));
    const s = tempSetup('ak-faults-conc-');
    const trees = ['t1', 't2', 't3'].map((n) => path.join(s.base, n));
    const ak = (...args: string[]) => runSidecar(['--state-dir', s.state, ...args]);
    const counts = { calls: 0, ok: 0, busy: 0, restorePointsChecked: 0 };
    try {
      for (const t of trees) makeTree(t, 5); // identical contents: every object shared by the three targets
      const core = new Core({ stateDir: s.state });
      const restoreTarget = trees[2];
      const base = await core.createRestorePoint({ target: `dir:${restoreTarget}`, stores: [], label: 'base' });
      const baseTree = describeTree(restoreTarget);
      const expected = new Map<string, Record<string, unknown>>();
      for (let round = 0; round < rounds; round++) {
        mutateTree(trees[0], r, round);
        mutateTree(trees[1], r, round + 50);
        mutateTree(restoreTarget, r, round + 90);
        const snap = [describeTree(trees[0]), describeTree(trees[1])];
        const old = (await core.listRestorePoints({ target: `dir:${trees[0]}` })).map((p) => p.id);
        const calls: Array<Promise<{ code: number | null; stdout: string; stderr: string }>> = [];
        for (let k = 0; k < 4; k++)
          calls.push(ak('restore-point', 'create', '--target', `dir:${trees[0]}`, '--label', `r${round}-t1`, '--json'));
        for (let k = 0; k < 2; k++)
          calls.push(ak('restore-point', 'create', '--target', `dir:${trees[1]}`, '--label', `r${round}-t2`, '--json'));
        for (const id of old.slice(0, 2))
          calls.push(ak('restore-point', 'delete', id, '--target', `dir:${trees[0]}`, '--yes', '--json'));
        calls.push(
          ak(
            'restore-point',
            'restore',
            base.id,
            '--target',
            `dir:${restoreTarget}`,
            '--scope',
            'both',
            '--yes',
            '--json',
          ),
        );
        calls.push(ak('restore-point', 'prune', '--target', `dir:${trees[1]}`, '--keep', '3', '--json'));
        const results = await Promise.all(calls);
        for (const res of results) {
          counts.calls++;
          if (res.code === 0) counts.ok++;
          else {
            const err = JSON.parse(res.stdout || res.stderr).error;
            assert.equal(err.code, 'target_busy', `${err.code}: ${err.message}`);
            counts.busy++;
          }
        }
        assertSameTree(describeTree(restoreTarget), baseTree, `round ${round}: the restore ran next to the others`);
        checkState(s.state);
        expected.set(`r${round}-t1`, snap[0]);
        expected.set(`r${round}-t2`, snap[1]);
      }
      // every restore point of t1 and t2 restores exactly what its round captured
      for (const [i, t] of trees.slice(0, 2).entries()) {
        for (const rp of await core.listRestorePoints({ target: `dir:${t}` })) {
          const want = expected.get(rp.label);
          assert.ok(want, `${rp.label} is a label of this run (t${i + 1})`);
          await core.restoreRestorePoint({ target: `dir:${t}`, id: rp.id, scope: 'both', stores: [] });
          assertSameTree(describeTree(t), want, `restore of ${rp.label}`);
          counts.restorePointsChecked++;
        }
      }
      await core.pruneRestorePoints({ target: `dir:${trees[0]}` });
      assert.deepEqual(orphanObjects(s.state), [], 'no orphan once nothing runs');
      assert.deepEqual(
        fs.readdirSync(path.join(s.state, 'locks')).filter((n) => n.endsWith('.lock')),
        [],
      );
    } finally {
      s.cleanup();
    }
    report('concurrent CLI calls', { rounds, ...counts, lost: 0 });
  });
});
