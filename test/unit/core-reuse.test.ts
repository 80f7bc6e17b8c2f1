/**
 * restorePoint.create `reuse` (the rule of Snapshot & run and "Restore point before editing", now in
 * the core for every front end): the newest restore point is returned while it is young, covers the
 * stores and nothing differs from it; otherwise a new one is made.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { call } from '../../sidecar/core/dispatch';
import { makeHermesHome, put, tempSetup } from './dir-fixtures';

describe('core: restorePoint.create with reuse', function () {
  let s: ReturnType<typeof tempSetup>;
  let core: Core;
  let store: string;
  let home: string;

  beforeEach(() => {
    s = tempSetup('ak-reuse-');
    core = new Core({ stateDir: s.state });
    home = path.join(s.tree, '.hermes');
    makeHermesHome(home);
    store = `hermes:${home}`;
    put(s.tree, 'workspace/setup.sh', 'npm install left-pad\n');
  });
  afterEach(() => s.cleanup());

  it('reuses the newest restore point while nothing changed; a change, a missing store or age: a new one', async () => {
    const first = await call(core, 'restorePointCreate', {
      target: s.target,
      stores: [store],
      kind: 'pre',
      label: 'a',
    });
    assert.equal(first.reused, undefined);
    const again = await call(core, 'restorePointCreate', {
      target: s.target,
      stores: [store],
      kind: 'pre',
      label: 'b',
      reuse: true,
    });
    assert.equal(again.reused, true);
    assert.equal(again.id, first.id);
    assert.equal(again.label, 'a', 'the reused restore point as it is');
    assert.equal((await core.listRestorePoints({ target: s.target })).length, 1, 'nothing was created');

    // without reuse: always a new one
    const plain = await core.createRestorePoint({ target: s.target, stores: [store] });
    assert.notEqual(plain.id, first.id);

    // agent state changed since: not reused
    fs.appendFileSync(path.join(home, 'memories/MEMORY.md'), '§\nLearned something.\n');
    const afterMemory = await core.createRestorePoint({ target: s.target, stores: [store], reuse: true });
    assert.equal(afterMemory.reused, undefined);

    // a machine file changed since: not reused
    put(s.tree, 'workspace/new.txt', 'x');
    const afterFile = await core.createRestorePoint({ target: s.target, stores: [store], reuse: true });
    assert.equal(afterFile.reused, undefined);

    // a store the newest one did not capture: not reused
    const other = path.join(s.base, 'other-home');
    makeHermesHome(other);
    const wider = await core.createRestorePoint({ target: s.target, stores: [store, `hermes:${other}`], reuse: true });
    assert.equal(wider.reused, undefined);

    // older than the window: not reused
    await new Promise((r) => setTimeout(r, 30));
    const late = await core.createRestorePoint({ target: s.target, stores: [store], reuse: true, reuseWithinMs: 10 });
    assert.equal(late.reused, undefined);
    const young = await core.createRestorePoint({ target: s.target, stores: [store], reuse: true });
    assert.equal(young.reused, true);
    assert.equal(young.id, late.id);
  });

  it('a reuse asked for as important marks the reused restore point important (never drops the flag)', async () => {
    const first = await core.createRestorePoint({ target: s.target, stores: [store], label: 'a' });
    assert.equal(first.important, undefined);
    const again = await core.createRestorePoint({ target: s.target, stores: [store], reuse: true, important: true });
    assert.equal(again.reused, true);
    assert.equal(again.id, first.id);
    assert.equal(again.important, true);
    const [listed] = await core.listRestorePoints({ target: s.target });
    assert.equal(listed.important, true, 'the journal holds the flag, not only the answer');
    // and a later plain reuse does not clear it
    const third = await core.createRestorePoint({ target: s.target, stores: [store], reuse: true });
    assert.equal(third.important, true);
  });
});
