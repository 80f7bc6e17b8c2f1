import * as assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { RestorePoint } from '../../sidecar/protocol';
import { planPrune } from '../../sidecar/core/retention';
import { Core } from '../../sidecar/core/core';
import { dispatch } from '../../sidecar/core/dispatch';
import { AgentKeepError } from '../../sidecar/core/errors';
import { ageRestorePoint, buildSidecar, cliRunner } from './helpers/sidecar';

const HOUR = 3_600_000;
const NOW = Date.parse('2026-06-01T12:00:00.000Z');

/** A restore point created `ageH` hours before NOW. */
function rp(id: string, ageH: number, extra: Partial<RestorePoint> = {}): RestorePoint {
  return {
    id,
    target: 'dir:/x',
    label: id,
    createdAt: new Date(NOW - ageH * HOUR).toISOString(),
    status: 'ready',
    kind: 'manual',
    machine: { backend: 'dir', files: 1, bytes: 1, newBytes: 1, durationMs: 1 },
    agent: [],
    ...extra,
  };
}

const ids = (ds: Array<{ id: string }>): string[] => ds.map((d) => d.id);
const reasonOf = (plan: ReturnType<typeof planPrune>, id: string): string =>
  [...plan.delete, ...plan.keep].find((d) => d.id === id)!.reason;

