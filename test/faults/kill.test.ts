/**
 * kill -9 at random points of create, restore and memory edits (N runs each, AK_FAULTS_N). The
 * delay of each kill is drawn uniformly between the process start-up and 1.15 x the duration of an
 * uninterrupted run (10% of them during start-up), so kills land in every phase (scan, store, manifest, journal, writing the tree,
 * the memory file's temp + rename) and some after the end.
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
  put,
  report,
  rng,
  runAndKill,
  runSidecar,
  SEED,
  tempObjects,
  tempSetup,
  timeRun,
} from './harness';

describe(`kill -9 at random points (N=${N}, seed ${SEED})`, function () {
  this.timeout(0);
  before(() => buildSidecar());
  let s: ReturnType<typeof tempSetup>;
  beforeEach(() => {
    s = tempSetup('ak-faults-kill-');
  });
  afterEach(() => s.cleanup());

  /** Kill delay: 10% of runs during start-up, the rest uniform over the work (start-up .. 1.15 x a full run). */
  const delay = (r: () => number, startMs: number, fullMs: number): number =>
    Math.round(r() < 0.1 ? r() * startMs : startMs + r() * Math.max(50, fullMs * 1.15 - startMs));

  it('create: every restore point that exists restores its tree byte for byte; the next create leaves no orphan', async () => {
    const r = rng(SEED);
    makeTree(s.tree, 1);
    const args = (label: string): string[] => [
      '--state-dir',
      s.state,
      'restore-point',
      'create',
      '--target',
      s.target,
      '--label',
      label,
      '--json',
    ];
    const startMs = await timeRun(['--version']);
    const trees = new Map<string, Record<string, unknown>>([['warm-up', describeTree(s.tree)]]);
    await timeRun(args('warm-up'));
    makeTree(s.tree, 9);
    trees.set('warm-up-2', describeTree(s.tree));
    const fullMs = await timeRun(args('warm-up-2'));
    let killed = 0;
    let landed = 0;
    let orphansSeen = 0;
    for (let i = 0; i < N; i++) {
      makeTree(s.tree, 10 + i); // every file new: a full scan and store to be killed in
      mutateTree(s.tree, r, i);
      const before = describeTree(s.tree);
      trees.set(`run-${i}`, before);
      const res = await runAndKill(args(`run-${i}`), delay(r, startMs, fullMs));
      if (res.killed) killed++;
      else assert.equal(res.code, 0, res.stderr);
      assertSameTree(describeTree(s.tree), before, `run ${i}: a create never changes the tree`);
      checkState(s.state);
      if (orphanObjects(s.state).length) orphansSeen++;
    }
    // the next create collects what the killed ones left
    const last = await runSidecar(args('final'));
    assert.equal(last.code, 0, last.stderr);
    trees.set('final', describeTree(s.tree));
    assert.deepEqual(orphanObjects(s.state), [], 'no orphaned object after the next create');
    assert.deepEqual(tempObjects(s.state), []);
    assert.deepEqual(fs.readdirSync(path.join(s.state, 'locks', 'inflight')), []);
    // every restore point restores exactly what it captured
    const core = new Core({ stateDir: s.state });
    const points = await core.listRestorePoints({ target: s.target });
    for (const rp of points) {
      const want = trees.get(rp.label);
      assert.ok(want, `restore point ${rp.id} has a label of this run: ${rp.label}`);
      if (rp.label.startsWith('run-')) landed++;
      await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'both', stores: [] });
      assertSameTree(describeTree(s.tree), want, `restore of ${rp.label}`);
    }
    report('kill -9 during create', {
      runs: N,
      killed,
      completed: N - killed,
      restorePointsFromKilledOrCompletedRuns: landed,
      runsThatLeftOrphans: orphansSeen,
      restoresChecked: points.length,
      lost: 0,
    });
  });

  it('restore: a killed restore is either not started, complete, or marked; finishing it and its undo are byte for byte', async () => {
    const r = rng(SEED + 1);
    makeTree(s.tree, 2);
    const core = new Core({ stateDir: s.state });
    const a = await core.createRestorePoint({ target: s.target, stores: [], label: 'A' });
    const treeA = describeTree(s.tree);
    makeTree(s.tree, 3); // every file rewritten: the restore has a long write phase to be killed in
    for (let k = 0; k < 3; k++) mutateTree(s.tree, r, 100 + k);
    const treeB = describeTree(s.tree);
    const args = [
      '--state-dir',
      s.state,
      'restore-point',
      'restore',
      a.id,
      '--target',
      s.target,
      '--scope',
      'both',
      '--yes',
      '--json',
    ];
    const startMs = await timeRun(['--version']);
    const fullMs = await timeRun(args);
    // back to B for the runs (the warm-up restore's undo point holds B)
    const warm = (await core.listRestorePoints({ target: s.target })).find((p) => p.kind === 'pre-restore')!;
    await core.restoreRestorePoint({ target: s.target, id: warm.id, scope: 'both' });
    assertSameTree(describeTree(s.tree), treeB, 'back at B');
    const counts = { untouched: 0, complete: 0, half: 0, markerShown: 0, finished: 0, undone: 0 };
    for (let i = 0; i < N; i++) {
      const known = new Set((await core.listRestorePoints({ target: s.target })).map((p) => p.id));
      await runAndKill(args, delay(r, startMs, fullMs));
      checkState(s.state);
      const now = describeTree(s.tree);
      const status = await core.agentStatus({ target: s.target });
      const undo = (await core.listRestorePoints({ target: s.target })).find(
        (p) => !known.has(p.id) && p.kind === 'pre-restore',
      );
      const same = (x: Record<string, unknown>): boolean => JSON.stringify(x) === JSON.stringify(now);
      if (same(treeB)) counts.untouched++;
      else if (same(treeA)) counts.complete++;
      else {
        counts.half++;
        assert.ok(status.interruptedRestore, `run ${i}: a half-restored tree is always reported`);
        assert.ok(undo && status.interruptedRestore.undo === undo.id, `run ${i}: the marker names the undo point`);
        counts.markerShown++;
      }
      if (i % 2 === 0 && !same(treeB)) {
        // finish it: restore A again
        await core.restoreRestorePoint({ target: s.target, id: a.id, scope: 'both' });
        assertSameTree(describeTree(s.tree), treeA, `run ${i}: finished restore`);
        counts.finished++;
      }
      if (!same(treeB) || undo) {
        // go back to B with the killed run's undo point (it captured B before writing anything)
        if (undo) {
          await core.restoreRestorePoint({ target: s.target, id: undo.id, scope: 'both' });
          counts.undone++;
        } else await core.restoreRestorePoint({ target: s.target, id: warm.id, scope: 'both' });
      }
      assertSameTree(describeTree(s.tree), treeB, `run ${i}: back at B`);
      assert.equal(
        (await core.agentStatus({ target: s.target })).interruptedRestore,
        undefined,
        'a finished restore clears the marker',
      );
    }
    await core.pruneRestorePoints({ target: s.target });
    assert.deepEqual(orphanObjects(s.state), []);
    report('kill -9 during restore', { runs: N, ...counts, lost: 0 });
  });

  it('restore making files where nothing was (created in place): a killed restore, finished, is byte for byte', async () => {
    const r = rng(SEED + 3);
    makeTree(s.tree, 4);
    for (let i = 0; i < 300; i++) put(s.tree, `gen/g${i % 10}/n-${i}.txt`, `generated ${i}\n`.repeat(1 + (i % 9)));
    const core = new Core({ stateDir: s.state });
    const a = await core.createRestorePoint({ target: s.target, stores: [], label: 'A' });
    const treeA = describeTree(s.tree);
    // B: none of gen/ and src/ (500 files the restore of A creates where nothing is), a few edits
    fs.rmSync(`${s.tree}/gen`, { recursive: true });
    fs.rmSync(`${s.tree}/src`, { recursive: true });
    mutateTree(s.tree, r, 300);
    const b = await core.createRestorePoint({ target: s.target, stores: [], label: 'B' });
    const treeB = describeTree(s.tree);
    const args = ['--state-dir', s.state, 'restore-point', 'restore', a.id, '--target', s.target];
    const startMs = await timeRun(['--version']);
    const fullMs = await timeRun([...args, '--scope', 'machine', '--yes', '--json']);
    const counts = { untouched: 0, complete: 0, half: 0, finished: 0 };
    for (let i = 0; i < N; i++) {
      await core.restoreRestorePoint({ target: s.target, id: b.id, scope: 'machine' });
      assertSameTree(describeTree(s.tree), treeB, `run ${i}: at B`);
      await runAndKill([...args, '--scope', 'machine', '--yes', '--json'], delay(r, startMs, fullMs));
      checkState(s.state);
      const now = JSON.stringify(describeTree(s.tree));
      if (now === JSON.stringify(treeB)) counts.untouched++;
      else if (now === JSON.stringify(treeA)) counts.complete++;
      else {
        counts.half++;
        assert.ok(
          (await core.agentStatus({ target: s.target })).interruptedRestore,
          `run ${i}: reported as half-restored`,
        );
      }
      // finish it (the CLI's "Finish the restore": restore A again): every path byte for byte, partial files included
      await core.restoreRestorePoint({ target: s.target, id: a.id, scope: 'machine' });
      assertSameTree(describeTree(s.tree), treeA, `run ${i}: finished restore`);
      counts.finished++;
    }
    report('kill -9 during a restore that creates files in place', { runs: N, ...counts, lost: 0 });
  });

  it('memory edits: MEMORY.md is always the old or the new bytes, never torn; the next edit works', async () => {
    const r = rng(SEED + 2);
    const home = path.join(s.base, 'hermes');
    const entries = Array.from(
      { length: 40 },
      (_, i) => `Fact number ${i}: the agent learned something ${'x'.repeat(i % 9)}.`,
    );
    put(home, 'memories/MEMORY.md', entries.join('\n§\n'));
    put(home, 'memories/USER.md', 'User likes short answers.');
    put(home, 'config.yaml', 'memory:\n  memory_char_limit: 100000\n  user_char_limit: 1375\n');
    const store = `hermes:${home}`;
    const file = path.join(home, 'memories', 'MEMORY.md');
    const add = (text: string): string[] => [
      '--state-dir',
      s.state,
      'memory',
      'add',
      '--store',
      store,
      '--text',
      text,
      '--json',
    ];
    const startMs = await timeRun(['--version']);
    const fullMs = await timeRun(add('Warm-up fact.'));
    const counts = { landed: 0, notLanded: 0, tempsLeft: 0 };
    for (let i = 0; i < N; i++) {
      const before = fs.readFileSync(file);
      const text = `Fact added in run ${i}.`;
      const after = Buffer.concat([before, Buffer.from(`\n§\n${text}`)]);
      await runAndKill(add(text), delay(r, startMs, fullMs));
      const now = fs.readFileSync(file);
      if (now.equals(after)) counts.landed++;
      else {
        assert.ok(
          now.equals(before),
          `run ${i}: MEMORY.md is neither the old nor the new bytes:\n${now.toString().slice(-200)}`,
        );
        counts.notLanded++;
      }
      const temps = fs.readdirSync(path.join(home, 'memories')).filter((n) => n.startsWith('.ak-tmp-'));
      counts.tempsLeft += temps.length;
      for (const t of temps) fs.rmSync(path.join(home, 'memories', t)); // (a killed write's temp; never read by Hermes)
    }
    // the lock of a killed writer does not block the next edit
    const next = await runSidecar(add('After the kills.'));
    assert.equal(next.code, 0, next.stderr);
    const list = await new Core({ stateDir: s.state }).listMemory({ stores: [store] });
    const mem = list.stores.find((f) => f.kind === 'hermes-memory')!;
    assert.ok(mem.entries.some((e) => e.text === 'After the kills.'));
    assert.equal(mem.entries.length, 40 + 1 + counts.landed + 1);
    report('kill -9 during memory add', { runs: N, ...counts, lost: 0 });
  });

  it('kill -9 during memory forget --apply: each file is its old or its new bytes, never a part of the edit set', async () => {
    const r = rng(SEED + 3);
    const home = path.join(s.base, 'hermes');
    const key = 'staging_ed25519';
    const facts = Array.from({ length: 30 }, (_, i) => `Fact number ${i}: the agent learned something.`);
    // three entries of MEMORY.md and two of USER.md hold the key: five edits in two files
    const memText = [
      ...facts.slice(0, 10),
      `Key ${key} (a)`,
      ...facts.slice(10, 20),
      `Key ${key} (b)`,
      `Key ${key} (c)`,
    ];
    const userText = ['User likes short answers.', `User's key is ${key}`, `Again: ${key}`];
    put(home, 'config.yaml', 'memory:\n  memory_char_limit: 100000\n  user_char_limit: 100000\n');
    const store = `hermes:${home}`;
    const mem = path.join(home, 'memories', 'MEMORY.md');
    const user = path.join(home, 'memories', 'USER.md');
    const forget = ['--state-dir', s.state, 'memory', 'forget', '--store', store, '--text', key, '--apply', '--yes'];
    const reset = (): void => {
      put(home, 'memories/MEMORY.md', memText.join('\n§\n'));
      put(home, 'memories/USER.md', userText.join('\n§\n'));
    };
    reset();
    const startMs = await timeRun(['--version']);
    const proposal = await new Core({ stateDir: s.state }).memoryForget({ stores: [store], text: key });
    assert.equal(proposal.edits.length, 5);
    const after = new Map(proposal.files.map((f) => [f.file, f.after]));
    const fullMs = await timeRun(forget);
    const counts = { none: 0, memoryOnly: 0, userOnly: 0, both: 0, tempsLeft: 0 };
    for (let i = 0; i < N; i++) {
      reset();
      const before = new Map([mem, user].map((f) => [f, fs.readFileSync(f, 'utf8')]));
      await runAndKill(forget, delay(r, startMs, fullMs));
      const done = [mem, user].map((f) => {
        const now = fs.readFileSync(f, 'utf8');
        if (now === after.get(f)) return true;
        assert.equal(now, before.get(f), `run ${i}: ${path.basename(f)} is neither its old nor its new bytes`);
        return false;
      });
      counts[done[0] ? (done[1] ? 'both' : 'memoryOnly') : done[1] ? 'userOnly' : 'none']++;
      const temps = fs.readdirSync(path.join(home, 'memories')).filter((n) => n.startsWith('.ak-tmp-'));
      counts.tempsLeft += temps.length;
      for (const t of temps) fs.rmSync(path.join(home, 'memories', t));
    }
    assert.equal(counts.userOnly, 0, 'files are written in the order of the proposal');
    // a killed writer's lock does not block the next apply
    reset();
    const next = await runSidecar(forget);
    assert.equal(next.code, 0, next.stderr);
    assert.equal(fs.readFileSync(mem, 'utf8'), after.get(mem));
    assert.equal(fs.readFileSync(user, 'utf8'), after.get(user));
    report('kill -9 during memory forget --apply', { runs: N, ...counts, torn: 0 });
  });
});
