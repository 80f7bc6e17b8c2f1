/**
 * Restore-point lifecycle through the real CLI binary and the core on real trees: kinds
 * (config-edit, update, hook), configurable retention (--keep, --keep-important, --min-age and
 * <stateDir>/config.json, params of restorePoint.create), disk use (restore-point usage, size-cap
 * warning of create), and the dry-run estimate of what a prune frees.
 */
import * as assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { RestorePoint } from '../../sidecar/protocol';
import { Core } from '../../sidecar/core/core';
import { AgentKeepError } from '../../sidecar/core/errors';
import { parseDuration } from '../../sidecar/core/retention';
import { capLevel, readStateConfig } from '../../sidecar/core/stateConfig';
import { ageRestorePoint, buildSidecar, cliRunner } from './helpers/sidecar';
import { bytesOfAll, bytesOnlyInAll } from './helpers/manifests';
import { readdirSync } from 'node:fs';

const HOUR = 3_600_000;
const KB64 = 65536;

describe('restore-point lifecycle (real bin, real trees)', function () {
  this.timeout(60000);
  let tmp: string;
  let agent: string;
  let state: string;
  /** The dir manifest file of restore point `id` (the state dir holds one target). */
  const mf = (id: string): string => {
    const [key] = readdirSync(path.join(state, 'dir'));
    return path.join(state, 'dir', key, `${id}.json`);
  };
  let target: string;
  const { ak, json } = cliRunner(() => state);
  /** Make a restore point look `ageH` hours old by editing its journal entry. */
  const age = (id: string, ageH: number): Promise<void> => ageRestorePoint(state, id, ageH);
  /** A restore point holding one unique 64 KiB file (removed from the tree afterwards). */
  const withUnique = async (i: number, ...args: string[]): Promise<RestorePoint> => {
    const f = path.join(agent, 'workspace', `u${i}.bin`);
    await fs.writeFile(f, Buffer.alloc(KB64, i + 1));
    const rec = (await json('restore-point', 'create', '--target', target, ...args)) as RestorePoint;
    await fs.rm(f);
    return rec;
  };
  const writeConfig = (v: unknown): Promise<void> =>
    fs.mkdir(state, { recursive: true }).then(() => fs.writeFile(path.join(state, 'config.json'), JSON.stringify(v)));

  before(async function () {
    this.timeout(120000);
    await buildSidecar();
  });
  beforeEach(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'ak-life-'));
    agent = path.join(tmp, 'agent');
    state = path.join(tmp, 'state');
    await fs.mkdir(path.join(agent, 'workspace'), { recursive: true });
    await fs.writeFile(path.join(agent, 'workspace', 'shared.txt'), 'in every restore point\n');
    target = `dir:${agent}`;
  });
  afterEach(async () => {
    await fs.rm(tmp, { recursive: true, force: true });
  });

  it('parses durations and refuses nonsense', () => {
    assert.equal(parseDuration('1h'), HOUR);
    assert.equal(parseDuration('30m'), 30 * 60_000);
    assert.equal(parseDuration('90s'), 90_000);
    assert.equal(parseDuration('2d'), 2 * 24 * HOUR);
    assert.equal(parseDuration('1h30m'), 90 * 60_000);
    assert.equal(parseDuration('500ms'), 500);
    assert.equal(parseDuration('0'), 0);
    for (const bad of ['', 'h', '1x', '-1h', '1.5h', '1h junk'])
      assert.throws(() => parseDuration(bad), /not a duration/, bad);
    assert.deepEqual([capLevel(89, 100), capLevel(91, 100), capLevel(101, 100)], ['ok', 'near', 'over']);
  });

  it('create --kind config-edit|update|hook records the kind; retention treats them like manual; a bad kind is a usage error', async () => {
    const kinds = ['config-edit', 'update', 'hook'] as const;
    const made: RestorePoint[] = [];
    for (const k of kinds) made.push(await json('restore-point', 'create', '--target', target, '--kind', k));
    assert.deepEqual(
      made.map((r) => r.kind),
      [...kinds],
    );
    const human = await ak('restore-point', 'list', '--target', target);
    assert.match(human.stdout, /config-edit/);
    for (const r of made.slice(0, 2)) await age(r.id, 5);
    const pr = await json('restore-point', 'prune', '--target', target, '--keep', '1');
    assert.deepEqual(
      pr.deleted.map((d: { id: string }) => d.id).sort(),
      [made[0].id, made[1].id].sort(),
      'old config-edit and update pruned like manual ones',
    );
    const bad = await ak('restore-point', 'create', '--target', target, '--kind', 'pre-restore');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--kind.*pre-restore.*Allowed choices are manual, config-edit, update, hook/);
  });

  it('prune --min-age: 0 lets young restore points go, 30m keeps them; a bad duration is a usage error', async () => {
    const a = await withUnique(0);
    await withUnique(1);
    await withUnique(2);
    await age(a.id, 0.25); // 15 minutes
    let r = await json('restore-point', 'prune', '--target', target, '--keep', '1', '--min-age', '30m', '--dry-run');
    assert.deepEqual(r.deleted, [], 'all younger than 30 minutes');
    assert.match(r.kept.map((k: { reason: string }) => k.reason).join('|'), /younger than 30 min/);
    r = await json('restore-point', 'prune', '--target', target, '--keep', '1', '--min-age', '10m', '--dry-run');
    assert.deepEqual(
      r.deleted.map((d: { id: string }) => d.id),
      [a.id],
      'the 15-minute-old one goes with --min-age 10m',
    );
    r = await json('restore-point', 'prune', '--target', target, '--keep', '1', '--min-age', '0');
    assert.equal(r.deleted.length, 2, 'min-age 0: only the newest stays');
    assert.equal((await json('restore-point', 'list', '--target', target)).length, 1);
    const bad = await ak('restore-point', 'prune', '--target', target, '--min-age', 'soon');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--min-age: "soon" is not a duration: use e\.g\. 1h/);
  });

  it('prune --dry-run estimates the bytes it frees; the real prune frees that much', async () => {
    const made: RestorePoint[] = [];
    for (let i = 0; i < 4; i++) made.push(await withUnique(i));
    for (let i = 0; i < 3; i++) await age(made[i].id, 10 - i);
    const dry = await json('restore-point', 'prune', '--target', target, '--keep', '2', '--dry-run');
    assert.equal(dry.deleted.length, 2);
    // two unique 64 KiB files and the trees only those two name (manifest format 2); shared.txt is
    // still used by the kept ones
    const only = bytesOnlyInAll(state, [mf(made[0].id), mf(made[1].id)], [mf(made[2].id), mf(made[3].id)]);
    assert.ok(only >= 2 * KB64 && only < 2 * KB64 + 4096, `${only}`);
    assert.equal(dry.estimatedFreeBytes, only, 'two unique 64 KiB files and their trees');
    const human = await ak('restore-point', 'prune', '--target', target, '--keep', '2', '--dry-run');
    assert.match(human.stdout, /would be deleted \(freeing about 12[89] KiB\), \d+ kept; nothing was changed\./);
    const real = await json('restore-point', 'prune', '--target', target, '--keep', '2');
    assert.equal(real.freedBytes, dry.estimatedFreeBytes);
  });

  it('<stateDir>/config.json retention applies after each create and to prune; explicit flags win; bad config is named', async () => {
    await writeConfig({ retention: { keep: 2, minAgeMs: 0 } });
    for (let i = 0; i < 3; i++) await withUnique(i);
    // the create says what its retention run deleted (JSON `pruned`, human lines)
    const f = path.join(agent, 'workspace', 'u3.bin');
    await fs.writeFile(f, Buffer.alloc(KB64, 4));
    const said = await ak('restore-point', 'create', '--target', target);
    await fs.rm(f);
    assert.match(said.stdout, /Retention deleted 1 older restore point\(s\)[^\n]*\n {2}ak_\w+ {2}\S/);
    assert.equal(
      (await json('restore-point', 'list', '--target', target)).length,
      2,
      'create pruned down to keep 2 with minAgeMs 0',
    );
    await writeConfig({ retention: { keep: 1, minAgeMs: 0 } });
    const pj = await json('restore-point', 'create', '--target', target);
    assert.equal(pj.pruned.length, 2);
    assert.ok(pj.pruned.every((d: { id: string; reason: string }) => /^ak_/.test(d.id) && d.reason.length > 0));
    await writeConfig({ retention: { keep: 2, minAgeMs: 0 } });
    await withUnique(9);
    const r = await json('restore-point', 'prune', '--target', target, '--keep', '3', '--dry-run');
    assert.deepEqual(r.deleted, [], '--keep 3 overrides keep 2');
    // the create params (the extension's agentkeep.retention.*) win over the file too
    const core = new Core({ stateDir: state });
    await core.createRestorePoint({ target, retention: { keep: 1 } });
    assert.equal((await core.listRestorePoints({ target })).length, 1);

    await writeConfig({ retention: { keep: -1 } });
    await assert.rejects(
      readStateConfig(state),
      (e: unknown) =>
        e instanceof AgentKeepError &&
        e.kind === 'BadStateDir' &&
        /config\.json: retention\.keep/.test(e.message) &&
        /"retention"/.test(e.hint ?? ''),
    );
    await writeConfig({ retension: {} });
    const bad = await ak('restore-point', 'prune', '--target', target);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /config\.json: .*retension|Unrecognized key.*retension/);
    await fs.writeFile(path.join(state, 'config.json'), '{ nope');
    assert.match((await ak('restore-point', 'prune', '--target', target)).stderr, /config\.json is not valid JSON/);
    // ...but it never stops a restore point: create warns and uses the defaults
    const c = await ak('restore-point', 'create', '--target', target);
    assert.equal(c.code, 0, c.stderr);
    assert.match(
      c.stderr,
      /^agentkeep: warning: .*config\.json is not valid JSON.*retention and the size cap used their defaults/,
    );
  });

  it('usage counts each object once per target; create warns on stderr above 90% of the size cap', async () => {
    const a = await withUnique(0);
    const b = await withUnique(1);
    const u = await json('restore-point', 'usage', '--target', target);
    const shared = Buffer.byteLength('in every restore point\n');
    // (issue 13: the manifests and journal count too: they are part of what the state dir holds)
    assert.ok(u.metaBytes > 0 && u.stateDirBytes >= u.bytes, JSON.stringify(u));
    const objects = bytesOfAll(state, [mf(a.id), mf(b.id)]);
    assert.ok(objects >= 2 * KB64 + shared && objects < 2 * KB64 + shared + 4096, `${objects}`);
    assert.equal(
      u.bytes,
      objects + u.metaBytes,
      'two unique files + the shared file once + their trees + manifests and journal',
    );
    assert.equal(u.capBytes, 10 * 1024 ** 3);
    assert.equal(u.level, 'ok');
    assert.deepEqual(
      u.points.map((p: { id: string }) => p.id),
      [b.id, a.id],
    );
    assert.equal(u.points[1].bytes, KB64 + shared);
    // "only it": a's unique file is held by a alone; the shared file counts for nobody (the first
    // restore point stored it, but deleting it frees nothing)
    // (and the trees only it names: manifest format 2)
    assert.deepEqual(
      u.points.map((p: { newBytes: number }) => p.newBytes),
      [bytesOnlyInAll(state, [mf(b.id)], [mf(a.id)]), bytesOnlyInAll(state, [mf(a.id)], [mf(b.id)])],
    );
    assert.ok(u.points.every((p: { newBytes: number }) => p.newBytes >= KB64 && p.newBytes < KB64 + 2048));
    const both = await json('restore-point', 'create', '--target', target);
    const u2 = await json('restore-point', 'usage', '--target', target);
    // it holds only shared.txt, which a and b hold too, and its own trees (format 2: a few hundred bytes)
    const ownTrees = bytesOnlyInAll(state, [mf(both.id)], [mf(a.id), mf(b.id)]);
    assert.ok(ownTrees < 2048, `${ownTrees}`);
    assert.equal(u2.points.find((p: { id: string }) => p.id === both.id).newBytes, ownTrees);
    const del = await json('restore-point', 'delete', both.id, '--target', target, '--yes');
    assert.equal(del.freedBytes, ownTrees, 'the column said what deleting it frees, and it frees that');
    const human = await ak('restore-point', 'usage', '--target', target);
    assert.match(
      human.stdout,
      /use 1\d\d(\.\d)? KiB \([\d.]+ (KiB|bytes) of it manifests and journal\) of the 10 GiB cap \(0%\)\. The state dir holds [\d.]+ KiB in all/,
    );

    await writeConfig({ sizeCapBytes: 140_000 });
    const c = await ak('restore-point', 'create', '--target', target, '--json');
    assert.equal(c.code, 0, c.stderr);
    assert.match(
      c.stderr,
      /warning: The restore points of dir:.* use 1\d\d(\.\d)? KiB, \d+% of the 137 KiB size cap\. .*Free space with: agentkeep restore-point prune/,
    );
    assert.equal(JSON.parse(c.stdout).warnings.length, 1);
    assert.equal((await json('restore-point', 'usage', '--target', target)).level, 'near');
    await writeConfig({ sizeCapBytes: 100_000 });
    assert.match((await ak('restore-point', 'create', '--target', target)).stderr, /\(over the cap\)/);
    assert.equal((await json('restore-point', 'usage', '--target', target)).level, 'over');
    await writeConfig({ sizeCapBytes: 10_000_000 });
    assert.equal((await ak('restore-point', 'create', '--target', target)).stderr, '', 'no warning below 90%');
  });
});