describe('retention planner (planPrune)', () => {
  it('an empty list plans nothing', () => {
    assert.deepEqual(planPrune([], { now: NOW }), { delete: [], keep: [] });
  });

  it('keeps the newest N and deletes the older ones, newest first, each with a reason', () => {
    const pts = [1, 2, 3, 4, 5].map((h) => rp(`a${h}`, h * 2)); // 2h..10h old
    const plan = planPrune(pts, { keep: 3, now: NOW });
    assert.deepEqual(ids(plan.keep), ['a1', 'a2', 'a3']);
    assert.deepEqual(ids(plan.delete), ['a4', 'a5']);
    assert.match(reasonOf(plan, 'a1'), /newest/);
    assert.match(reasonOf(plan, 'a2'), /among the newest 3/);
    assert.match(reasonOf(plan, 'a5'), /older than the newest 3/);
  });

  it('orders by createdAt whatever the input order', () => {
    const plan = planPrune([rp('old', 9), rp('new', 2), rp('mid', 5)], { keep: 1, now: NOW });
    assert.deepEqual(ids(plan.keep), ['new']);
    assert.deepEqual(ids(plan.delete), ['mid', 'old']);
  });

  it('defaults: keep 20', () => {
    const pts = Array.from({ length: 25 }, (_, i) => rp(`p${i}`, 2 + i));
    const plan = planPrune(pts, { now: NOW });
    assert.equal(plan.keep.length, 20);
    assert.deepEqual(ids(plan.delete), ['p20', 'p21', 'p22', 'p23', 'p24']);
  });

  it('never deletes one younger than an hour, even with keep 0', () => {
    const plan = planPrune([rp('y1', 0.1), rp('y2', 0.9), rp('o', 1.5)], { keep: 0, keepImportant: 0, now: NOW });
    assert.deepEqual(ids(plan.keep), ['y1', 'y2']);
    assert.match(reasonOf(plan, 'y2'), /younger than 1 h/);
    assert.deepEqual(ids(plan.delete), ['o']);
  });

  it('minAgeMs is configurable; an unparsable createdAt counts as young', () => {
    const plan = planPrune([rp('n', 3), rp('a', 5), rp('b', 7), rp('bad', 9, { createdAt: '' })], {
      keep: 0,
      minAgeMs: 6 * HOUR,
      now: NOW,
    });
    assert.deepEqual(ids(plan.delete), ['b']);
    assert.match(reasonOf(plan, 'a'), /younger than 6 h/);
    assert.match(reasonOf(plan, 'bad'), /younger/);
  });

  it('never deletes the newest (current) one, even when old and keep is 0', () => {
    const plan = planPrune([rp('cur', 500), rp('older', 600)], { keep: 0, now: NOW });
    assert.deepEqual(ids(plan.keep), ['cur']);
    assert.match(reasonOf(plan, 'cur'), /current/);
    assert.deepEqual(ids(plan.delete), ['older']);
  });

  it('keeps the newest N important ones beyond keep', () => {
    const pts = [
      rp('n1', 2),
      rp('n2', 3),
      rp('i1', 4, { important: true }),
      rp('x', 5),
      rp('i2', 6, { important: true }),
      rp('i3', 7, { important: true }),
    ];
    const plan = planPrune(pts, { keep: 2, keepImportant: 2, now: NOW });
    assert.deepEqual(ids(plan.keep), ['n1', 'n2', 'i1', 'i2']);
    assert.deepEqual(ids(plan.delete), ['x', 'i3']);
    assert.match(reasonOf(plan, 'i2'), /important, among the newest 2 important/);
    assert.match(reasonOf(plan, 'i3'), /newest 2 important/);
  });

  it('an important one inside the newest N still counts toward keepImportant', () => {
    const pts = [rp('n', 2), rp('i1', 3, { important: true }), rp('i2', 4, { important: true })];
    const plan = planPrune(pts, { keep: 2, keepImportant: 1, now: NOW });
    assert.match(reasonOf(plan, 'i1'), /among the newest 2$/);
    assert.deepEqual(ids(plan.delete), ['i2']);
  });

  it('keeps both halves of a pre/post pair when one half is kept', () => {
    // post is among the newest 2, its pre is not: the pre is kept with it
    const pts = [
      rp('m', 2),
      rp('post', 3, { kind: 'post', pairOf: 'pre' }),
      rp('other', 4),
      rp('pre', 5, { kind: 'pre' }),
    ];
    const plan = planPrune(pts, { keep: 2, now: NOW });
    assert.deepEqual(ids(plan.keep), ['m', 'post', 'pre']);
    assert.match(reasonOf(plan, 'pre'), /pre\/post pair with post/);
    assert.deepEqual(ids(plan.delete), ['other']);
  });

  it('keeps the post when its pre is kept (important pre)', () => {
    const pts = [
      rp('m', 2),
      rp('post', 3, { kind: 'post', pairOf: 'pre' }),
      rp('pre', 5, { kind: 'pre', important: true }),
    ];
    const plan = planPrune(pts, { keep: 1, keepImportant: 1, now: NOW });
    assert.deepEqual(ids(plan.keep), ['m', 'post', 'pre']);
    assert.deepEqual(plan.delete, []);
  });

  it('deletes a pair together when neither half is kept', () => {
    const pts = [rp('m', 2), rp('post', 3, { kind: 'post', pairOf: 'pre' }), rp('pre', 4, { kind: 'pre' })];
    const plan = planPrune(pts, { keep: 1, now: NOW });
    assert.deepEqual(ids(plan.delete), ['post', 'pre']);
    assert.match(reasonOf(plan, 'pre'), /with its pre\/post pair post/);
  });

  it('a young post keeps its old pre', () => {
    const pts = [rp('post', 0.5, { kind: 'post', pairOf: 'pre' }), rp('pre', 30, { kind: 'pre' }), rp('lone', 40)];
    const plan = planPrune(pts, { keep: 0, now: NOW });
    assert.deepEqual(ids(plan.keep), ['post', 'pre']);
    assert.deepEqual(ids(plan.delete), ['lone']);
  });

  it('a chain (a post reused as the pre of the next command) is kept or deleted as a whole', () => {
    const chain = [
      rp('post2', 3, { kind: 'post', pairOf: 'post1' }),
      rp('post1', 4, { kind: 'post', pairOf: 'pre1' }),
      rp('pre1', 5, { kind: 'pre' }),
    ];
    const kept = planPrune([rp('m', 2), ...chain], { keep: 2, now: NOW });
    assert.deepEqual(ids(kept.keep), ['m', 'post2', 'post1', 'pre1']);
    const gone = planPrune([rp('m', 2), ...chain], { keep: 1, now: NOW });
    assert.deepEqual(ids(gone.delete), ['post2', 'post1', 'pre1']);
    // oldest side kept (important): the whole chain stays
    const imp = planPrune([rp('m', 2), ...chain.slice(0, 2), rp('pre1', 5, { kind: 'pre', important: true })], {
      keep: 1,
      now: NOW,
    });
    assert.deepEqual(imp.delete, []);
  });

  it('a post whose pre is gone is judged on its own', () => {
    const plan = planPrune([rp('m', 2), rp('post', 3, { kind: 'post', pairOf: 'gone' })], { keep: 1, now: NOW });
    assert.deepEqual(ids(plan.delete), ['post']);
  });

  it('every point lands exactly once', () => {
    const pts = Array.from({ length: 40 }, (_, i) =>
      rp(
        `p${i}`,
        0.5 + i,
        i % 5 === 0 ? { important: true } : i % 7 === 1 ? { kind: 'post', pairOf: `p${i + 1}` } : {},
      ),
    );
    const plan = planPrune(pts, { keep: 5, keepImportant: 3, now: NOW });
    const all = [...ids(plan.keep), ...ids(plan.delete)].sort();
    assert.deepEqual(all, pts.map((p) => p.id).sort());
    // pairs are never split
    for (const p of pts.filter((x) => x.pairOf)) {
      const postDel = ids(plan.delete).includes(p.id);
      assert.equal(ids(plan.delete).includes(p.pairOf!), postDel, `pair ${p.id}/${p.pairOf} split`);
    }
  });

  it('deletes a pair whose sides do not differ even inside the newest N, but not when young, newest or important', () => {
    const pts = [
      rp('m', 0.1),
      rp('post1', 3, { kind: 'post', pairOf: 'pre1' }),
      rp('pre1', 3.1, { kind: 'pre' }),
      rp('x', 4),
      rp('post2', 5, { kind: 'post', pairOf: 'pre2' }),
      rp('pre2', 5.1, { kind: 'pre', important: true }),
      rp('post3', 0.2, { kind: 'post', pairOf: 'pre3' }),
      rp('pre3', 6, { kind: 'pre' }),
    ];
    const plan = planPrune(pts, { keep: 2, keepImportant: 5, now: NOW }, new Set(['post1', 'post2', 'post3']));
    assert.deepEqual(ids(plan.delete), ['post1', 'pre1']);
    assert.match(reasonOf(plan, 'post1'), /pre\/post pair pre1 does not differ/);
    // identical pairs do not use up keep slots: m and x are the newest 2
    assert.match(reasonOf(plan, 'x'), /among the newest 2/);
    assert.match(reasonOf(plan, 'pre2'), /important/);
    assert.match(reasonOf(plan, 'post2'), /pair with pre2/);
    assert.match(reasonOf(plan, 'post3'), /younger/);
    assert.match(reasonOf(plan, 'pre3'), /pair with post3/);
  });

  it('refuses a negative or fractional keep', () => {
    assert.throws(() => planPrune([], { keep: -1 }), /keep must be a whole number/);
    assert.throws(() => planPrune([], { keepImportant: 1.5 }), /keepImportant must be a whole number/);
  });
});

