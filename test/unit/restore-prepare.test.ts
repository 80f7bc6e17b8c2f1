/**
 * The restore's reading half (MachineBackend.prepareRestore, issue 14): what differs and the check
 * that every object to write exists run before anything is written, so an error there says nothing
 * was changed (also without an undo point), leaves no "restore in progress" marker, and the comparison
 * with the undo point runs while that undo point is still being made durable.
 */
import * as assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import nodeFs from 'node:fs';
import * as path from 'node:path';
import { Core } from '../../sidecar/core/core';
import { AgentKeepError } from '../../sidecar/core/errors';
import { DirBackend } from '../../sidecar/machine/dir';
import { closeJournals } from '../../sidecar/machine/dir/journal';
import { forgetManifest } from '../../sidecar/machine/dir/manifest';
import { describeTree, put, tempSetup } from './dir-fixtures';
import { fixText } from './helpers/errors';
import { looseObjects } from './helpers/loose';

describe('restore: everything read and checked before anything is written', function () {
  this.timeout(60000);
  let s: ReturnType<typeof tempSetup>;
  beforeEach(() => {
    s = tempSetup('ak-prepare-');
    for (let i = 0; i < 30; i++) put(s.tree, `d${i % 3}/f${i}.txt`, `content ${i}\n`);
  });
  afterEach(() => {
    closeJournals();
    s.cleanup();
  });
  const journalDir = (): string => path.join(s.state, 'journal', fs.readdirSync(path.join(s.state, 'journal'))[0]);
  const sha = (t: string): string => createHash('sha256').update(t).digest('hex');

  describe('(object files of their own)', () => {
    looseObjects();
    it('without an undo point, a missing object says nothing was changed (no "finish the restore", no marker)', async () => {
      const core = new Core({ stateDir: s.state });
      const rp = await core.createRestorePoint({ target: s.target, stores: [] });
      put(s.tree, 'd1/f1.txt', 'changed\n');
      fs.rmSync(path.join(s.tree, 'd2/f2.txt'));
      const obj = path.join(s.state, 'objects', sha('content 2\n').slice(0, 2), sha('content 2\n'));
      fs.chmodSync(obj, 0o600);
      fs.rmSync(obj);
      const before = describeTree(s.tree);
      const points = (await core.listRestorePoints({ target: s.target })).length;
      await assert.rejects(
        core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'machine', noUndoPoint: true, confirmed: true }),
        (e: AgentKeepError) => {
          assert.equal(e.kind, 'CorruptSnapshot');
          assert.match(e.message, /missing/);
          assert.match(e.message, /did not start/);
          assert.match(e.message, /Nothing in the target was changed/);
          assert.doesNotMatch(`${e.message} ${fixText(e, s.state)}`, /finish the restore/i);
          assert.ok(!e.actions?.some((a) => a.title === 'Finish the restore'), JSON.stringify(e.actions));
          return true;
        },
      );
      assert.deepEqual(describeTree(s.tree), before);
      assert.ok(!fs.existsSync(path.join(journalDir(), '.restoring.json')), 'no "restore in progress" marker');
      assert.equal((await core.listRestorePoints({ target: s.target })).length, points);
    });

    it('with an undo point, a missing object names the undo point, says nothing was changed and leaves no marker', async () => {
      const core = new Core({ stateDir: s.state });
      const rp = await core.createRestorePoint({ target: s.target, stores: [] });
      put(s.tree, 'd1/f1.txt', 'changed\n');
      fs.rmSync(path.join(s.tree, 'd2/f2.txt'));
      const obj = path.join(s.state, 'objects', sha('content 2\n').slice(0, 2), sha('content 2\n'));
      fs.chmodSync(obj, 0o600);
      fs.rmSync(obj);
      const before = describeTree(s.tree);
      await assert.rejects(
        core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'machine' }),
        (e: AgentKeepError) => {
          assert.equal(e.kind, 'CorruptSnapshot');
          assert.match(e.message, /missing/);
          assert.match(e.message, /Nothing in the target was changed \(the undo point ak_\d{8}_\d{6}_[0-9a-f]{4}/);
          assert.match(fixText(e, s.state), /restore-point restore ak_/);
          return true;
        },
      );
      assert.deepEqual(describeTree(s.tree), before);
      assert.ok(!fs.existsSync(path.join(journalDir(), '.restoring.json')), 'no "restore in progress" marker');
    });
  });

  it("the restored entry's status change is fsynced while the tree is written and renamed in after it", async () => {
    const core = new Core({ stateDir: s.state });
    const rp = await core.createRestorePoint({ target: s.target, stores: [] });
    put(s.tree, 'd1/f1.txt', 'changed\n');
    const atFsync: string[] = [];
    const orig = nodeFs.fsync;
    nodeFs.fsync = ((fd: number, cb: (e: NodeJS.ErrnoException | null) => void) => {
      atFsync.push(fs.readFileSync(path.join(s.tree, 'd1/f1.txt'), 'utf8'));
      return orig(fd, cb);
    }) as typeof nodeFs.fsync;
    try {
      await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'machine' });
    } finally {
      nodeFs.fsync = orig;
    }
    assert.equal(fs.readFileSync(path.join(s.tree, 'd1/f1.txt'), 'utf8'), 'content 1\n');
    assert.ok(atFsync.length >= 2, String(atFsync.length));
    assert.equal(atFsync[atFsync.length - 1], 'changed\n', 'the last fsync (the status entry) ran before the writes');
    const entry = JSON.parse(fs.readFileSync(path.join(journalDir(), `${rp.id}.json`), 'utf8')) as { status: string };
    assert.equal(entry.status, 'rolled-back');
    assert.deepEqual(
      fs.readdirSync(journalDir()).filter((n) => n.startsWith('.ak-tmp')),
      [],
    );
  });

  it('reads each packed object and tree it needs once (the check before the writes; the writes take those bytes)', async () => {
    const core = new Core({ stateDir: s.state });
    const rp = await core.createRestorePoint({ target: s.target, stores: [] });
    const original = describeTree(s.tree);
    for (let i = 0; i < 6; i++) put(s.tree, `d${i % 3}/f${i}.txt`, `changed ${i}\n`);
    fs.rmSync(path.join(s.tree, 'd2/f8.txt'));
    forgetManifest(path.join(s.state, 'dir', fs.readdirSync(path.join(s.state, 'dir'))[0], `${rp.id}.json`));
    const reads = new Map<string, number>();
    const orig = nodeFs.readSync;
    nodeFs.readSync = ((fd: number, buf: NodeJS.ArrayBufferView, ...rest: unknown[]) => {
      const file = fs.readlinkSync(`/proc/self/fd/${fd}`);
      if (file.endsWith('.pack') && rest.length === 3) {
        const k = `${path.basename(file)}@${String(rest[3 - 1])}`;
        reads.set(k, (reads.get(k) ?? 0) + 1);
      }
      return (orig as (...x: unknown[]) => number)(fd, buf, ...rest);
    }) as typeof nodeFs.readSync;
    try {
      await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'machine' });
    } finally {
      nodeFs.readSync = orig;
    }
    assert.deepEqual(describeTree(s.tree), original);
    assert.ok(reads.size >= 7, `the trees and the 7 contents were read from the pack (${reads.size})`);
    assert.deepEqual(
      [...reads].filter(([, n]) => n > 1),
      [],
      'no object read twice',
    );
  });

  describe('(object files of their own, a failure part-way)', () => {
    looseObjects();
    it('a restore that fails while writing leaves the entry as it was and no temp file of its status change', async () => {
      const core = new Core({ stateDir: s.state });
      const rp = await core.createRestorePoint({ target: s.target, stores: [] });
      put(s.tree, 'd1/f1.txt', 'changed\n');
      // an object replaced by a directory: it exists (the check passes), copying it out fails
      const obj = path.join(s.state, 'objects', sha('content 1\n').slice(0, 2), sha('content 1\n'));
      fs.chmodSync(obj, 0o600);
      fs.rmSync(obj);
      fs.mkdirSync(obj);
      await assert.rejects(core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'machine' }), /stopped/);
      const entry = JSON.parse(fs.readFileSync(path.join(journalDir(), `${rp.id}.json`), 'utf8')) as { status: string };
      assert.equal(entry.status, 'ready');
      assert.deepEqual(
        fs.readdirSync(journalDir()).filter((n) => n.startsWith('.ak-tmp')),
        [],
      );
    });
  });

  it('compares against the undo point while the undo point is being made durable (long-running sidecar), and restores byte for byte', async () => {
    const core = new Core({ stateDir: s.state, changeJournal: true });
    await new Promise((r) => setTimeout(r, 150));
    const rp = await core.createRestorePoint({ target: s.target, stores: [] });
    const original = describeTree(s.tree);
    await new Promise((r) => setTimeout(r, 120)); // past the racy window
    put(s.tree, 'd1/f1.txt', 'changed\n');
    put(s.tree, 'd0/new.txt', 'new\n');
    fs.rmSync(path.join(s.tree, 'd2'), { recursive: true });
    const changed = describeTree(s.tree);
    const seen: Array<{ currentId?: string; entryThere: boolean }> = [];
    const proto = DirBackend.prototype as unknown as {
      prepareRestore: (id: string, o: { currentId?: string }) => Promise<unknown>;
    };
    const orig = proto.prepareRestore;
    proto.prepareRestore = function (this: unknown, id: string, o: { currentId?: string }) {
      const entry = o.currentId ? path.join(journalDir(), `${o.currentId}.json`) : '';
      seen.push({ currentId: o.currentId, entryThere: !!entry && fs.existsSync(entry) });
      return orig.call(this, id, o);
    };
    let r;
    try {
      r = await core.restoreRestorePoint({ target: s.target, id: rp.id, scope: 'machine' });
    } finally {
      proto.prepareRestore = orig;
    }
    assert.deepEqual(describeTree(s.tree), original);
    assert.ok(r.undo);
    assert.deepEqual(seen, [{ currentId: r.undo.id, entryThere: false }], 'compared before the undo point was listed');
    assert.deepEqual(
      r.changes.removed.sort(),
      ['d2', ...Array.from({ length: 10 }, (_, k) => `d2/f${3 * k + 2}.txt`)].sort(),
    );
    assert.deepEqual(r.changes.added, ['d0/new.txt']);
    assert.deepEqual(r.changes.changed, ['d1/f1.txt']);
    // the undo point holds the state before the restore
    await core.restoreRestorePoint({ target: s.target, id: r.undo.id, scope: 'machine' });
    assert.deepEqual(describeTree(s.tree), changed);
  });
});