describe('agentkeep restore-point prune (real bin on a real tree)', function () {
  let tmp: string;
  let agent: string;
  let state: string;
  let target: string;
  const { ak, json } = cliRunner(() => state);
  /** Make a restore point look `ageH` hours old by editing its journal entry. */
  const age = (id: string, ageH: number): Promise<void> => ageRestorePoint(state, id, ageH);

  before(async function () {
    this.timeout(120000);
    await buildSidecar();
  });

  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-prune-'));
    agent = path.join(tmp, 'agent');
    state = path.join(tmp, 'state');
    await fs.mkdir(path.join(agent, 'workspace'), { recursive: true });
    target = `dir:${agent}`;
  });

  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('create --important marks it; prune --dry-run changes nothing; prune deletes with reasons and frees bytes', async function () {
    this.timeout(60000);
    const made: string[] = [];
    for (let i = 0; i < 4; i++) {
      // each restore point holds one unique 64 KB file, so deleting one frees its bytes
      await fs.writeFile(path.join(agent, 'workspace', `f${i}.bin`), Buffer.alloc(65536, i + 1));
      const rec = await json(
        'restore-point',
        'create',
        '--target',
        target,
        '--label',
        `rp ${i}`,
        ...(i === 0 ? ['--important'] : []),
      );
      made.push(rec.id);
      await fs.rm(path.join(agent, 'workspace', `f${i}.bin`));
    }
    const [imp, old1, old2, cur] = made;
    const list0 = await json('restore-point', 'list', '--target', target);
    assert.equal(list0.length, 4, 'auto-prune after create deleted nothing young');
    assert.equal(list0.find((r: RestorePoint) => r.id === imp).important, true);
    assert.equal(list0.find((r: RestorePoint) => r.id === old1).important, undefined);
    await age(imp, 50);
    await age(old1, 40);
    await age(old2, 30);

    const dry = await json(
      'restore-point',
      'prune',
      '--target',
      target,
      '--dry-run',
      '--keep',
      '1',
      '--keep-important',
      '1',
    );
    assert.equal(dry.dryRun, true);
    assert.deepEqual(ids(dry.deleted), [old2, old1]);
    assert.deepEqual(ids(dry.kept), [cur, imp]);
    assert.equal(dry.freedBytes, 0);
    assert.equal((await json('restore-point', 'list', '--target', target)).length, 4, 'dry run deleted nothing');

    const human = await ak(
      'restore-point',
      'prune',
      '--target',
      target,
      '--dry-run',
      '--keep',
      '1',
      '--keep-important',
      '1',
    );
    assert.equal(human.code, 0, human.stderr);
    assert.match(
      human.stdout,
      /Dry run: 2 restore point\(s\) would be deleted \(freeing about [^)]+\), 2 kept; nothing was changed\./,
    );
    assert.match(human.stdout, new RegExp(`would delete\\s+${old1}\\s+older than the newest 1`));
    assert.match(human.stdout, new RegExp(`kept\\s+${imp}\\s+important`));
    assert.match(human.stdout, new RegExp(`kept\\s+${cur}\\s+newest`));

    const listHuman = await ak('restore-point', 'list', '--target', target);
    assert.match(listHuman.stdout, /ID\s+AGE\s+STATUS\s+KIND\s+SIZE\s+LABEL/);
    assert.match(listHuman.stdout, new RegExp(`${imp}\\s+2d ago\\s+ready\\s+manual, important\\s+64 KiB`));

    const real = await ak('restore-point', 'prune', '--target', target, '--keep', '1', '--keep-important', '1');
    assert.equal(real.code, 0, real.stderr);
    // their contents (2 x 64 KiB) and their root trees (format 2: a few hundred bytes)
    assert.match(real.stdout, /Deleted 2 restore point\(s\), kept 2; freed 12[89] KiB\./);
    assert.match(real.stdout, new RegExp(`deleted\\s+${old2}\\s+older than`));
    const after = await json('restore-point', 'list', '--target', target);
    assert.deepEqual(ids(after), [cur, imp]);
    const again = await json('restore-point', 'prune', '--target', target, '--keep', '1', '--keep-important', '1');
    assert.deepEqual(again.deleted, []);
    assert.equal(again.freedBytes, 0);
    // the kept ones still restore
    const rs = await json('restore-point', 'restore', imp, '--target', target, '--scope', 'machine', '--yes');
    assert.equal(rs.restored.id, imp);
    assert.deepEqual(await fs.readFile(path.join(agent, 'workspace', 'f0.bin')), Buffer.alloc(65536, 1));
  });

  it('create applies retention with the defaults: old ones beyond 20 are pruned, young ones never', async function () {
    this.timeout(120000);
    const made: string[] = [];
    for (let i = 0; i < 21; i++) made.push((await json('restore-point', 'create', '--target', target)).id);
    assert.equal((await json('restore-point', 'list', '--target', target)).length, 21, 'all young: none pruned');
    for (let i = 0; i < 21; i++) await age(made[i], 100 - i);
    const next = await json('restore-point', 'create', '--target', target);
    const list = await json('restore-point', 'list', '--target', target);
    assert.equal(list.length, 20);
    assert.equal(list[0].id, next.id);
    assert.ok(!ids(list).includes(made[0]) && !ids(list).includes(made[1]), 'the two oldest were pruned');
  });

  it('prune deletes a pre/post pair whose sides do not differ (backend compare), keeps one that does', async function () {
    this.timeout(60000);
    const core = new Core({ stateDir: state });
    await fs.writeFile(path.join(agent, 'workspace', 'a.txt'), 'one\n');
    const preSame = await core.createRestorePoint({ target, kind: 'pre', label: 'before echo' });
    const postSame = await core.createRestorePoint({ target, kind: 'post', pairOf: preSame.id, label: 'after echo' });
    const preDiff = await core.createRestorePoint({ target, kind: 'pre', label: 'before install' });
    await fs.writeFile(path.join(agent, 'workspace', 'a.txt'), 'two\n');
    const postDiff = await core.createRestorePoint({
      target,
      kind: 'post',
      pairOf: preDiff.id,
      label: 'after install',
    });
    const cur = await core.createRestorePoint({ target, label: 'now' });
    assert.equal((await core.listRestorePoints({ target })).length, 5, 'all young: the auto-prune kept everything');
    for (const [id, h] of [
      [preSame.id, 10],
      [postSame.id, 9],
      [preDiff.id, 8],
      [postDiff.id, 7],
    ] as const)
      await age(id, h);
    const dry = await json('restore-point', 'prune', '--target', target, '--dry-run');
    assert.deepEqual(ids(dry.deleted), [postSame.id, preSame.id]);
    assert.match(dry.deleted[0].reason, /does not differ/);
    assert.deepEqual(ids(dry.kept), [cur.id, postDiff.id, preDiff.id]);
    const viaWire = (await dispatch(new Core({ stateDir: state }), 'agentkeep/restorePoint.prune', {
      target,
      dryRun: true,
    })) as { deleted: Array<{ id: string }> };
    assert.deepEqual(ids(viaWire.deleted), [postSame.id, preSame.id]);
    await assert.rejects(
      dispatch(core, 'agentkeep/restorePoint.prune', { target, keep: -1 }),
      (e: unknown) => e instanceof AgentKeepError && e.kind === 'InvalidParams' && /params\.keep/.test(e.message),
    );
    const r = await new Core({ stateDir: state }).pruneRestorePoints({ target });
    assert.deepEqual(ids(r.deleted), [postSame.id, preSame.id]);
    assert.deepEqual(ids(await core.listRestorePoints({ target })), [cur.id, postDiff.id, preDiff.id]);
  });

  it('prune refuses a bad --keep (usage error, exit 2)', async () => {
    const r = await ak('restore-point', 'prune', '--target', target, '--keep', 'many');
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /--keep must be a whole number >= 0, got "many"/);
  });
});
